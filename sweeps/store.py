"""Cells of an ablation grid on Optuna storage, run exactly once by any number of workers.

Each (variant, seed) cell is an Optuna trial. Cells are enqueued as WAITING
trials under a study-wide lock (so concurrent starters cannot enqueue a cell
twice) and claimed with Optuna's compare-and-set WAITING -> RUNNING. On
SQLite every transaction is ``BEGIN IMMEDIATE``: without it pysqlite reads
the WAITING state outside the write transaction and two processes can both
claim one trial. A worker records heartbeats while it runs a cell; a cell
whose worker died goes stale, is failed by ``fail_stale_trials`` and is
enqueued again. Finished cells are never rerun. On a journal file
(``journal:PATH``) the same holds by the file's order; see sweeps/journal.py.

A claim costs O(1) storage calls, not O(cells): a worker keeps the list of waiting trials it
last read, in its own random order (so that workers rarely race for one trial), and reads it
again only when it is used up or ``LOST_BEFORE_REREAD`` claims in a row found their trial taken;
the full scan that fails stale cells and enqueues missing ones runs only when nothing is
waiting, or every ``UPKEEP_EVERY_S``. A cached trial another worker took meanwhile only loses
the compare-and-set (benchmarks/ledger.py measures this). Reads matter on SQLite, where every
transaction, a read too, holds the write lock.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import optuna
from optuna.exceptions import DuplicatedStudyError, ExperimentalWarning
from optuna.storages import BaseStorage, RDBStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError

from ablate.errors import ConfigError
from ablate.experiments.spec import ExperimentSpec
from ablate.sweeps.identity import changed_keys, refuse_changes
from ablate.sweeps.journal import HeartbeatJournalStorage, is_journal, journal_path, journal_url, open_journal
from ablate.sweeps.study_file import prepare_study_file, shown

# Heartbeats and fail_stale_trials are marked experimental but are the documented way.
warnings.filterwarnings("ignore", category=ExperimentalWarning)

# A cell that failed with an error this many times is not retried again
# (a deterministic bug would otherwise loop forever); killed workers do not count.
MAX_ERRORS = 2
LOCK_TTL_S = 60.0
# Lost compare-and-sets in a row after which a worker's list of waiting trials is read again,
# and how often a busy worker scans the whole grid for stale and missing cells (an idle one
# scans at every claim).
LOST_BEFORE_REREAD = 3
UPKEEP_EVERY_S = 30.0
T = TypeVar("T")


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def retry_db(what: str, fn: Callable[[], T], attempts: int = 5) -> T:
    """Run ``fn``, retrying transient database errors.

    Processes that open a fresh database at once race on its schema (PostgreSQL:
    ``duplicate key ... pg_type``; SQLite: the alembic version row) and on the study
    row; a moment later the loser finds everything in place.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except (SQLAlchemyError, OSError) as err:
            if attempt == attempts - 1:
                raise ConfigError(f"{what}: {err}") from None
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


def open_storage(
    url: str, *, create: bool = False, heartbeat_interval: int = 10, grace_period: int = 30
) -> BaseStorage:
    """An RDB storage with heartbeats (SQLite gets serialized write transactions), or a journal
    file with the same heartbeats (``journal:PATH``, sweeps/journal.py).

    The URL and its driver are checked first; a SQLite study file or a journal must be a valid
    Optuna study, and is created (complete, see sweeps/study_file.py) only when ``create``.
    """
    if is_journal(url):
        return open_journal(
            journal_path(url), create=create, heartbeat_interval=heartbeat_interval, grace_period=grace_period
        )
    prepare_study_file(url, create=create)
    is_sqlite = url.startswith("sqlite")
    kwargs = (
        {"connect_args": {"timeout": 120, "isolation_level": None}} if is_sqlite else {"pool_pre_ping": True}
    )
    storage = retry_db(
        f"cannot open study storage {shown(url)}",
        lambda: RDBStorage(
            url, engine_kwargs=kwargs, heartbeat_interval=heartbeat_interval, grace_period=grace_period
        ),
    )
    if is_sqlite:
        event.listen(storage.engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    return storage


def open_store(
    spec: ExperimentSpec,
    url: str,
    *,
    create: bool = False,
    heartbeat_interval: int = 10,
    grace_period: int = 30,
) -> CellStore:
    """The experiment's cell store on ``url``; its study is created if needed (safe to race), and
    with ``create`` also a missing SQLite study file."""
    storage = open_storage(
        url, create=create, heartbeat_interval=heartbeat_interval, grace_period=grace_period
    )
    return retry_db(f"cannot open study {spec.name!r} in {shown(url)}", lambda: CellStore(spec, storage))


@contextlib.contextmanager
def study_lock(storage: BaseStorage, name: str, ttl: float = LOCK_TTL_S) -> Iterator[None]:
    """A mutex from the unique study names (RDB: a unique constraint; journal: the first
    CREATE_STUDY line in the file wins); expired locks are broken."""
    lock_name = f"{name}::lock"
    first_seen: dict[int, float] = {}
    while True:
        try:
            lock_id = storage.create_new_study([StudyDirection.MINIMIZE], lock_name)
            storage.set_study_user_attr(lock_id, "expires", time.time() + ttl)
            break
        except DuplicatedStudyError:
            with contextlib.suppress(KeyError):
                held = storage.get_study_id_from_name(lock_name)
                expires = storage.get_study_user_attrs(held).get("expires")
                first_seen.setdefault(held, time.time())
                if (expires or first_seen[held] + ttl) < time.time():
                    storage.delete_study(held)  # its holder died; by id, so a new lock is safe
                    continue
            time.sleep(0.1 + random.random() * 0.2)
    try:
        yield
    finally:
        with contextlib.suppress(KeyError):
            storage.delete_study(lock_id)


def storage_where(storage: BaseStorage) -> str:
    """The storage as the user named it, without a password."""
    if isinstance(storage, HeartbeatJournalStorage):
        return journal_url(storage.path)
    assert isinstance(storage, RDBStorage)
    return storage.engine.url.render_as_string(hide_password=True)


def cell_key(variant: str, seed: int) -> str:
    return f"{variant}/s{seed}"


@dataclass
class CellState:
    key: str
    variant: str
    seed: int
    state: str  # complete | running | waiting | failed | missing
    trial: FrozenTrial | None
    attempts: int
    errors: list[str]


class CellStore:
    """The grid of one experiment in one Optuna study."""

    def __init__(self, spec: ExperimentSpec, storage: BaseStorage) -> None:
        self.spec = spec
        self.storage = storage
        self._waiting: list[tuple[int, str | None]] = []  # (trial id, variant), in random order
        self._order = random.Random()  # each worker its own order
        self._upkeep_at = -math.inf
        self.study = optuna.create_study(
            study_name=spec.name,
            storage=storage,
            direction=spec.direction,
            sampler=optuna.samplers.RandomSampler(seed=0),
            load_if_exists=True,
        )
        attrs = self.study.user_attrs
        identity = spec.identity()
        if "identity" not in attrs:
            # "spec" first: drivers that start together race here, and one that finds
            # "identity" reads "spec" next.
            self.study.set_user_attr("spec", spec.to_dict())
            self.study.set_user_attr("identity", identity)
            return
        # Named key by key; the direction is not in the identity hash, but a study's direction is fixed.
        changes = changed_keys(attrs["spec"], spec.to_dict())
        if attrs["identity"] != identity or changes:
            where = storage_where(storage)
            refuse_changes(spec.name, where, changes, f"identity {attrs['identity']} != {identity}")
        # Seeds may grow between runs; remember the widest list.
        seeds = sorted(set(attrs["spec"]["seeds"]) | set(spec.seeds))
        if seeds != sorted(attrs["spec"]["seeds"]):
            self.study.set_user_attr("spec", {**spec.to_dict(), "seeds": seeds})

    def states(self) -> dict[str, CellState]:
        trials = self.study.get_trials(deepcopy=False)
        by_cell: dict[str, list[FrozenTrial]] = {}
        for t in trials:
            if "cell" in t.user_attrs:
                by_cell.setdefault(t.user_attrs["cell"], []).append(t)
        out = {}
        for variant, seed in self.spec.cells():
            key = cell_key(variant, seed)
            ts = by_cell.get(key, [])
            state, chosen = "missing", None
            for wanted, name in (
                (TrialState.COMPLETE, "complete"),
                (TrialState.RUNNING, "running"),
                (TrialState.WAITING, "waiting"),
                (TrialState.FAIL, "failed"),
            ):
                found = [t for t in ts if t.state == wanted]
                if found:
                    state, chosen = name, min(found, key=lambda t: t.number)
                    break
            errors = [
                t.user_attrs["error"] for t in ts if t.state == TrialState.FAIL and "error" in t.user_attrs
            ]
            attempts = sum(t.state != TrialState.WAITING for t in ts)
            out[key] = CellState(key, variant, seed, state, chosen, attempts, errors)
        return out

    def ensure_cells(self) -> int:
        """Enqueue every cell that has no live or finished trial; return how many were added."""
        self._upkeep_at = time.monotonic()
        optuna.storages.fail_stale_trials(self.study)
        if all(c.state in ("complete", "running", "waiting") for c in self.states().values()):
            return 0  # fast path without the lock
        added = 0
        with study_lock(self.storage, self.spec.name):
            for cell in self.states().values():
                if cell.state in ("missing", "failed") and len(cell.errors) < MAX_ERRORS:
                    self.study.enqueue_trial(
                        {"variant": cell.variant, "seed": cell.seed},
                        user_attrs={"cell": cell.key, "variant": cell.variant, "seed": cell.seed},
                    )
                    added += 1
        return added

    def unfinished(self) -> bool:
        """Whether a cell is still running or waiting (a worker with nothing to claim waits for
        them: a running cell's worker may die and leave it to be taken over)."""
        return any(c.state in ("running", "waiting") for c in self.states().values())

    def claim(self, variant: str | None = None) -> optuna.Trial | None:
        """A waiting cell (of ``variant``, if given), claimed; None if none is waiting now.

        Stale and missing cells are enqueued first when nothing is waiting, and every
        ``UPKEEP_EVERY_S`` otherwise.
        """
        upkept = time.monotonic() - self._upkeep_at > UPKEEP_EVERY_S
        if upkept:
            self.ensure_cells()
        trial = self.pop(variant)
        if trial is None and variant is None and not upkept:
            self.ensure_cells()
            trial = self.pop()
        return trial

    def pop(self, variant: str | None = None) -> optuna.Trial | None:
        """Atomically claim one waiting cell (of ``variant``, if given) with a compare-and-set
        WAITING -> RUNNING, or None. Tries the cached waiting list, then a fresh one."""
        fresh = False
        while True:
            if fresh or not self._waiting:
                waiting = self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
                self._waiting = [(t._trial_id, t.user_attrs.get("variant")) for t in waiting]
                self._order.shuffle(self._waiting)
                fresh = True
            wanted = [e for e in self._waiting if variant is None or e[1] == variant]
            for lost, entry in enumerate(wanted, start=1):  # every try that does not return lost
                self._waiting.remove(entry)  # won or lost, it is no longer waiting
                if self._take(entry[0]):
                    return self._as_cell(entry[0])
                if lost == LOST_BEFORE_REREAD and not fresh:
                    break  # this list is old: others took much of it
            else:
                if fresh:
                    return None
            fresh = True

    def _take(self, trial_id: int) -> bool:
        """The compare-and-set; False if another worker took the trial first."""
        # Heartbeat first: Optuna never counts a RUNNING trial without one as stale, so a
        # worker killed right after its claim would otherwise hold the cell forever.
        try:
            self.storage.record_heartbeat(trial_id)
            return self.storage.set_trial_state_values(trial_id, state=TrialState.RUNNING)
        except optuna.exceptions.UpdateFinishedTrialError:
            return False

    def _as_cell(self, trial_id: int) -> optuna.Trial:
        trial = optuna.Trial(self.study, trial_id)
        # Fixed by enqueue_trial; suggesting records them as the trial's params.
        trial.suggest_categorical("variant", list(self.spec.variants))
        seeds = self.spec.all_seeds()
        trial.suggest_int("seed", min(seeds), max(seeds))
        return trial


@contextlib.contextmanager
def heartbeat(storage: BaseStorage, trial_id: int) -> Iterator[None]:
    """Record heartbeats for a claimed trial while the body runs (ask/tell has no thread of its own)."""
    stop = threading.Event()
    interval = storage.get_heartbeat_interval() or 10

    def beat() -> None:
        while True:
            with contextlib.suppress(Exception):  # a missed beat is retried at the next tick
                storage.record_heartbeat(trial_id)
            if stop.wait(interval):
                return

    storage.record_heartbeat(trial_id)
    thread = threading.Thread(target=beat, daemon=True, name=f"heartbeat-{trial_id}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
