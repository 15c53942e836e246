"""``--storage journal:PATH``: the claim, the study lock and heartbeats on an Optuna journal file,
then the same exactly-once and kill -9 tests as SQLite and PostgreSQL (tests/e2e/test_sweep.py,
tests/e2e/test_faults.py).

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/ledger/test_journal.py.
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import multiprocessing.synchronize
import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from ablate.sweeps.ledger.journal import HeartbeatJournalStorage
from ablate.sweeps.ledger.storage import open_storage, study_lock
from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.forked import run_forked
from tests.helpers.paths import ablate_cmd

FORK = multiprocessing.get_context("fork")


def journal_trials(path: Path) -> dict[str, list[FrozenTrial]]:
    """The trials of study "tiny" in the journal ``path``, grouped by cell."""
    study = optuna.load_study(study_name="tiny", storage=open_storage(f"journal:{path}"))
    out: dict[str, list[FrozenTrial]] = collections.defaultdict(list)
    for t in study.get_trials():
        out[t.user_attrs.get("cell", "?")].append(t)
    return out


def _claim_all(path: str, out: str, start: multiprocessing.synchronize.Barrier) -> None:
    """Claim every WAITING trial this process can (WAITING -> RUNNING); write the ids it won."""
    storage = open_storage(f"journal:{path}")
    study_id = storage.get_study_id_from_name("race")
    start.wait()  # all at once, over the same list of trials
    won = []
    for t in storage.get_all_trials(study_id, states=(TrialState.WAITING,)):
        try:
            if storage.set_trial_state_values(t._trial_id, state=TrialState.RUNNING):
                won.append(t._trial_id)
        except optuna.exceptions.UpdateFinishedTrialError:
            pass
        # Yield between claims: on a loaded machine one process could otherwise take all 120
        # before the others are scheduled, and no race would be tested.
        time.sleep(0.005)
    Path(out).write_text(json.dumps(won))


def _hold_lock(path: str, marker: str, times: int) -> None:
    storage = open_storage(f"journal:{path}")
    for _ in range(times):
        with study_lock(storage, "tiny"):
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if another holder is inside
            time.sleep(0.01)
            os.close(fd)
            os.unlink(marker)


@pytest.mark.multiprocess
def test_claim_is_atomic_across_processes(tmp_path: Path) -> None:
    """4 processes race for 120 waiting trials: each is won by exactly one (the file order decides)."""
    path = tmp_path / "race.log"
    study = optuna.create_study(study_name="race", storage=open_storage(f"journal:{path}", create=True))
    for i in range(120):
        study.enqueue_trial({"x": i}, skip_if_exists=False)
    start = FORK.Barrier(4)
    procs = [
        FORK.Process(target=_claim_all, args=(str(path), str(tmp_path / f"won{i}"), start)) for i in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    won = [json.loads((tmp_path / f"won{i}").read_text()) for i in range(4)]
    every = [t for w in won for t in w]
    assert sorted(every) == sorted(t._trial_id for t in study.get_trials())  # each once, none lost
    assert sum(bool(w) for w in won) >= 2, "no race happened"


@pytest.mark.multiprocess
def test_study_lock_excludes_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "lock.log"
    open_storage(f"journal:{path}", create=True)
    marker = str(tmp_path / "inside")
    procs = [FORK.Process(target=_hold_lock, args=(str(path), marker, 5)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    storage = open_storage(f"journal:{path}")
    assert [s.study_name for s in storage.get_all_studies()] == []  # every lock was released


@pytest.mark.multiprocess
def test_three_sweeps_two_workers_each_on_one_journal(tmp_path: Path) -> None:
    """3 `ablate sweep` processes x 2 workers on one journal file, 24 cells: each exactly once;
    then `ablate report` and the dashboard's storage open the same journal."""
    variants = {f"v{i}": {"optim.lr": 0.01 + 0.001 * i} for i in range(5)}
    base = {**TINY_BASE, "trainer": {"max_steps": 1, "log_every": 1}}
    write_spec(tmp_path, base=base, variants={"baseline": {}, **variants}, seeds=4, heatmap_seeds=[0])
    journal = tmp_path / "shared" / "study.log"
    journal.parent.mkdir()
    cmd = [*ablate_cmd("sweep", "tiny.yaml"), "--no-wandb", "--workers", "2", "--heartbeat", "1"]
    cmd += ["--grace", "5", "--storage", "journal:shared/study.log"]  # relative to the current folder
    procs = [
        subprocess.Popen([*cmd, "--runs", f"machine{i}"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        for i in range(3)
    ]
    errs = [p.communicate(timeout=900)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e[e.find("Traceback") :][:3000] for e in errs]
    by_cell = journal_trials(journal)
    counts = {c: sum(t.state == TrialState.COMPLETE for t in ts) for c, ts in by_cell.items()}
    assert len(counts) == 24 and set(counts.values()) == {1}, counts
    for i in range(3):
        summary = json.loads((tmp_path / f"machine{i}" / "tiny" / "summary.json").read_text())
        assert summary["cells"]["complete"] == 24
    ran = run_forked(["report", "machine0/tiny", "--storage", f"journal:{journal}"], tmp_path)
    assert ran.returncode == 0, ran.stderr
    from ablate.sweeps.integrations.dashboard import open_run_storage

    name, storage = open_run_storage(tmp_path / "machine1" / "tiny", f"journal:{journal}")
    assert name == "tiny" and isinstance(storage, HeartbeatJournalStorage)


@pytest.mark.multiprocess
def test_kill_workers_then_resume_on_journal(tmp_path: Path) -> None:
    """kill -9 the workers mid-cell: finished cells are kept, the killed cell reruns once."""
    base = {**TINY_BASE, "trainer": {"max_steps": 200, "log_every": 50}}
    write_spec(tmp_path, base=base, seeds=2, heatmap_seeds=[0])
    journal, run_dir = tmp_path / "study.log", tmp_path / "runs" / "tiny"
    out = str(tmp_path / "runs")  # absolute: the workers' command lines name it, pgrep finds them
    cmd = ablate_cmd("sweep", "tiny.yaml", "--runs", out, "--no-wandb", "--heartbeat", "1", "--grace", "3")
    cmd += ["--storage", f"journal:{journal}"]
    driver = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, killed_cell = time.time() + 240, None
    while time.time() < deadline and killed_cell is None:
        time.sleep(0.5)
        if not (run_dir / "spec.json").exists():
            continue
        cells = journal_trials(journal)
        done = [c for c, ts in cells.items() if any(t.state == TrialState.COMPLETE for t in ts)]
        running = [c for c, ts in cells.items() if any(t.state == TrialState.RUNNING for t in ts)]
        if running and 1 <= len(done) <= 2:
            pids = subprocess.run(
                ["pgrep", "-f", f"ablate.sweeps.drivers.worker --run-dir {run_dir}"],
                capture_output=True,
                text=True,
            ).stdout.split()
            for pid in pids:
                os.kill(int(pid), signal.SIGKILL)
            killed_cell = running[0]
    assert killed_cell is not None, "no cell was running in time"
    driver.communicate(timeout=60)
    before = journal_trials(journal)
    finished_before = {
        c: next(t.number for t in ts if t.state == TrialState.COMPLETE)
        for c, ts in before.items()
        if any(t.state == TrialState.COMPLETE for t in ts)
    }
    assert killed_cell not in finished_before

    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    after = journal_trials(journal)
    for cell, number in finished_before.items():  # kept, never rerun
        assert [t.number for t in after[cell] if t.state == TrialState.COMPLETE] == [number]
        assert len(after[cell]) == len(before[cell])
    killed = after[killed_cell]
    assert [t.state for t in killed].count(TrialState.COMPLETE) == 1
    assert [t.state for t in killed].count(TrialState.FAIL) == 1  # failed by its stopped heartbeat
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cells"]["complete"] == summary["cells"]["total"] == 4
