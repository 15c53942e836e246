"""``--launcher local|slurm`` and ``--slurm``: the options are checked before anything is
written, and the submitit path runs a sweep end to end (``--launcher local``).

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/drivers/test_launcher.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from optuna.trial import TrialState

from ablate.sweeps.ledger.storage import open_storage
from tests.e2e.test_journal import journal_trials
from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.paths import ablate_cmd


@pytest.mark.multiprocess
def test_local_launcher_runs_a_sweep_then_resumes(tmp_path: Path) -> None:
    """Two submitit jobs on a journal: every cell once and a report; the same command again
    submits jobs that find nothing to do and keeps every trial."""
    write_spec(
        tmp_path, base={**TINY_BASE, "trainer": {"max_steps": 2, "log_every": 1}}, seeds=2, heatmap_seeds=[0]
    )
    cmd = ablate_cmd("sweep", "tiny.yaml", "--runs", "runs", "--no-wandb", "--workers", "2")
    cmd += ["--heartbeat", "1", "--grace", "3", "--launcher", "local", "--storage", "journal:study.log"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "submitted 2 local job(s)" in proc.stderr
    by_cell = journal_trials(tmp_path / "study.log")
    counts = {c: sum(t.state == TrialState.COMPLETE for t in ts) for c, ts in by_cell.items()}
    assert counts == {f"{v}/s{s}": 1 for v in ("baseline", "no_pe") for s in range(2)}
    summary = json.loads((tmp_path / "runs" / "tiny" / "summary.json").read_text())
    assert summary["cells"]["complete"] == 4
    logs = list((tmp_path / "runs" / "tiny" / "jobs").glob("*_log.err"))
    assert len(logs) == 2 and any("cells " in p.read_text() for p in logs)  # the workers ran in the jobs

    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sum(len(ts) for ts in journal_trials(tmp_path / "study.log").values()) == 4


@pytest.mark.multiprocess
def test_local_launcher_runs_a_search_and_its_tuned_grid(tmp_path: Path) -> None:
    """``ablate search --launcher local --then-evaluate``: the search's workers and the tuned
    grid's both run as submitit jobs, on one journal; every trial budget is met exactly."""
    from tests.e2e.test_search import trials_of
    from tests.unit.sweeps.drivers.test_search import RAW

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({**RAW, "search": {**RAW["search"], "trials": 3}}))
    cmd = ablate_cmd(
        "search", "tiny.yaml", "--runs", "runs", "--no-wandb", "--workers", "2", "--then-evaluate"
    )
    cmd += ["--heartbeat", "1", "--grace", "3", "--launcher", "local", "--storage", "journal:study.log"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("submitted 2 local job(s)") == 2  # the search, then the tuned grid
    storage = open_storage(f"journal:{tmp_path / 'study.log'}")
    for variant in RAW["variants"]:
        trials = trials_of(storage, variant)
        assert len(trials) == 3 and all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
    assert list((tmp_path / "runs" / "tiny-search" / "jobs").glob("*_log.err"))
    summary = json.loads((tmp_path / "runs" / "tiny-tuned" / "summary.json").read_text())
    assert summary["cells"]["complete"] == 4
