"""Scale-out and fault tolerance: many workers on PostgreSQL and SQLite, Ctrl-C,
NaN runs, unwritable outputs. Each test runs real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.postgres import pg_bin, postgres_server
from tests.helpers.sweeps import trials_by_cell

# Each test runs real `ablate` processes.
pytestmark = pytest.mark.multiprocess


def sweep_cmd(tmp_path: Path, out: Path, *args: str) -> list[str]:
    return ablate_cmd(
        "sweep",
        str(tmp_path / "tiny.yaml"),
        "--runs",
        str(out),
        "--no-wandb",
        "--heartbeat",
        "1",
        "--grace",
        "3",
        *args,
    )


def complete_counts(study: optuna.Study) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in study.get_trials():
        if t.state == TrialState.COMPLETE:
            counts[t.user_attrs["cell"]] = counts.get(t.user_attrs["cell"], 0) + 1
    return counts


@pytest.mark.server
@pytest.mark.skipif(
    pg_bin("pg_ctl") is None, reason="PostgreSQL is not installed (apt-get install postgresql)"
)
def test_postgres_three_machines_every_cell_once(tmp_path: Path) -> None:
    """Three `ablate sweep --storage postgresql://...` processes (as on three machines),
    12 cells: every cell finishes exactly once and every driver reports it complete."""
    variants = {"baseline": {}, "no_pe": {"model.pe": "none"}, "single_head": {"model.n_heads": 1}}
    write_spec(tmp_path, variants=variants, seeds=4, heatmap_seeds=[0])
    with postgres_server(tmp_path / "pg") as url:
        procs = [
            subprocess.Popen(
                sweep_cmd(tmp_path, tmp_path / f"machine{i}", "--storage", url),
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(3)
        ]
        outs = [p.communicate(timeout=600) for p in procs]
        failed = [o[1][-3000:] for p, o in zip(procs, outs, strict=True) if p.returncode]
        assert not failed, failed
        study = optuna.load_study(study_name="tiny", storage=url)
        counts = complete_counts(study)
        assert len(counts) == 12 and set(counts.values()) == {1}
        ran_by = {
            t.user_attrs["cell"]: t.number for t in study.get_trials() if t.state == TrialState.COMPLETE
        }
        assert len(ran_by) == 12
    for i in range(3):
        summary = json.loads((tmp_path / f"machine{i}" / "tiny" / "summary.json").read_text())
        assert summary["cells"]["complete"] == 12


def test_two_sweeps_on_one_sqlite_study(tmp_path: Path) -> None:
    """The same command started twice at once on one run folder: no lost or duplicated cells."""
    write_spec(tmp_path, seeds=3, heatmap_seeds=[0])
    out = tmp_path / "runs"
    procs = [
        subprocess.Popen(
            sweep_cmd(tmp_path, out), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    by_cell = trials_by_cell(out / "tiny")
    counts = {c: sum(t.state == TrialState.COMPLETE for t in ts) for c, ts in by_cell.items()}
    assert counts == {f"{v}/s{s}": 1 for v in ("baseline", "no_pe") for s in range(3)}


def test_sigint_stops_cleanly_then_resumes(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) mid-sweep: exit 130, no
    trial left RUNNING, finished cells kept; the same command then completes the grid."""
    write_spec(
        tmp_path,
        base={**TINY_BASE, "trainer": {"max_steps": 400, "log_every": 50}},
        seeds=2,
        heatmap_seeds=[0],
    )
    out = tmp_path / "runs"
    driver = subprocess.Popen(
        sweep_cmd(tmp_path, out),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # As in a terminal: a shell without job control (nohup, `cmd &`, some CI runners) starts
        # background jobs with SIGINT ignored, and Python then never raises KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 240
    while time.time() < deadline:
        time.sleep(0.5)
        if (out / "tiny" / "spec.json").exists():  # written once the study exists
            states = [t.state for ts in trials_by_cell(out / "tiny").values() for t in ts]
            # At most half done: the signal lands mid-sweep even if a cell ends while we look.
            if TrialState.RUNNING in states and 1 <= states.count(TrialState.COMPLETE) <= 2:
                break
    else:
        driver.kill()
        pytest.fail("the sweep was never caught half done")
    os.killpg(driver.pid, signal.SIGINT)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 130, err[-2000:]
    assert "run the same command again to resume" in err
    before = trials_by_cell(out / "tiny")
    states = [t.state for ts in before.values() for t in ts]
    assert TrialState.RUNNING not in states and TrialState.COMPLETE in states
    interrupted = [t for ts in before.values() for t in ts if t.user_attrs.get("interrupted")]
    assert interrupted and all(t.state == TrialState.FAIL for t in interrupted)
    kept = {c: t.number for c, ts in before.items() for t in ts if t.state == TrialState.COMPLETE}

    proc = subprocess.run(sweep_cmd(tmp_path, out), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    after = trials_by_cell(out / "tiny")
    for cell, number in kept.items():
        assert [t.number for t in after[cell] if t.state == TrialState.COMPLETE] == [number]
    assert all(sum(t.state == TrialState.COMPLETE for t in ts) == 1 for ts in after.values())
    assert json.loads((out / "tiny" / "summary.json").read_text())["cells"]["complete"] == 4


def wait_until_a_cell_runs(driver: subprocess.Popen, out: Path) -> None:
    """Until a cell of ``out``'s study "tiny" is RUNNING (at most 240 s; else the driver is killed)."""
    deadline = time.time() + 240
    while time.time() < deadline:
        time.sleep(0.5)
        if (out / "tiny" / "spec.json").exists() and any(
            t.state == TrialState.RUNNING for ts in trials_by_cell(out / "tiny").values() for t in ts
        ):
            return
    driver.kill()
    pytest.fail("no cell was ever running")


def test_sigterm_to_a_worker_marks_its_cell_interrupted(tmp_path: Path) -> None:
    """SIGTERM (SLURM's scancel and time limit) to a worker mid-cell: the worker marks its cell
    FAIL "interrupted" at once and exits, so the next run takes the cell without waiting for its
    heartbeats to expire (--grace 600 here: only the handler can have failed it)."""
    write_spec(tmp_path, base={**TINY_BASE, "trainer": {"max_steps": 400, "log_every": 50}}, seeds=2)
    out = tmp_path / "runs"
    driver = subprocess.Popen(
        sweep_cmd(tmp_path, out, "--workers", "1", "--grace", "600"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until_a_cell_runs(driver, out)
    workers = Path(f"/proc/{driver.pid}/task/{driver.pid}/children").read_text().split()
    assert len(workers) == 1, workers
    os.kill(int(workers[0]), signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 1, err[-2000:]  # not every cell finished
    trials = [t for ts in trials_by_cell(out / "tiny").values() for t in ts]
    assert TrialState.RUNNING not in [t.state for t in trials]
    interrupted = [t for t in trials if t.user_attrs.get("interrupted")]
    assert len(interrupted) == 1 and interrupted[0].state == TrialState.FAIL


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a non-interactive shell's `cmd &` starts it


def test_sigterm_to_the_driver_stops_its_workers_even_with_sigint_ignored(tmp_path: Path) -> None:
    """`kill DRIVER` (or a CI timeout) on a sweep started in the background of a script, where
    SIGINT is ignored from the start: the driver stops its workers as on Ctrl-C, and they hear it,
    instead of the driver dying alone and its workers training on."""
    write_spec(tmp_path, base={**TINY_BASE, "trainer": {"max_steps": 400, "log_every": 50}}, seeds=2)
    out = tmp_path / "runs"
    driver = subprocess.Popen(
        sweep_cmd(tmp_path, out, "--workers", "1", "--grace", "600"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint,
    )
    wait_until_a_cell_runs(driver, out)
    workers = Path(f"/proc/{driver.pid}/task/{driver.pid}/children").read_text().split()
    driver.send_signal(signal.SIGTERM)
    out_text, err = driver.communicate(timeout=120)
    assert driver.returncode != 0 and "interrupted: finished work is stored" in out_text + err, err[-2000:]
    assert workers and not [w for w in workers if Path(f"/proc/{w}").exists()]  # none left training
    trials = [t for ts in trials_by_cell(out / "tiny").values() for t in ts]
    assert TrialState.RUNNING not in [t.state for t in trials]
    assert [t.state for t in trials if t.user_attrs.get("interrupted")] == [TrialState.FAIL]


def test_nan_run_is_recorded_as_diverged(tmp_path: Path) -> None:
    """A variant whose loss becomes non-finite is recorded as diverged, the sweep goes on,
    and the report counts it."""
    # Adam's eps underflows to 0 in float32: the padding row of the embedding, whose gradient is
    # always exactly 0, becomes 0/0 = NaN at the first step, and padded batches carry it into the loss.
    variants = {"baseline": {}, "explode": {"optim.eps": 1.0e-300}}
    data = {**TINY_BASE["data"], "min_len": 4}
    write_spec(
        tmp_path,
        variants=variants,
        seeds=2,
        heatmap_seeds=[0],
        base={**TINY_BASE, "data": data, "trainer": {"max_steps": 20, "log_every": 1}},
    )
    out = tmp_path / "runs"
    proc = subprocess.run(sweep_cmd(tmp_path, out), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "tiny" / "summary.json").read_text())
    assert summary["cells"]["complete"] == 4
    assert summary["variants"]["explode"]["n_diverged"] == 2 and summary["variants"]["explode"]["n"] == 2
    assert summary["variants"]["baseline"]["n_diverged"] == 0
    rows = (out / "tiny" / "results.csv").read_text().splitlines()
    assert sum(",explode," in r or r.startswith("explode,") for r in rows) == 2
    trials = [t for ts in trials_by_cell(out / "tiny").values() for t in ts if t.state == TrialState.COMPLETE]
    exploded = [t for t in trials if t.params["variant"] == "explode"]
    assert all(t.user_attrs["diverged"] and t.user_attrs["steps"] < 20 for t in exploded)


@pytest.mark.parametrize("out", ["/proc/ablate-cannot-write/run", "{file}/run"])
def test_unwritable_output_is_a_clear_error(tmp_path: Path, tiny_config: Path, out: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    target = out.format(file=blocker)
    proc = subprocess.run(
        ablate_cmd("train", str(tiny_config), "--out", target), capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert "cannot create output folder" in proc.stderr and target.rsplit("/", 1)[0] in proc.stderr
