"""A search worker (``python -m ablate.sweeps.drivers.search_worker``): ask for trials and train them until
every variant's study is full. Each trial is one ``run_trial`` on the search seed, pruned on
the validation metric during training."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import optuna
from lightning.pytorch.trainer.states import TrainerFn
from optuna.artifacts import FileSystemArtifactStore
from optuna.trial import TrialState
from optuna_integration import PyTorchLightningPruningCallback

from ablate.errors import ConfigError
from ablate.experiments.runner.cells import run_trial
from ablate.sweeps.drivers.launcher import STOPPED
from ablate.sweeps.drivers.loop import heartbeats, work_loop
from ablate.sweeps.ledger.run_folder import read_run_spec
from ablate.sweeps.ledger.search_store import SearchStore
from ablate.sweeps.ledger.secrets import STORAGE_ENV
from ablate.sweeps.ledger.study_views import open_artifacts, result_attrs, set_attrs, upload_config_of
from ablate.sweeps.stats.summary import objective

log = logging.getLogger("ablate.search")


class ValidationPruning(PyTorchLightningPruningCallback):
    """Report the monitored metric at every validation, numbered 1, 2, ... .

    The upstream callback reports at ``current_epoch``; this suite validates
    every ``trainer.val_every`` steps inside one long epoch, so all but the
    first report of an epoch would be dropped as duplicates. Distributed runs
    keep the upstream (epoch-based, broadcast) path.
    """

    def __init__(self, trial: optuna.Trial, monitor: str, val_every: int) -> None:
        super().__init__(trial, monitor)
        self.trial = trial  # the upstream callback keeps it only as the private ``_trial``
        self.val_every = val_every

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.state.fn != TrainerFn.FITTING:
            return  # the final trainer.validate() after fit: its value is the trial's result
        if self.is_ddp_backend or trainer.sanity_checking:
            return super().on_validation_end(trainer, pl_module)
        # A search trial trains one seed; on the stacked path it is member 0 (lit_modules/systems/seed_parallel.py).
        logged = trainer.callback_metrics
        score = logged.get(self.monitor, logged.get(f"{self.monitor}@0"))
        if score is None:
            raise ConfigError(f"search.metric {self.monitor!r} is not logged during validation")
        step = max(1, trainer.global_step // self.val_every)
        self.trial.report(float(score), step=step)
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned after validation {step} ({self.monitor}={float(score):.4f})")


def run_search_trial(
    store: SearchStore, variant: str, trial: optuna.Trial, artifacts: FileSystemArtifactStore
) -> str:
    """Train one configuration on the search seed; tell the study COMPLETE or PRUNED. A finished
    trial stores scalar user attributes and its config as an artifact (sweeps/ledger/study_views.py)."""
    spec, s = store.spec, store.search
    cfg = spec.cell_config(variant, s.seed).override(trial.params)
    callbacks = [] if s.pruner == "none" else [ValidationPruning(trial, s.metric, cfg.trainer.val_every)]
    study = store.studies[variant]
    try:
        result = run_trial(cfg, callbacks=callbacks)
    except optuna.TrialPruned as pruned:
        trial.set_user_attr("pruned", str(pruned))
        study.tell(trial, state=TrialState.PRUNED)
        return "pruned"
    upload_config_of(trial, result.config, artifacts)
    overrides = spec.variants[variant]
    set_attrs(trial, result_attrs(result.metrics, overrides, diverged=result.diverged, wall_s=result.wall_s))
    study.tell(trial, objective(result.metrics, s.metric, s.direction))  # diverged: the worst value
    return "complete"


def work(store: SearchStore, artifacts: FileSystemArtifactStore) -> int:
    """Run trials until every variant's study is full; return how many ran here."""

    def run(claimed: tuple[str, optuna.Trial]) -> int:
        variant, trial = claimed
        with heartbeats(store.storage, [trial._trial_id]):
            outcome = run_search_trial(store, variant, trial, artifacts)
            log.info("%s trial %d: %s", variant, trial.number, outcome)
        return 1

    def fail(claimed: tuple[str, optuna.Trial], error: str | None) -> None:
        variant, trial = claimed
        if error is not None:
            trial.set_user_attr("error", error)
        store.studies[variant].tell(trial, state=TrialState.FAIL)

    return work_loop(
        store.ask,
        run,
        fail,
        describe=lambda c: f"{c[0]} trial {c[1].number} {c[1].params}",
        log=log,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablate.sweeps.drivers.search_worker")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help=f"the study's storage URL (default: ${STORAGE_ENV})",
    )
    parser.add_argument("--variants", required=True)
    parser.add_argument("--trials", type=int, required=True)
    parser.add_argument("--heartbeat", type=int, default=10)
    parser.add_argument("--grace", type=int, default=30)
    args = parser.parse_args(argv)
    if not args.storage:
        parser.error(f"give --storage URL or set {STORAGE_ENV}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d] %(message)s")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    start = time.perf_counter()
    try:
        store = SearchStore(
            read_run_spec(Path(args.run_dir)),
            args.storage,
            args.variants.split(","),
            args.trials,
            heartbeat_interval=args.heartbeat,
            grace_period=args.grace,
        )
        ran = work(store, open_artifacts(Path(args.run_dir)))
    except KeyboardInterrupt:
        return 130
    except ConfigError as err:  # e.g. a plugin changed since the driver recorded it: one line
        log.error("%s%s", STOPPED, err)  # which the driver prints (sweeps/drivers/launcher.py)
        return 2  # as the command line's usage errors
    log.info("ran %d trials in %.0f s", ran, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
