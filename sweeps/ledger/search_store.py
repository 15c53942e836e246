"""The per-variant search studies of one experiment: identity, space, pruner, seeded sampler,
and the ask under the study lock (so a study never gets more than ``trials`` finished or
running trials however many workers ask)."""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.experiments.specs.search_spec import SearchSpec
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.ledger.identity import changed_keys, older_identities, refuse_changes
from ablate.sweeps.ledger.storage import open_storage, retry_db, storage_where, study_lock
from ablate.sweeps.ledger.study_views import name_objective

# ask/tell with heartbeats is what sweeps.store does for cells too; Optuna only expects optimize().
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
# A variant whose trials failed with an error this many times is not asked again.
MAX_ERRORS = 3
SEARCH_KEYS = ("search", "base", "variants", "metric")
SEARCH_WHAT = "search space, base config, variants or metric"


def study_name(spec: ExperimentSpec, variant: str) -> str:
    return f"{spec.name}.search.{variant}"


def search_identity(spec: ExperimentSpec, *, full_source: bool = False) -> str:
    """What makes search trials comparable: the grid's identity and the search minus its budget
    (``full_source``: the grid's identity as studies recorded it before, ExperimentSpec.identity)."""
    assert spec.search is not None
    payload = {**spec.search.to_dict(), "trials": None, "grid": spec.identity(full_source=full_source)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def search_settings(spec: ExperimentSpec) -> dict[str, Any]:
    """The settings behind ``search_identity``, stored on the study to name what changed."""
    assert spec.search is not None
    grid = spec.to_dict()
    return {"search": {**spec.search.to_dict(), "trials": None}, **{k: grid[k] for k in SEARCH_KEYS[1:]}}


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
        # Optuna prunes at any step >= its n_warmup_steps; validations are numbered from 1, so
        # protecting the first n validations takes n + 1.
        return optuna.pruners.MedianPruner(
            n_startup_trials=s.n_startup_trials, n_warmup_steps=s.n_warmup_steps + 1
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

    def __init__(
        self,
        spec: ExperimentSpec,
        url: str,
        variants: list[str],
        trials: int,
        *,
        create: bool = False,
        **hb: int,
    ) -> None:
        if spec.search is None:
            raise ConfigError(f"experiment {spec.name!r} has no 'search' block; see README (ablate search)")
        self.spec, self.search, self.variants, self.trials = spec, spec.search, variants, trials
        self.storage = open_storage(url, create=create, **hb)
        base = spec.base.trainer
        identity = search_identity(spec)
        self.studies: dict[str, optuna.Study] = {}
        for v in variants:
            study = retry_db(
                f"cannot open study {study_name(spec, v)!r} in {storage_where(self.storage)}",
                lambda v=v: optuna.create_study(
                    study_name=study_name(spec, v),
                    storage=self.storage,
                    direction=self.search.direction,
                    pruner=make_pruner(self.search, base.max_steps, base.val_every or base.max_steps),
                    load_if_exists=True,
                ),
            )
            found = study.user_attrs.get("identity")
            if found is None:  # "identity" last: who finds it finds the rest (see store.py)
                study.set_user_attr("settings", search_settings(spec))
                study.set_user_attr("variant", v)
                study.set_user_attr("identity", identity)
            elif found != identity and found in older_identities(
                spec, lambda full: search_identity(spec, full_source=full)
            ):
                study.set_user_attr("identity", identity)  # its plugins unchanged, recorded as today
            elif found != identity:
                # Studies from before "settings" was stored can only be named by their hash.
                stored = study.user_attrs.get("settings")
                changes = changed_keys(stored, search_settings(spec), SEARCH_KEYS) if stored else []
                where = storage_where(self.storage)
                refuse_changes(
                    study.study_name, where, changes, f"identity {found} != {identity}", SEARCH_WHAT
                )
            name_objective(study, self.search.metric)  # the validation metric, not "Objective 0"
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
