"""The cross-task table: IQM of baseline-normalized scores and P(improve) averaged over tasks,
with a bootstrap stratified by task.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/stats/test_aggregate.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.configs import write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.sweeps import run_sweep


@pytest.mark.multiprocess
def test_aggregate_command(tmp_path: Path) -> None:
    for name in ("t1", "t2"):
        write_spec(tmp_path, name=name, seeds=2)
        assert run_sweep(tmp_path, "--no-wandb").returncode == 0
    runs = [str(tmp_path / "runs" / n) for n in ("t1", "t2")]
    proc = subprocess.run(
        ablate_cmd("aggregate", *runs, "--out", str(tmp_path / "agg")), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    agg = json.loads((tmp_path / "agg.json").read_text())
    assert agg["tasks"] == ["t1", "t2"] and agg["variants"]["no_pe"]["runs"] == 4
    assert "| no_pe | 4 |" in (tmp_path / "agg.md").read_text()
    one = subprocess.run(ablate_cmd("aggregate", runs[0]), capture_output=True, text=True)
    assert one.returncode == 2 and "at least two run folders" in one.stderr
    twice = subprocess.run(ablate_cmd("aggregate", runs[0], runs[0]), capture_output=True, text=True)
    assert twice.returncode == 2 and "a second run folder of experiment 't1'" in twice.stderr
