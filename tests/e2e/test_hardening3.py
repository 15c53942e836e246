"""Hardening, third round, with real processes: a changed data file stops a study from resuming,
a cell that failed for good runs again with --retry-failed once its cause is gone, and a sweep
starts no more workers than it has cells. (The database password: tests/e2e/test_secrets.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.sweeps import run_sweep

ROWS = "".join(f"w{i} film number {i},{i % 2}\n" for i in range(60))


def test_a_changed_data_file_stops_the_study_and_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("sentence,label\n" + ROWS)
    base = {
        **TINY_BASE,
        "data": {"task": "text", "source": "data.csv", "max_len": 8, "batch_size": 16, "val_fraction": 0.2},
    }
    write_spec(tmp_path, base=base, seeds=1, heatmap_seeds=[0])
    first = run_sweep(tmp_path, "--no-wandb")
    assert first.returncode == 0, first.stdout + first.stderr
    spec = json.loads((tmp_path / "runs" / "tiny" / "spec.json").read_text())
    assert list(spec["data_sources"]) == [str(tmp_path / "data.csv")]
    (tmp_path / "data.csv").write_text("sentence,label\n" + ROWS.replace("film", "movie"))
    write_spec(tmp_path, base=base, seeds=2, heatmap_seeds=[0])  # more seeds: the same study, grown
    again = run_sweep(tmp_path, "--no-wandb")
    assert again.returncode == 2, again.stdout + again.stderr
    message = " ".join(again.stderr.split())
    assert f"data_sources.{tmp_path / 'data.csv'}" in message and "was run with a different" in message
    summary = json.loads((tmp_path / "runs" / "tiny" / "summary.json").read_text())
    assert summary["cells"]["total"] == 2  # nothing trained on the new data joined the study


FLAKY = """
from pathlib import Path
from torch import nn
from ablate import components

@components.register("norm", "flaky")
class Flaky(nn.LayerNorm):
    def __init__(self, cfg):
        if Path(__file__).with_name("broken").exists():
            raise OSError("the shared disk is read-only")
        super().__init__(cfg.d_model)
"""


def test_a_cell_that_failed_for_good_runs_again_with_retry_failed(tmp_path: Path) -> None:
    """A transient cause (here: a marker file the variant's plugin refuses to build with) fails the
    variant's cell twice, which makes it failed for good; after the cause is gone the same command
    still exits 1 (it does not retry by itself), and --retry-failed runs it."""
    (tmp_path / "flaky.py").write_text(FLAKY)
    variants = {"baseline": {}, "flaky": {"model.norm_layer": "flaky"}}
    write_spec(tmp_path, variants=variants, seeds=1, heatmap_seeds=[0], plugins=["flaky.py"])
    (tmp_path / "broken").write_text("")
    failed = run_sweep(tmp_path, "--no-wandb")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    out = " ".join((failed.stdout + failed.stderr).split())
    assert "1 cell(s) failed for good; fix the cause, then rerun the same command with --retry-failed" in out
    (tmp_path / "broken").unlink()
    still = run_sweep(tmp_path, "--no-wandb")
    assert still.returncode == 1 and "1/2 cells complete" in still.stdout + still.stderr
    retried = run_sweep(tmp_path, "--no-wandb", "--retry-failed")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "retrying 1 cell(s) that had failed for good: flaky/s0" in retried.stdout + retried.stderr
    assert "2/2 cells complete" in retried.stdout + retried.stderr


def test_no_more_workers_than_cells(tmp_path: Path) -> None:
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    swept = run_sweep(tmp_path, "--no-wandb", "--workers", "50")
    assert swept.returncode == 0, swept.stdout + swept.stderr
    logs = sorted(p.name for p in (tmp_path / "runs" / "tiny" / "logs").iterdir())
    assert logs == ["worker-0.log", "worker-1.log"]  # 2 cells: 2 workers, not 50
