"""``ablate reproduce``: the main job's glue, on a preset of two tiny experiments (each sweep,
then the table across tasks), and its refusal before anything runs.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/drivers/test_reproduce.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate import cli
from tests.unit.sweeps.drivers.test_reproduce import tiny_preset, use_experiments


@pytest.mark.multiprocess
def test_reproduce_sweeps_each_experiment_then_writes_the_table_across_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_experiments(monkeypatch, tiny_preset(tmp_path))
    out = tmp_path / "runs"
    args = ["reproduce", "tiny", "--profile", "cpu", "--workers", "2", "--no-wandb", "--runs", str(out)]
    assert cli.main(args) == 0
    for name in ("tiny-a", "tiny-b"):
        summary = json.loads((out / name / "summary.json").read_text())
        assert summary["cells"]["complete"] == summary["cells"]["total"] == 4
        assert list(summary["variants"]) == ["baseline", "no_pe"]
    aggregate = json.loads((out / "tiny-aggregate.json").read_text())
    assert sorted(aggregate["tasks"]) == ["tiny-a", "tiny-b"]
    assert "no_pe" in (out / "tiny-aggregate.md").read_text()
