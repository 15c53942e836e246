"""The ``search`` block of an experiment spec: the space of dotted config keys that
``ablate search`` tunes per variant, its budget, validation metric and pruner."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ablate.errors import ConfigError, Range, require
from ablate.experiments.schema.config import SEED_RANGE, TrainConfig
from ablate.experiments.schema.parsing import as_mapping, require_number
from ablate.experiments.specs.loading import absolute_paths

PRUNERS = ("median", "hyperband", "none")
# The integer settings of the block: default and valid interval (sane upper bounds: a search of
# 100,000 trials or a hyperband that divides by 100 is a typo, not a plan).
SEARCH_INTS: dict[str, tuple[int, Range]] = {
    "trials": (20, Range(1, 100_000)),
    "seed": (0, SEED_RANGE),
    "n_startup_trials": (4, Range(0, 100_000)),
    "n_warmup_steps": (1, Range(0, 10_000_000)),
    "min_resource": (1, Range(1, 10_000_000)),
    "reduction_factor": (3, Range(2, 100)),
}


@dataclass(frozen=True, kw_only=True)
class ParamSpace:
    """One searched key: a float/int range (optionally log-scaled) or a list of choices."""

    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()
    is_int: bool = False

    def to_dict(self) -> dict[str, Any]:
        if self.choices:
            return {"choices": list(self.choices)}
        return {"low": self.low, "high": self.high, "log": self.log}


@dataclass(frozen=True, kw_only=True)
class SearchSpec:
    """Per-variant tuning (``ablate search``): TPE over ``space`` on a validation metric.

    A key a variant sets itself (e.g. ``optim.warmup_ratio: 0`` in a no-warmup
    variant) is not searched for that variant: the variant defines it.
    """

    space: dict[str, ParamSpace]
    trials: int = 20
    metric: str = "val/acc"
    direction: Literal["maximize", "minimize"] = "maximize"
    # Seeds the TPE sampler and is the training seed of every search trial.
    seed: int = 0
    pruner: Literal["median", "hyperband", "none"] = "median"
    # median: never prune in the first n_startup_trials trials, nor at a trial's first
    # n_warmup_steps validations (validations are numbered 1, 2, ... every trainer.val_every steps)
    # hyperband: min_resource (validations) and reduction_factor
    n_startup_trials: int = 4
    n_warmup_steps: int = 1
    min_resource: int = 1
    reduction_factor: int = 3

    def space_for(self, variant_overrides: dict[str, Any]) -> dict[str, ParamSpace]:
        return {k: p for k, p in self.space.items() if k not in variant_overrides}

    def to_dict(self) -> dict[str, Any]:
        return {
            "space": {k: p.to_dict() for k, p in self.space.items()},
            "trials": self.trials,
            "metric": self.metric,
            "direction": self.direction,
            "seed": self.seed,
            "pruner": self.pruner,
            "n_startup_trials": self.n_startup_trials,
            "n_warmup_steps": self.n_warmup_steps,
            "min_resource": self.min_resource,
            "reduction_factor": self.reduction_factor,
        }


SEARCH_KEYS = (
    "space",
    "trials",
    "metric",
    "direction",
    "seed",
    "pruner",
    "n_startup_trials",
    "n_warmup_steps",
    "min_resource",
    "reduction_factor",
)


def _param_space(key: str, raw: Any, base: TrainConfig, where: str, folder: Path | None) -> ParamSpace:
    flat = base.flat()
    require(
        key in flat and key != "seed",
        f"{where}search.space key {key!r} is not a config key; valid: {', '.join(k for k in flat if k != 'seed')}",
    )
    require(
        isinstance(raw, dict) and (set(raw) <= {"low", "high", "log"} or set(raw) == {"choices"}),
        f"{where}search.space.{key} must be {{low, high[, log]}} or {{choices: [...]}}, got {raw!r}",
    )
    current = flat[key]
    if "choices" in raw:
        choices = raw["choices"]
        require(
            isinstance(choices, list) and choices,
            f"{where}search.space.{key}.choices must be a non-empty list",
        )
        if folder is not None:  # a path choice resolves against the spec's folder
            choices = [absolute_paths({key: c}, folder)[key] for c in choices]
        values = list(choices)
        space = ParamSpace(choices=tuple(choices))
    else:
        low, high, log = raw.get("low"), raw.get("high"), raw.get("log", False)
        numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (low, high))
        require(numeric, f"{where}search.space.{key} needs numeric low and high, got {raw!r}")
        require(
            all(abs(x) <= sys.float_info.max and math.isfinite(x) for x in (low, high)),
            f"{where}search.space.{key}: low={low} and high={high} must be finite",
        )
        require(low < high, f"{where}search.space.{key}: low={low} must be below high={high}")
        require(isinstance(log, bool), f"{where}search.space.{key}.log must be true or false")
        require(not log or low > 0, f"{where}search.space.{key}: a log range needs low > 0")
        is_int = isinstance(current, int) and not isinstance(current, bool)
        require(
            not is_int or (float(low).is_integer() and float(high).is_integer()),
            f"{where}search.space.{key} is an integer key; low and high must be integers",
        )
        values = [int(low), int(high)] if is_int else [float(low), float(high)]
        space = ParamSpace(low=values[0], high=values[1], log=log, is_int=is_int)
    for value in values:  # every end of the range must be a valid config
        try:
            base.override({key: value})
        except ConfigError as err:
            raise ConfigError(f"{where}search.space.{key}={value!r}: {err}") from None
    return space


def parse_search(raw: Any, base: TrainConfig, where: str, folder: Path | None = None) -> SearchSpec:
    """The ``search`` block; ``folder`` (the spec's) resolves relative paths among choices."""
    require(isinstance(raw, dict), f"{where}search must be a mapping with a 'space'")
    as_mapping(raw, f"{where}search")
    unknown = sorted(set(raw) - set(SEARCH_KEYS))
    require(not unknown, f"{where}unknown search key(s) {unknown}; valid: {', '.join(SEARCH_KEYS)}")
    space_raw = raw.get("space")
    require(
        isinstance(space_raw, dict) and space_raw,
        f"{where}search.space must map config keys to ranges, e.g. optim.lr: {{low: 1e-4, high: 1e-2, log: true}}",
    )
    as_mapping(space_raw, f"{where}search.space")
    space = {k: _param_space(k, v, base, where, folder) for k, v in space_raw.items()}
    metric = raw.get("metric", "val/acc")
    require(
        metric in ("val/acc", "val/f1", "val/loss"),
        f"{where}search.metric={metric!r}: tune on validation, never test; choose val/acc, val/f1 or val/loss",
    )
    direction = raw.get("direction", "minimize" if metric == "val/loss" else "maximize")
    require(direction in ("maximize", "minimize"), f"{where}search.direction must be maximize or minimize")
    pruner = raw.get("pruner", "median")
    require(pruner in PRUNERS, f"{where}search.pruner={pruner!r}; choose one of {', '.join(PRUNERS)}")
    require(
        pruner == "none" or base.trainer.val_every > 0,
        f"{where}search.pruner={pruner!r} needs validation during training: set trainer.val_every "
        f"(e.g. {max(1, base.trainer.max_steps // 5)}) or search.pruner: none",
    )
    ints = {
        key: require_number(raw.get(key, default), f"{where}search.{key}", interval)
        for key, (default, interval) in SEARCH_INTS.items()
    }
    return SearchSpec(space=space, metric=metric, direction=direction, pruner=pruner, **ints)


# How cells train, not what they measure: one value per study, never a variant's.
