"""The per-variant lr check: ``ablate lr-check`` (its runs' names, learning
rates and refusals, without running sweeps) and the README's choice and statistics of the
per-variant lr rows (docs/_gen/tuned_rows.py) on synthetic results.csv rows.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/drivers/test_lr_check.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ablate.experiments.specs.spec_file import load_spec
from docs._gen import readme_tables as rt
from docs._gen import tuned_rows
from tests.helpers.configs import write_spec


@pytest.mark.multiprocess
def test_lr_check_runs_the_sweep_into_the_folder_the_readme_reads(tmp_path: Path) -> None:
    """End to end, one factor (a sweep is mostly process start-up): the run lands in
    runs/<name>-lr2x/, is the shared spec with the lr doubled, and gives per-variant lr rows."""
    spec_path = write_spec(tmp_path, seeds=2, heatmap_seeds=[0])
    runs = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "ablate", "lr-check", str(spec_path), "--factors", "2",
         "--runs", str(runs), "--no-wandb", "trainer.max_steps=2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "optim.lr=0.004" in proc.stderr  # 2 x the default lr 0.002
    assert sorted(p.name for p in runs.iterdir()) == ["tiny-lr2x"]
    run = rt.read_run(rt.run_paths(runs, "tiny-lr2x"), "tiny-lr2x", need_rows=True, missing=str)
    shared = load_spec(spec_path, ["trainer.max_steps=2"]).to_dict()
    assert tuned_rows.lr_run_differences(shared, run.spec, 2.0) == []
    summary = {**run.summary, "experiment": "tiny"}
    lr = tuned_rows.per_variant_lr({1.0: [], 2.0: run.rows or []}, summary, shared)
    assert lr["factors"] == {"baseline": 2.0, "no_pe": 2.0} and len(run.rows or []) == 4
