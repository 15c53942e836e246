"""``ablate search``: tune every variant on validation, then run the tuned grid over seeds.

A variant can lose an ablation only because the shared learning rate suits the
baseline better (Post-LN wants a lower one). So each variant gets its own
Optuna study (``<name>.search.<variant>``) with a seeded TPE sampler over the
spec's ``search.space`` and a pruner fed by the validation metric during
training; test data is never looked at. ``--then-evaluate`` takes each
variant's best parameters and runs the ordinary multi-seed grid with them.

Workers (``python -m sweeps.search``) ask for trials under the study lock, so
a study never gets more than ``trials`` finished or running trials however many
workers run; a trial whose worker died stops sending heartbeats, is failed and
is asked again. Finished and pruned trials are kept when the command reruns.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import math
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import optuna
from lightning.pytorch.trainer.states import TrainerFn
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState
from optuna_integration import PyTorchLightningPruningCallback

from experiments.io import write_json
from experiments.run import run_trial
from experiments.spec import ExperimentSpec, SearchSpec, spec_from_resolved
from lit_modules.config import ConfigError
from sweeps.store import heartbeat, open_storage, retry_db, study_lock

log = logging.getLogger("ablate.search")
# ask/tell with heartbeats is what sweeps.store does for cells too; Optuna only expects optimize().
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
# A variant whose trials failed with an error this many times is not asked again.
MAX_ERRORS = 3
DONE = (TrialState.COMPLETE, TrialState.PRUNED)


class ValidationPruning(PyTorchLightningPruningCallback):
    """Report the monitored metric at every validation, numbered 1, 2, ... .

    The upstream callback reports at ``current_epoch``; this suite validates
    every ``trainer.val_every`` steps inside one long epoch, so all but the
    first report of an epoch would be dropped as duplicates. Distributed runs
    keep the upstream (epoch-based, broadcast) path.
    """

    def __init__(self, trial: optuna.Trial, monitor: str, val_every: int) -> None:
        super().__init__(trial, monitor)
        self.val_every = val_every

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.state.fn != TrainerFn.FITTING:
            return  # the final trainer.validate() after fit: its value is the trial's result
        if self.is_ddp_backend or trainer.sanity_checking:
            return super().on_validation_end(trainer, pl_module)
        score = trainer.callback_metrics.get(self.monitor)
        if score is None:
            raise ConfigError(f"search.metric {self.monitor!r} is not logged during validation")
        step = max(1, trainer.global_step // self.val_every)
        self._trial.report(float(score), step=step)
        if self._trial.should_prune():
            raise optuna.TrialPruned(f"pruned after validation {step} ({self.monitor}={float(score):.4f})")


def study_name(spec: ExperimentSpec, variant: str) -> str:
    return f"{spec.name}.search.{variant}"


def search_identity(spec: ExperimentSpec) -> str:
    """What makes search trials comparable: the grid's identity and the search minus its budget."""
    assert spec.search is not None
    payload = {**spec.search.to_dict(), "trials": None, "grid": spec.identity()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def distributions(spec: ExperimentSpec, variant: str) -> dict[str, BaseDistribution]:
    assert spec.search is not None
    out: dict[str, BaseDistribution] = {}
    for key, p in spec.search.space_for(spec.variants[variant]).items():
        if p.choices:
            out[key] = CategoricalDistribution(p.choices)
        elif p.is_int:
            out[key] = IntDistribution(int(p.low), int(p.high), log=p.log)
        else:
            out[key] = FloatDistribution(p.low, p.high, log=p.log)
    return out


def make_pruner(s: SearchSpec, max_steps: int, val_every: int) -> optuna.pruners.BasePruner:
    """Pruner steps count validations (1 = the first validation during training)."""
    if s.pruner == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=s.n_startup_trials, n_warmup_steps=s.n_warmup_steps
        )
    if s.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=s.min_resource,
            max_resource=max(s.min_resource, max_steps // val_every),
            reduction_factor=s.reduction_factor,
        )
    return optuna.pruners.NopPruner()


def make_sampler(s: SearchSpec, n_asked: int) -> optuna.samplers.TPESampler:
    """Seeded per ask: the k-th trial of a study gets the same parameters whichever worker asks."""
    return optuna.samplers.TPESampler(
        seed=s.seed * 100_003 + n_asked, n_startup_trials=max(2, min(10, s.trials // 3)), multivariate=True
    )


class SearchStore:
    """The per-variant search studies of one experiment in one storage."""

    def __init__(self, spec: ExperimentSpec, url: str, variants: list[str], trials: int, **hb: int) -> None:
        if spec.search is None:
            raise ConfigError(f"experiment {spec.name!r} has no 'search' block; see README (ablate search)")
        self.spec, self.search, self.variants, self.trials = spec, spec.search, variants, trials
        self.storage = open_storage(url, **hb)
        base = spec.base.trainer
        identity = search_identity(spec)
        self.studies: dict[str, optuna.Study] = {}
        for v in variants:
            study = retry_db(
                f"cannot open study {study_name(spec, v)!r} in {url}",
                lambda v=v: optuna.create_study(
                    study_name=study_name(spec, v),
                    storage=self.storage,
                    direction=self.search.direction,
                    pruner=make_pruner(self.search, base.max_steps, base.val_every or base.max_steps),
                    load_if_exists=True,
                ),
            )
            found = study.user_attrs.get("identity")
            if found is None:
                study.set_user_attr("identity", identity)
                study.set_user_attr("variant", v)
            elif found != identity:
                raise ConfigError(
                    f"the search study {study.study_name!r} was run with another base config, variants or "
                    f"search space (identity {found} != {identity}); use another --out/--storage"
                )
            self.studies[v] = study

    def counts(self, variant: str) -> dict[str, int]:
        trials = self.studies[variant].get_trials(deepcopy=False)
        return {
            "complete": sum(t.state == TrialState.COMPLETE for t in trials),
            "pruned": sum(t.state == TrialState.PRUNED for t in trials),
            "running": sum(t.state == TrialState.RUNNING for t in trials),
            "errors": sum(t.state == TrialState.FAIL and "error" in t.user_attrs for t in trials),
        }

    def open_slots(self, variant: str) -> int:
        c = self.counts(variant)
        if c["errors"] >= MAX_ERRORS:
            return 0
        return self.trials - c["complete"] - c["pruned"] - c["running"]

    def ask(self) -> tuple[str, optuna.Trial] | None:
        """Claim the next trial of the variant with the fewest trials so far, or None when all are full."""
        while True:
            for v in self.variants:
                optuna.storages.fail_stale_trials(self.studies[v])
            slots = {v: self.open_slots(v) for v in self.variants}
            open_variants = [v for v in self.variants if slots[v] > 0]
            if not open_variants:
                return None
            variant = max(open_variants, key=lambda v: slots[v])  # ties: spec order
            study = self.studies[variant]
            with study_lock(self.storage, study.study_name):
                if self.open_slots(variant) <= 0:
                    continue  # another worker took the last slot meanwhile
                study.sampler = make_sampler(self.search, len(study.get_trials(deepcopy=False)))
                trial = study.ask(distributions(self.spec, variant))
                self.storage.record_heartbeat(trial._trial_id)
            return variant, trial

    def done(self, variant: str) -> int:
        c = self.counts(variant)
        return c["complete"] + c["pruned"]

    def summary(self) -> dict[str, Any]:
        """Per variant: the best finished trial's value and parameters, and the trial counts."""
        out: dict[str, Any] = {}
        for v, study in self.studies.items():
            complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
            entry: dict[str, Any] = {
                **self.counts(v),
                "best_value": None,
                "best_params": None,
                "best_trial": None,
            }
            if complete:
                best = study.best_trial
                entry.update(best_value=best.value, best_params=best.params, best_trial=best.number)
            out[v] = entry
        return {"metric": self.search.metric, "direction": self.search.direction, "variants": out}


def run_search_trial(store: SearchStore, variant: str, trial: optuna.Trial) -> str:
    """Train one configuration on the search seed; tell the study COMPLETE or PRUNED."""
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
    trial.set_user_attr("metrics", result.metrics)
    trial.set_user_attr("diverged", result.diverged)
    trial.set_user_attr("wall_s", round(result.wall_s, 3))
    value = result.metrics.get(s.metric, math.nan)
    if not math.isfinite(value):  # a diverged run is a result: the worst value
        value = -math.inf if s.direction == "maximize" else math.inf
    study.tell(trial, value)
    return "complete"


def work(store: SearchStore) -> int:
    """Run trials until every variant's study is full; return how many ran here."""
    ran = 0
    while True:
        claimed = retry_db("cannot ask for a search trial", store.ask)
        if claimed is None:
            return ran
        variant, trial = claimed
        log.info("%s trial %d: start %s", variant, trial.number, trial.params)
        try:
            with heartbeat(store.storage, trial._trial_id):
                outcome = run_search_trial(store, variant, trial)
            ran += 1
            log.info("%s trial %d: %s", variant, trial.number, outcome)
        except BaseException as err:  # Ctrl-C, SystemExit from Lightning, or a bug
            interrupted = isinstance(err, (KeyboardInterrupt, SystemExit))
            if interrupted:
                # Ctrl-C reaches a worker twice (the terminal's and the driver's): a second
                # KeyboardInterrupt here would leave the trial RUNNING until its heartbeat expires.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                if not interrupted:
                    trial.set_user_attr("error", f"{type(err).__name__}: {err}")
                store.studies[variant].tell(trial, state=TrialState.FAIL)
            except Exception:  # heartbeats expire the trial if the storage is gone too
                log.exception("could not mark trial %d failed", trial.number)
            if interrupted:
                raise KeyboardInterrupt from None
            log.error("%s trial %d failed:\n%s", variant, trial.number, traceback.format_exc())


def tuned_spec(spec: ExperimentSpec, summary: dict[str, Any]) -> ExperimentSpec:
    """The grid with each variant's best parameters: the baseline's go into the base.

    A variant's own overrides still win (a no-warmup variant was never tuned on warmup).
    """
    best = {v: e["best_params"] for v, e in summary["variants"].items()}
    missing = [v for v, p in best.items() if p is None]
    if missing:
        raise ConfigError(
            f"no finished search trial for {missing}; run more --trials (all were pruned or failed)"
        )
    if spec.baseline not in best:
        raise ConfigError(f"--then-evaluate needs the baseline {spec.baseline!r} among --variants")
    variants = {v: ({} if v == spec.baseline else {**best[v], **spec.variants[v]}) for v in best}
    tuned = {
        v: {**best[v], f"{summary['metric']} (search)": round(summary["variants"][v]["best_value"], 4)}
        for v in best
    }
    return dataclasses.replace(
        spec,
        name=f"{spec.name}-tuned",
        base=spec.base.override(best[spec.baseline]),
        variants=variants,
        base_overrides={**spec.base_overrides, **best[spec.baseline]},
        tuned=tuned,
    )


def search(
    spec: ExperimentSpec,
    run_dir: Path,
    *,
    variants: list[str],
    trials: int,
    storage: str | None = None,
    workers: int = 1,
    heartbeat_s: int = 10,
    grace_s: int = 30,
) -> dict[str, Any]:
    """Run (or resume) the per-variant searches; write and return ``search.json``."""
    from sweeps.grid import default_storage, run_workers

    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    run_dir.mkdir(parents=True, exist_ok=True)
    url = storage or default_storage(run_dir)
    hb = {"heartbeat_interval": heartbeat_s, "grace_period": grace_s}
    store = SearchStore(spec, url, variants, trials, **hb)
    write_json(run_dir / "spec.json", spec.to_dict())

    def poll() -> tuple[int, str]:
        counts = [store.counts(v) for v in variants]
        pruned = sum(c["pruned"] for c in counts)
        running = sum(c["running"] for c in counts)
        return sum(store.done(v) for v in variants), f"{running} running, {pruned} pruned"

    args = ["--run-dir", str(run_dir), "--storage", url, "--variants", ",".join(variants)]
    args += ["--trials", str(trials), "--heartbeat", str(heartbeat_s), "--grace", str(grace_s)]
    run_workers(
        "sweeps.search",
        args,
        run_dir,
        workers=workers,
        title=f"{spec.name} search",
        total=trials * len(variants),
        poll=poll,
        url=url,
    )
    summary = {"experiment": spec.name, "trials": trials, **store.summary()}
    write_json(run_dir / "search.json", summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweeps.search")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--variants", required=True)
    parser.add_argument("--trials", type=int, required=True)
    parser.add_argument("--heartbeat", type=int, default=10)
    parser.add_argument("--grace", type=int, default=30)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d] %(message)s")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = spec_from_resolved(json.loads((Path(args.run_dir) / "spec.json").read_text()))
    store = SearchStore(
        spec,
        args.storage,
        args.variants.split(","),
        args.trials,
        heartbeat_interval=args.heartbeat,
        grace_period=args.grace,
    )
    start = time.perf_counter()
    try:
        ran = work(store)
    except KeyboardInterrupt:
        return 130
    log.info("ran %d trials in %.0f s", ran, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
