"""The sweep worker's W&B bookkeeping (sweeps/drivers/worker.py ``run_claimed``): a cell's run is
marked complete only after its trial is told complete, Ctrl-C between the two is held until both
are done, and a cell that stops ends its run failed or interrupted, never finished.

In-process, on a real study, with a logger that records what the worker does to its run (the
offline runs of a real sweep are tests/e2e/test_wandb_count.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lightning.pytorch.loggers import Logger
from optuna.trial import TrialState

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json
from ablate.sweeps.drivers import worker
from ablate.sweeps.integrations import wandb_glue
from tests.helpers.configs import TINY_BASE

SPEC = {"name": "tiny", "base": TINY_BASE, "variants": {"baseline": {}}, "seeds": 1, "heatmap_seeds": [0]}


class FakeRun:
    """A W&B run as the worker touches it; ``events`` is shared with the test's record spy."""

    def __init__(self, events: list[tuple]) -> None:
        self.id, self.events = "run-0", events
        self.summary: dict[str, Any] = {}
        self.config = SimpleNamespace(update=lambda *a, **k: None)

    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        self.events.append(("finish", exit_code, self.summary.get(wandb_glue.CELL_STATE_KEY)))


class FakeWandbLogger(Logger):
    """A Lightning logger whose ``experiment`` is a FakeRun, opened at first use (as WandbLogger's)."""

    def __init__(self, events: list[tuple]) -> None:
        super().__init__()
        self.events = events
        self._experiment: FakeRun | None = None

    @property
    def name(self) -> str:
        return "fake"

    @property
    def version(self) -> int:
        return 0

    @property
    def experiment(self) -> FakeRun:
        if self._experiment is None:
            self._experiment = FakeRun(self.events)
        return self._experiment

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        self.experiment  # noqa: B018 (opens the run, as WandbLogger does)

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.experiment  # noqa: B018


@pytest.fixture
def handlers() -> Iterator[None]:
    """An interrupted worker ignores further Ctrl-C (it is about to exit): restore this process's."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def claimed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Path, list[tuple]]:
    """A one-cell study with its cell claimed, and the W&B events its run will see."""
    from ablate.sweeps.ledger.cells import open_store
    from ablate.sweeps.ledger.storage import sqlite_url

    spec = spec_from_dict(SPEC)
    run_dir = tmp_path / "tiny"
    run_dir.mkdir()
    write_json(run_dir / "spec.json", spec.to_dict())
    store = open_store(spec, sqlite_url(run_dir / "study.db"), create=True)
    store.ensure_cells()
    trial = store.claim()
    events: list[tuple] = []
    monkeypatch.setattr(wandb_glue, "cell_logger", lambda *a: FakeWandbLogger(events))
    return store, trial, run_dir, events


def state(store: Any, trial: Any) -> TrialState:
    return store.study._storage.get_trial(trial._trial_id).state


def test_ctrl_c_while_the_cell_commits_waits_for_its_trial_and_its_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: None
) -> None:
    """Ctrl-C lands while the trial is being told (a slow database): the trial is told complete,
    then its run ends marked complete (exit 0), and only then does the interrupt stop the worker."""
    store, trial, run_dir, events = claimed(tmp_path, monkeypatch)
    tell = worker.record

    def record_interrupted(*args: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, now, before the trial is told
        tell(*args)
        events.append(("told",))

    monkeypatch.setattr(worker, "record", record_interrupted)
    with pytest.raises(KeyboardInterrupt):
        worker.run_claimed(store, [trial], run_dir, use_wandb=True)
    assert state(store, trial) == TrialState.COMPLETE
    assert events == [("told",), ("finish", 0, "complete")]
    assert store.study.trials[0].user_attrs["wandb_id"] == "run-0"


@pytest.mark.parametrize(
    ("stop", "want"),
    [(SystemExit(1), ("finish", 130, "interrupted")), (RuntimeError("boom"), ("finish", 1, "failed"))],
    ids=["interrupted", "failed"],
)
def test_a_cell_that_stops_ends_its_run_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: None, stop: BaseException, want: tuple
) -> None:
    """Stopped mid-training (Lightning turns Ctrl-C into SystemExit(1)) or failed: the open run
    ends interrupted (exit 130) or failed (exit 1); its trial is not told complete."""
    store, trial, run_dir, events = claimed(tmp_path, monkeypatch)

    def training_stops(cfg: Any, seeds: Any, out_dirs: Any, *, loggers: list) -> None:
        loggers[0].log_metrics({"train/loss": 1.0}, 0)  # the run is open
        raise stop

    monkeypatch.setattr(worker, "run_cells", training_stops)
    with pytest.raises(type(stop)):
        worker.run_claimed(store, [trial], run_dir, use_wandb=True)
    assert events == [want]
    assert state(store, trial) == TrialState.RUNNING  # the work loop's fail_group marks it FAIL


def test_a_cell_that_stops_before_training_opens_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: None
) -> None:
    store, trial, run_dir, events = claimed(tmp_path, monkeypatch)

    def no_data(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(worker, "run_cells", no_data)
    with pytest.raises(KeyboardInterrupt):
        worker.run_claimed(store, [trial], run_dir, use_wandb=True)
    assert events == []


def test_a_worker_its_study_refuses_logs_one_line_that_the_driver_prints_and_exits_2(
    tmp_path: Path, handlers: None, caplog: pytest.LogCaptureFixture
) -> None:
    """spec.json changed since the driver opened the study (as a plugin edited meanwhile changes
    its hash): the worker says why in one log line, no traceback, and the driver's handle reads it."""
    import subprocess
    import sys

    from ablate.sweeps.drivers.launcher import STOPPED
    from ablate.sweeps.drivers.loop import ProcessHandle
    from ablate.sweeps.ledger.cells import open_store
    from ablate.sweeps.ledger.storage import sqlite_url

    run_dir = tmp_path / "tiny"
    run_dir.mkdir()
    open_store(spec_from_dict(SPEC), sqlite_url(run_dir / "study.db"), create=True)
    changed = {**SPEC, "base": {**TINY_BASE, "trainer": {**TINY_BASE["trainer"], "max_steps": 4}}}
    write_json(run_dir / "spec.json", spec_from_dict(changed).to_dict())
    assert worker.main(["--run-dir", str(run_dir), "--no-wandb"]) == 2
    (record,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert record.getMessage().startswith(f"{STOPPED}the study 'tiny' in ") and record.exc_info is None
    assert "trainer.max_steps: 3 -> 4" in record.getMessage() and "Traceback" not in caplog.text

    log = tmp_path / "worker-0.log"
    log.write_text(f"... noise\n2026-01-01 ablate.worker[1] {record.getMessage()}\n")
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"])
    proc.wait()
    assert ProcessHandle(proc, log).reason() == record.getMessage().removeprefix(STOPPED)
    assert ProcessHandle(proc, tmp_path / "none.log").reason() is None


def test_a_cell_failing_with_a_config_error_is_logged_as_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from ablate.errors import ConfigError
    from ablate.sweeps.drivers.loop import work_loop

    units = iter(["cell a/s0", None])
    failed: list[str | None] = []

    def run(unit: str) -> int:
        raise ConfigError("the norm component model.norm_layer='x' failed to build: RuntimeError: boom")

    work_loop(
        lambda: next(units), run, lambda u, e: failed.append(e), describe=str, log=logging.getLogger("t")
    )
    assert failed == [
        "ConfigError: the norm component model.norm_layer='x' failed to build: RuntimeError: boom"
    ]
    assert "cell a/s0 failed: the norm component" in caplog.text and "Traceback" not in caplog.text
