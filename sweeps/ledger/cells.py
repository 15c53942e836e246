"""Cells of an ablation grid on Optuna storage, run exactly once by any number of workers.

Each (variant, seed) cell is an Optuna trial. Cells are enqueued as WAITING
trials under a study-wide lock (so concurrent starters cannot enqueue a cell
twice) and claimed with Optuna's compare-and-set WAITING -> RUNNING. On
SQLite every transaction is ``BEGIN IMMEDIATE``: without it pysqlite reads
the WAITING state outside the write transaction and two processes can both
claim one trial. A worker records heartbeats while it runs a cell; a cell
whose worker died goes stale, is failed by ``fail_stale_trials`` and is
enqueued again. Finished cells are never rerun. On a journal file
(``journal:PATH``) the same holds by the file's order; see sweeps/ledger/journal.py.

A claim costs O(1) storage calls, not O(cells): a worker keeps the list of waiting trials it
last read, in its own random order (so that workers rarely race for one trial), and reads it
again only when it is used up or ``LOST_BEFORE_REREAD`` claims in a row found their trial taken;
the full scan that fails stale cells and enqueues missing ones runs only when nothing is
waiting, or every ``UPKEEP_EVERY_S``. A cached trial another worker took meanwhile only loses
the compare-and-set (benchmarks/ledger.py measures this). Reads matter on SQLite, where every
transaction, a read too, holds the write lock.
"""

from __future__ import annotations

import math
import random
import time
import warnings
from dataclasses import dataclass

import optuna
from optuna.exceptions import ExperimentalWarning
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.ledger.identity import changed_keys, code_hashed, plugin_fix, refuse_changes
from ablate.sweeps.ledger.secrets import shown
from ablate.sweeps.ledger.storage import open_storage, retry_db, storage_where, study_lock
from ablate.sweeps.ledger.study_views import trial_curve, trial_metrics
from ablate.sweeps.stats.rows import CellRow

# Heartbeats and fail_stale_trials are marked experimental but are the documented way.
warnings.filterwarnings("ignore", category=ExperimentalWarning)

# A cell that failed with an error this many times is not retried again
# (a deterministic bug would otherwise loop forever); killed workers do not count.
MAX_ERRORS = 2
# Lost compare-and-sets in a row after which a worker's list of waiting trials is read again,
# and how often a busy worker scans the whole grid for stale and missing cells (an idle one
# scans at every claim).
LOST_BEFORE_REREAD = 3
UPKEEP_EVERY_S = 30.0
FORGIVEN_ATTR = "forgiven_errors"  # cell -> errors that --retry-failed no longer counts


def open_store(
    spec: ExperimentSpec,
    url: str,
    *,
    create: bool = False,
    heartbeat_interval: int = 10,
    grace_period: int = 30,
    plugin_fix: bool = False,
) -> CellStore:
    """The experiment's cell store on ``url``; its study is created if needed (safe to race), and
    with ``create`` also a missing SQLite study file. ``plugin_fix``: see CellStore."""
    storage = open_storage(
        url, create=create, heartbeat_interval=heartbeat_interval, grace_period=grace_period
    )
    return retry_db(
        f"cannot open study {spec.name!r} in {shown(url)}",
        lambda: CellStore(spec, storage, plugin_fix=plugin_fix),
    )


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
    """The grid of one experiment in one Optuna study.

    With ``plugin_fix`` (the driver, on the user's command), a plugin whose code changed while no
    complete or running cell ran it is taken with its new code (identity.plugin_fix); a worker
    refuses any change, and one that opened the study before such a change stops at its next
    claim or result (``check_identity``): its code is no longer the study's."""

    def __init__(self, spec: ExperimentSpec, storage: BaseStorage, *, plugin_fix: bool = False) -> None:
        self.spec = spec
        self.storage = storage
        self._waiting: list[tuple[int, str | None]] = []  # (trial id, variant), in random order
        self._order = random.Random()  # each worker its own order
        self._upkeep_at = -math.inf
        self.notes: list[str] = []  # what opening the study changed in its record, to tell the user
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
            self.identity = identity
            return
        # Named key by key; the direction is not in the identity hash, but a study's direction is fixed.
        changes = changed_keys(attrs["spec"], spec.to_dict())
        if attrs["identity"] != identity or changes:
            # Recorded in an older form, or a plugin fixed under cells that all failed.
            upgraded = code_hashed(attrs, spec) or self._plugin_fixed(attrs, spec, changes, plugin_fix)
            for key, value in upgraded.items():  # "spec" first, as above
                self.study.set_user_attr(key, value)
        self.identity = identity  # what this process's code and spec make: check_identity
        # Seeds may grow between runs; remember the widest list.
        seeds = sorted(set(attrs["spec"]["seeds"]) | set(spec.seeds))
        if seeds != sorted(attrs["spec"]["seeds"]):
            self.study.set_user_attr("spec", {**spec.to_dict(), "seeds": seeds})

    def _plugin_fixed(self, attrs: dict, spec: ExperimentSpec, changes: list[str], allowed: bool) -> dict:
        """The study's new record when only plugin code changed and no complete or running cell ran
        it (identity.plugin_fix; ``self.notes`` say so) and that is ``allowed``; else the refusal
        naming what changed."""
        if not allowed:
            where = storage_where(self.storage)
            refuse_changes(spec.name, where, changes, f"identity {attrs['identity']} != {spec.identity()}")
        finished: dict[str, int] = {}
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING)):
            variant = t.user_attrs.get("variant")
            finished[variant] = finished.get(variant, 0) + 1
        fix = plugin_fix(attrs["spec"], spec, finished)
        if fix is None or fix[1]:
            where = storage_where(self.storage)
            blockers = fix[1] if fix else []
            refuse_changes(
                spec.name, where, changes + blockers, f"identity {attrs['identity']} != {spec.identity()}"
            )
        self.notes += fix[0]
        return {
            "spec": {**attrs["spec"], "plugin_sources": spec.plugin_sources()},
            "identity": spec.identity(),
        }

    def check_identity(self) -> None:
        """A ConfigError when the study's identity is no longer the one this store opened it with:
        a driver took a plugin's new code meanwhile (``plugin_fix``), which this process lacks."""
        found = self.study.user_attrs.get("identity")
        if found != self.identity:
            raise ConfigError(
                f"the study {self.spec.name!r} changed while this worker ran (identity {self.identity} -> "
                f"{found}: a plugin's new code, taken by ablate sweep); start the worker again to run it"
            )

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
            forgiven = self.study.user_attrs.get(FORGIVEN_ATTR, {})
            for cell in self.states().values():
                errors = len(cell.errors) - forgiven.get(cell.key, 0)
                if cell.state in ("missing", "failed") and errors < MAX_ERRORS:
                    self.study.enqueue_trial(
                        {"variant": cell.variant, "seed": cell.seed},
                        user_attrs={"cell": cell.key, "variant": cell.variant, "seed": cell.seed},
                    )
                    added += 1
        return added

    def retry_failed(self) -> list[str]:
        """Give the cells that failed for good (MAX_ERRORS errors) another MAX_ERRORS attempts, once
        the cause is fixed (``--retry-failed``); the cells forgiven. Their failed trials stay."""
        with study_lock(self.storage, self.spec.name):
            forgiven = dict(self.study.user_attrs.get(FORGIVEN_ATTR, {}))
            retried = {
                c.key: len(c.errors)
                for c in self.states().values()
                if c.state == "failed" and len(c.errors) - forgiven.get(c.key, 0) >= MAX_ERRORS
            }
            if retried:
                self.study.set_user_attr(FORGIVEN_ATTR, {**forgiven, **retried})
        return list(retried)

    def unfinished(self) -> bool:
        """Whether a cell is still running or waiting (a worker with nothing to claim waits for
        them: a running cell's worker may die and leave it to be taken over)."""
        return any(c.state in ("running", "waiting") for c in self.states().values())

    def claim(self, variant: str | None = None) -> optuna.Trial | None:
        """A waiting cell (of ``variant``, if given), claimed; None if none is waiting now.

        Stale and missing cells are enqueued first when nothing is waiting, and every
        ``UPKEEP_EVERY_S`` otherwise.
        """
        self.check_identity()
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


def collect_rows(store: CellStore) -> list[CellRow]:
    """One row per cell, in spec order: state, metrics and provenance of its canonical trial."""
    rows = []
    for cell in store.states().values():
        t = cell.trial
        attrs = t.user_attrs if t is not None and cell.state == "complete" else {}
        rows.append(
            CellRow(
                variant=cell.variant,
                seed=cell.seed,
                state=cell.state,
                diverged=attrs.get("diverged"),
                wall_s=attrs.get("wall_s"),
                n_params=attrs.get("n_params"),
                trial=t.number if t is not None else None,
                wandb_id=attrs.get("wandb_id"),
                error=cell.errors[-1] if cell.errors and cell.state != "complete" else None,
                numerics=attrs.get("numerics"),
                metrics=trial_metrics(attrs),
                curve=trial_curve(attrs),
            )
        )
    return rows
