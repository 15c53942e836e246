"""A sweep worker: claim cells from the study and run them until none is left.

Run by ``ablate sweep`` (one process per ``--workers``), or by hand on other
machines against the same ``--storage``. Each cell calls ``run_trial``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import optuna
from optuna.artifacts import FileSystemArtifactStore, upload_artifact
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.experiments.runner.cells import run_cells
from ablate.experiments.runner.phases import Phases, process_age
from ablate.experiments.schema.machine import numerics_key
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import atomic_dir, write_json
from ablate.sweeps.drivers.launcher import STOPPED
from ablate.sweeps.drivers.loop import (
    INTERRUPTS,
    deferred_interrupts,
    heartbeats,
    idle_wait,
    work_loop,
)
from ablate.sweeps.drivers.outcome import check_shared_failure, shared_failure_message
from ablate.sweeps.integrations import wandb_glue
from ablate.sweeps.ledger.cells import CellStore, open_store
from ablate.sweeps.ledger.run_folder import read_run_spec
from ablate.sweeps.ledger.secrets import STORAGE_ENV
from ablate.sweeps.ledger.storage import default_storage
from ablate.sweeps.ledger.study_views import (
    CONFIG_ARTIFACT,
    name_objective,
    open_artifacts,
    result_attrs,
    set_attrs,
    upload_config,
)
from ablate.sweeps.stats.summary import objective

log = logging.getLogger("ablate.worker")
PROBE_SIZE = 4


def archive(trial: optuna.Trial, result, heat_dir: Path, artifacts: FileSystemArtifactStore) -> dict:
    """Attention heatmaps of the fixed probe batch, head entropy and importance; also Optuna artifacts."""
    from ablate.lit_modules.systems.callbacks import archive_attention

    dm = result.extras["datamodule"]
    if heat_dir.exists():
        shutil.rmtree(heat_dir)  # left by a worker killed after writing it
    with atomic_dir(heat_dir) as tmp:
        heads = archive_attention(
            result.extras["model"], dm.probe_batch(PROBE_SIZE), tmp, eval_batches=dm.test_dataloader()
        )
    for path in sorted(heat_dir.iterdir()):
        upload_artifact(artifact_store=artifacts, file_path=str(path), study_or_trial=trial)
    heads["pngs"] = [heat_dir / Path(p).name for p in heads["pngs"]]
    return heads


def fresh_cell_dir(run_dir: Path, variant: str, seed: int) -> Path:
    cell_dir = run_dir / "cells" / f"{variant}-s{seed}"
    for stale in cell_dir.parent.glob(f".{cell_dir.name}.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)  # a worker killed mid-cell left it
    if cell_dir.exists():
        shutil.rmtree(cell_dir)
    return cell_dir


def run_claimed(store: CellStore, trials: list[optuna.Trial], run_dir: Path, *, use_wandb: bool) -> None:
    """Run claimed cells of one variant (``run_cells`` decides: each alone, or stacked).

    Each cell's W&B run is marked complete only after its trial is told complete; on an error
    or an interrupt, every run not yet ended ends failed or interrupted (complete if its trial
    already is), so no run is left open for the next cell's logger to attach to.
    """
    start, startup = time.perf_counter(), process_age() if _cells_run == 0 else None
    spec = store.spec
    variant = trials[0].params["variant"]
    seeds = [t.params["seed"] for t in trials]
    cfgs = [spec.cell_config(variant, seed) for seed in seeds]
    dirs = [fresh_cell_dir(run_dir, variant, seed) for seed in seeds]
    loggers = [
        wandb_glue.cell_logger(spec, variant, seed, cfg, run_dir) if use_wandb else None
        for seed, cfg in zip(seeds, cfgs, strict=True)
    ]
    w_init = (time.perf_counter() - start) / len(seeds)  # W&B runs started, per cell
    told: set[int] = set()  # members whose trial is committed complete
    ended: set[int] = set()  # members whose W&B run has ended (or that have none)
    try:
        with contextlib.ExitStack() as stack:
            tmps = [stack.enter_context(atomic_dir(d)) for d in dirs]
            results = run_cells(cfgs[0], seeds, tmps, loggers=loggers)
            if _terminated:  # a SIGTERM whose KeyboardInterrupt was lost: these cells are interrupted
                raise KeyboardInterrupt
        group_s = (time.perf_counter() - start) / len(seeds)  # each cell's share, up to its results
        artifacts = open_artifacts(run_dir)
        for i, (trial, result, logger, cell_dir) in enumerate(
            zip(trials, results, loggers, dirs, strict=True)
        ):
            seed = trial.params["seed"]
            heads, phases = None, Phases()
            phases.add("logging", w_init)
            phases.add("other", max(0.0, group_s - w_init - sum(result.phases.values())))
            if startup is not None and i == 0:
                phases.add("startup", startup)
            if seed in spec.heatmap_seeds:
                with phases("heatmaps"):
                    heads = archive(trial, result, run_dir / "heatmaps" / variant / f"seed{seed}", artifacts)
            with phases("logging"):
                upload_config(trial, cell_dir / CONFIG_ARTIFACT, artifacts)
                wandb_id = wandb_glue.log_cell(logger, result.to_dict(), heads) if logger else None
            # The trial first, then its run marked complete: a run marked complete always has a
            # complete trial. Ctrl-C waits until both are done (then raises), so an interrupt
            # cannot fall between them.
            with deferred_interrupts() as pending, phases("record"):
                record(store, trial, result, wandb_id)
                told.add(i)
                if logger:
                    wandb_glue.end_cell(logger, wandb_glue.COMPLETE)
                ended.add(i)
            add_phases(cell_dir / "metrics.json", result.phases | phases.shared(1))
            if pending:
                raise KeyboardInterrupt
    except BaseException as err:
        end_runs(trials, loggers, told, ended, err)
        raise


def add_phases(metrics_file: Path, phases: dict[str, float]) -> None:
    """The cell's phases, the worker's own added (heatmaps, logging, record), into its
    metrics.json, with ``first_in_worker`` for the first cell this process ran (its imports and
    study opening came before it); provenance only, so a cell folder that is gone is skipped."""
    global _cells_run
    with contextlib.suppress(FileNotFoundError):
        doc = json.loads(metrics_file.read_text())
        write_json(metrics_file, {**doc, "phases": phases, "first_in_worker": _cells_run == 0})
    _cells_run += 1


_cells_run = 0  # cells this worker process has finished (add_phases)
_terminated = False  # set by on_terminate: the KeyboardInterrupt it raises can be lost


def on_terminate(signum: int, frame: object) -> None:
    """SIGTERM: Ctrl-C's KeyboardInterrupt, remembered. Python swallows an exception raised
    while a finalizer runs (a weakref callback of SQLAlchemy's, during a cell's set-up: "Exception
    ignored in ..."), so ``run_claimed`` checks ``_terminated`` once the cells return as well."""
    global _terminated
    _terminated = True
    raise KeyboardInterrupt


def end_runs(
    trials: list[optuna.Trial], loggers: list, told: set[int], ended: set[int], err: BaseException
) -> None:
    """End the W&B runs of a group that stopped on ``err``: complete where the trial is told
    complete, else interrupted (Ctrl-C, SIGTERM, Lightning's exit on them) or failed."""
    interrupted = isinstance(err, (KeyboardInterrupt, SystemExit))
    if interrupted:  # a second Ctrl-C (terminal and driver both send one) must not cut this short
        for sig in INTERRUPTS:
            signal.signal(sig, signal.SIG_IGN)
    fate: wandb_glue.CellState = "interrupted" if interrupted else "failed"
    for i, (trial, logger) in enumerate(zip(trials, loggers, strict=True)):
        if logger and i not in ended:
            try:
                wandb_glue.end_cell(logger, wandb_glue.COMPLETE if i in told else fate)
            except Exception:  # W&B itself failing: the cell's error is the one to raise
                log.exception("could not end the W&B run of cell %s", trial.user_attrs.get("cell"))


def record(store: CellStore, trial: optuna.Trial, result, wandb_id: str | None) -> None:
    """Store a finished cell on its trial as scalar user attributes (sweeps/ledger/study_views.py); its
    value is the spec's metric. The per-head entropy and importance are the heads.json artifact."""
    spec = store.spec
    variant = trial.params["variant"]
    attrs = result_attrs(
        result.metrics,
        spec.variants[variant],
        diverged=result.diverged,
        wall_s=result.wall_s,
        splits=result.splits,
        n_params=result.n_params,
        curve=result.curve,
    )
    wandb = {"wandb_id": wandb_id} if wandb_id else {}  # no empty column for a run without W&B
    numerics = {"numerics": numerics_key(result.numerics)} if result.numerics else {}
    # A result counts only under the identity its code had: a driver may have taken a plugin's
    # new code meanwhile (sweeps/ledger/cells.py check_identity).
    store.check_identity()
    set_attrs(trial, {**attrs, "steps": result.steps, **wandb, **numerics})
    # Optuna fails NaN values; a diverged run is a result, so it stores the worst value.
    store.study.tell(trial, objective(result.metrics, spec.metric, spec.direction))


def stopped(study: Study) -> bool:
    """Whether this run's first cells of ``study`` all failed with the same error
    (outcome.shared_failure): then no more of its cells are claimed. Read until the answer is
    final: in a healthy run, until a first cell completes."""
    if not study.settled:
        check = check_shared_failure(study.store, study.since)
        study.settled = check.final
        if check.stop is not None:
            study.stop = shared_failure_message(study.store.spec.name, check.stop)
            log.error("%s", study.stop)
    return study.stop is not None


def claim_group(studies: list[Study], poll_s: float) -> tuple[Study, list[optuna.Trial]] | None:
    """Claim a cell of the first study that has one waiting, and up to ``trainer.seed_parallel``
    - 1 more waiting seeds of its variant (run_cells stacks them); None once every cell of every
    study is complete, failed for good, or stopped by a failure every cell shares."""
    while True:
        found = next(((s, t) for s in studies if not stopped(s) and (t := s.store.claim()) is not None), None)
        if found is not None:
            break
        if not any(s.store.unfinished() for s in studies if s.stop is None):
            return None
        idle_wait(poll_s)  # others are running cells; take over if one of them dies
    study, trial = found
    trials = [trial]
    variant = trial.params["variant"]
    group = study.store.spec.cell_config(variant, trial.params["seed"]).trainer.seed_parallel
    while len(trials) < group and (more := study.store.claim(variant)) is not None:
        trials.append(more)
    return study, sorted(trials, key=lambda t: t.params["seed"])  # claimed in random order


def fail_group(store: CellStore, trials: list[optuna.Trial], error: str | None) -> None:
    """Mark the claimed trials not yet told FAIL (a group can fail after recording some members)."""
    ids = {t._trial_id for t in trials}
    told = {t._trial_id for t in store.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))}
    for t in trials:
        if t._trial_id in ids - told:
            t.set_user_attr("error" if error else "interrupted", error or "interrupted")
            store.study.tell(t, state=TrialState.FAIL)


@dataclass
class Study:
    """A study this worker serves: its cells, its run folder, and the stop rule's state: the
    run's start (``since``), whether its answer is final, and the stop message once it stopped."""

    store: CellStore
    run_dir: Path
    since: datetime
    settled: bool = False
    stop: str | None = None


def work(
    studies: list[tuple[ExperimentSpec, Path, str]],
    *,
    use_wandb: bool,
    heartbeat_s: int,
    grace_s: int,
    poll_s: float = 2.0,
    since: datetime | None = None,
) -> int:
    """Run cells of the studies (spec, run folder, storage URL), the first study's while it has
    some waiting, until every cell is complete (or failed for good, or a study stopped on a
    failure its cells share, counted from ``since``: the run's start, default now); return how
    many ran here."""
    since = since or datetime.now()
    served = []
    for spec, run_dir, url in studies:
        store = open_store(spec, url, heartbeat_interval=heartbeat_s, grace_period=grace_s)
        name_objective(store.study, spec.metric)  # "test/acc" in optuna-dashboard, not "Objective 0"
        served.append(Study(store, run_dir, since))

    def run(claimed: tuple[Study, list[optuna.Trial]]) -> int:
        study, trials = claimed
        with heartbeats(study.store.storage, [t._trial_id for t in trials]):
            run_claimed(study.store, trials, study.run_dir, use_wandb=use_wandb)
        return len(trials)

    return work_loop(
        lambda: claim_group(served, poll_s),
        run,
        lambda claimed, error: fail_group(claimed[0].store, claimed[1], error),
        describe=lambda c: f"{c[0].store.spec.name} cells {', '.join(t.user_attrs['cell'] for t in c[1])}",
        log=log,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablate.sweeps.drivers.worker")
    parser.add_argument(
        "--run-dir",
        action="append",
        required=True,
        help="a study's run folder (several: claim from each in order)",
    )
    parser.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help=f"the studies' storage URL (default: ${STORAGE_ENV}, else each run folder's study.db)",
    )
    parser.add_argument("--no-wandb", action="store_true")
    parser.add_argument("--heartbeat", type=int, default=10)
    parser.add_argument("--grace", type=int, default=30)
    parser.add_argument(
        "--since",
        type=datetime.fromisoformat,
        help="the run's start (ISO time; the driver passes it): failures from then on can stop it",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d] %(message)s")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dirs = [Path(d) for d in args.run_dir]
    # SLURM's scancel and job time limits send SIGTERM: handle it as Ctrl-C, so the running
    # cell is marked interrupted and requeued at once, not after its heartbeat's grace period.
    # Ctrl-C too, explicitly: a worker started from a non-interactive shell's background job
    # inherits SIGINT ignored, and would not hear the driver pass Ctrl-C (or SIGTERM) on to it.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_terminate)
    try:
        studies = [(read_run_spec(d), d, args.storage or default_storage(d)) for d in dirs]
        work(
            studies,
            use_wandb=not args.no_wandb,
            heartbeat_s=args.heartbeat,
            grace_s=args.grace,
            since=args.since,
        )
    except KeyboardInterrupt:
        return 130
    except ConfigError as err:  # e.g. a plugin changed since the driver recorded it: one line
        log.error("%s%s", STOPPED, err)  # which the driver prints (sweeps/drivers/launcher.py)
        return 2  # as the command line's usage errors
    return 0


if __name__ == "__main__":
    sys.exit(main())
