"""``--launcher local|slurm`` and ``--slurm``: the options are checked before anything is
written, and the submitit path runs a sweep end to end (``--launcher local``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.sweeps.ledger.storage import open_storage
from ablate.sweeps.run.launcher import check_launcher, parse_slurm
from tests.conftest import TINY_BASE, ablate_cmd, write_spec
from tests.test_bad_inputs import run_forked
from tests.test_journal import journal_trials


def test_parse_slurm_takes_submitit_keys() -> None:
    parsed = parse_slurm("partition=gpu,gpus_per_node=1,timeout_min=120,array_parallelism=8")
    assert parsed == {"partition": "gpu", "gpus_per_node": 1, "timeout_min": 120, "array_parallelism": 8}


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (
            ["--launcher", "slurm", "--slurm", "partiton=gpu"],
            ["unknown key 'partiton'", "partition", "timeout_min"],
        ),
        (["--launcher", "slurm", "--slurm", "gpu"], ["'gpu' is not KEY=VALUE", "valid keys"]),
        (["--launcher", "slurm", "--slurm", "setup=x"], ["unknown key 'setup'"]),
        (["--launcher", "local", "--slurm", "partition=gpu"], ["--slurm is for --launcher slurm"]),
        (["--launcher", "slurm"], ["the run folder", "/tmp", "shared file system"]),
        (["--launcher", "local", "--storage", "sqlite:///:memory:"], ["in-memory", "cannot share"]),
        (["--launcher", "cluster"], ["invalid choice", "slurm"]),
    ],
    ids=[
        "unknown-key",
        "not-key-value",
        "list-key",
        "slurm-without-slurm",
        "node-local",
        "memory",
        "bad-launcher",
    ],
)
def test_bad_launcher_options_exit_2(tmp_path: Path, args: list[str], expect: list[str]) -> None:
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    ran = run_forked(["sweep", "tiny.yaml", "--out", "out", "--no-wandb", *args], tmp_path)
    message = " ".join(ran.stderr.split())
    assert ran.returncode == 2, ran.stderr
    assert all(part in message for part in expect), message
    assert not (tmp_path / "out").exists()


def test_slurm_needs_a_shared_storage_and_sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = Path("/work/shared-looking")  # not under a node-local folder
    with pytest.raises(ConfigError, match="--storage file /tmp/s.log is under /tmp"):
        check_launcher("slurm", None, shared / "run", Path("/tmp/s.log"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no srun
    with pytest.raises(ConfigError, match="no sbatch/srun here"):
        check_launcher("slurm", "partition=gpu", shared / "run", shared / "s.log")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_local_launcher_runs_a_sweep_then_resumes(tmp_path: Path) -> None:
    """Two submitit jobs on a journal: every cell once and a report; the same command again
    submits jobs that find nothing to do and keeps every trial."""
    write_spec(
        tmp_path, base={**TINY_BASE, "trainer": {"max_steps": 2, "log_every": 1}}, seeds=2, heatmap_seeds=[0]
    )
    cmd = ablate_cmd("sweep", "tiny.yaml", "--out", "runs", "--no-wandb", "--workers", "2")
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


@pytest.mark.slow
@pytest.mark.multiprocess
def test_local_launcher_runs_a_search_and_its_tuned_grid(tmp_path: Path) -> None:
    """``ablate search --launcher local --then-evaluate``: the search's workers and the tuned
    grid's both run as submitit jobs, on one journal; every trial budget is met exactly."""
    from tests.test_search import RAW, trials_of

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({**RAW, "search": {**RAW["search"], "trials": 3}}))
    cmd = ablate_cmd(
        "search", "tiny.yaml", "--out", "runs", "--no-wandb", "--workers", "2", "--then-evaluate"
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
