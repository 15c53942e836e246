"""ExperimentSpec: named variants x seeds over one base train config.

A variant is a set of dotted overrides on the base; the baseline is the one
variant with none. Validation happens before anything runs: every variant
must build a valid TrainConfig, change at least one value, and name existing
keys only.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ablate.errors import ConfigError, require
from ablate.experiments.config import TrainConfig, parse_overrides, read_yaml

SPEC_KEYS = (
    "name",
    "description",
    "base",
    "overrides",
    "variants",
    "seeds",
    "seed_factors",
    "heatmap_seeds",
    "metric",
    "extra_metrics",
    "direction",
    "wandb_project",
    "tags",
    "profiles",
    "search",
)
PRUNERS = ("median", "hyperband", "none")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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


STOP_RULES = ("separated", "ci_width")


@dataclass(frozen=True, kw_only=True)
class AdaptiveSeeds:
    """``seeds: {min, max, step, stop, width}``: start with seeds 0..min-1; after each round, add
    ``step`` seeds to every variant whose comparison with the baseline is still undecided (and to
    the baseline, so that they stay paired) until each is decided or has ``max`` seeds.

    ``stop: separated`` decides a comparison when the CI of its Δ excludes 0, ``ci_width`` when
    the CI is narrower than ``width``. The CI of every look is taken at level 1 - 0.05 / looks
    (Bonferroni over the possible looks), so peeking after each round keeps the error rate of
    "separated" at 5 % or less.
    """

    min: int
    max: int
    step: int
    stop: Literal["separated", "ci_width"] = "separated"
    width: float | None = None

    @property
    def looks(self) -> int:
        return 1 + -(-(self.max - self.min) // self.step)  # ceil: the last round may be shorter

    @property
    def level(self) -> float:
        return 1 - 0.05 / self.looks

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "step": self.step, "stop": self.stop, "width": self.width}


@dataclass(frozen=True, kw_only=True)
class ExperimentSpec:
    name: str
    base: TrainConfig
    # variant name -> dotted overrides; the baseline has none.
    variants: dict[str, dict[str, Any]]
    seeds: tuple[int, ...]
    heatmap_seeds: tuple[int, ...]
    metric: str = "test/acc"
    # Further metrics reported with the same statistics (e.g. test_long/acc).
    extra_metrics: tuple[str, ...] = ()
    direction: Literal["maximize", "minimize"] = "maximize"
    wandb_project: str | None = None
    tags: tuple[str, ...] = ()
    description: str = ""
    # The overrides applied to the base from the command line or a profile.
    base_overrides: dict[str, Any] = field(default_factory=dict)
    search: SearchSpec | None = None
    # Set on a spec built by ``ablate search --then-evaluate``: variant -> tuned parameters.
    tuned: dict[str, dict[str, Any]] | None = None
    # Adaptive seeds (``seeds: {min, ...}``) and the seeds its rounds added, per variant.
    adaptive: AdaptiveSeeds | None = None
    extra_seeds: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # ``seed_factors: {init: a, data_order: b}``: seeds 0..ab-1, seed s = init s // b x order s % b.
    seed_factors: dict[str, int] | None = None

    @property
    def baseline(self) -> str:
        return next(name for name, ov in self.variants.items() if not ov)

    def cells(self) -> list[tuple[str, int]]:
        """Every (variant, seed) pair, seed-major so early results cover all variants; then the
        seeds that adaptive rounds added to some variants."""
        extra = sorted((s, v) for v, seeds in self.extra_seeds.items() for s in seeds)
        return [(v, s) for s in self.seeds for v in self.variants] + [(v, s) for s, v in extra]

    def all_seeds(self) -> list[int]:
        return sorted({s for _, s in self.cells()})

    def cell_config(self, variant: str, seed: int) -> TrainConfig:
        return self.base.override({**self.variants[variant], "seed": seed})

    def identity(self) -> str:
        """Hash of what makes results comparable: the base and the variants.

        Seeds are not part of it, so a study can grow by more seeds later.
        """
        payload = {"base": self.base.to_dict(), "variants": self.variants, "metric": self.metric}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "base": self.base.to_dict(),
            "variants": self.variants,
            "seeds": list(self.seeds),
            "heatmap_seeds": list(self.heatmap_seeds),
            "metric": self.metric,
            "extra_metrics": list(self.extra_metrics),
            "direction": self.direction,
            "wandb_project": self.wandb_project,
            "tags": list(self.tags),
            "base_overrides": self.base_overrides,
            "search": self.search.to_dict() if self.search else None,
            "tuned": self.tuned,
            "adaptive": self.adaptive.to_dict() if self.adaptive else None,
            "seed_factors": self.seed_factors,
            "extra_seeds": {v: list(s) for v, s in self.extra_seeds.items()},
        }


def _adaptive(value: dict[str, Any], where: str) -> AdaptiveSeeds:
    keys = ("min", "max", "step", "stop", "width")
    unknown = sorted(set(value) - set(keys))
    require(not unknown, f"{where}seeds: unknown key(s) {unknown}; valid: {', '.join(keys)}")
    for key in ("min", "max", "step"):
        v = value.get(key)
        require(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1,
            f"{where}seeds.{key} must be an integer >= 1, got {v!r}",
        )
    require(
        value["min"] <= value["max"], f"{where}seeds.min={value['min']} is above seeds.max={value['max']}"
    )
    stop = value.get("stop", "separated")
    require(stop in STOP_RULES, f"{where}seeds.stop={stop!r}; choose one of {', '.join(STOP_RULES)}")
    width = value.get("width")
    if stop == "ci_width":
        require(
            isinstance(width, (int, float)) and not isinstance(width, bool) and width > 0,
            f"{where}seeds.stop=ci_width needs seeds.width > 0 (the CI width to reach), got {width!r}",
        )
    else:
        require(width is None, f"{where}seeds.width applies to stop: ci_width only")
    return AdaptiveSeeds(
        min=value["min"],
        max=value["max"],
        step=value["step"],
        stop=stop,
        width=None if width is None else float(width),
    )


def _seed_factors(value: Any, where: str) -> dict[str, int]:
    require(
        isinstance(value, dict) and set(value) == {"init", "data_order"},
        f"{where}seed_factors must be {{init: N, data_order: M}} (crossed levels), got {value!r}",
    )
    for key, n in value.items():
        require(
            isinstance(n, int) and not isinstance(n, bool) and n >= 2,
            f"{where}seed_factors.{key} must be an integer >= 2 (a factor needs two levels), got {n!r}",
        )
    return dict(value)


def _seeds(value: Any, key: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        require(value >= 1, f"{key}={value}: a seed count must be >= 1")
        return tuple(range(value))
    require(
        isinstance(value, list)
        and value
        and all(isinstance(s, int) and not isinstance(s, bool) for s in value),
        f"{key} must be a count or a non-empty list of integers, got {value!r}",
    )
    require(len(set(value)) == len(value), f"{key} lists a seed twice: {value}")
    return tuple(value)


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


def _param_space(key: str, raw: Any, base: TrainConfig, where: str) -> ParamSpace:
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
        values = list(choices)
        space = ParamSpace(choices=tuple(choices))
    else:
        low, high, log = raw.get("low"), raw.get("high"), raw.get("log", False)
        numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (low, high))
        require(numeric, f"{where}search.space.{key} needs numeric low and high, got {raw!r}")
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


def _search(raw: Any, base: TrainConfig, where: str) -> SearchSpec:
    require(isinstance(raw, dict), f"{where}search must be a mapping with a 'space'")
    unknown = sorted(set(raw) - set(SEARCH_KEYS))
    require(not unknown, f"{where}unknown search key(s) {unknown}; valid: {', '.join(SEARCH_KEYS)}")
    space_raw = raw.get("space")
    require(
        isinstance(space_raw, dict) and space_raw,
        f"{where}search.space must map config keys to ranges, e.g. optim.lr: {{low: 1e-4, high: 1e-2, log: true}}",
    )
    space = {k: _param_space(k, v, base, where) for k, v in space_raw.items()}
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
    ints = {}
    for key, default, low in (
        ("trials", 20, 1),
        ("seed", 0, 0),
        ("n_startup_trials", 4, 0),
        ("n_warmup_steps", 1, 0),
        ("min_resource", 1, 1),
        ("reduction_factor", 3, 2),
    ):
        value = raw.get(key, default)
        require(
            isinstance(value, int) and not isinstance(value, bool) and value >= low,
            f"{where}search.{key}={value!r} must be an integer >= {low}",
        )
        ints[key] = value
    return SearchSpec(space=space, metric=metric, direction=direction, pruner=pruner, **ints)


# How cells train, not what they measure: one value per study, never a variant's.
STUDY_WIDE = ("trainer.seed_parallel", "trainer.cpu_threads", "trainer.order_seeds")


def spec_from_dict(
    raw: dict[str, Any],
    *,
    source: Path | None = None,
    overrides: list[str] | None = None,
    profile: str | None = None,
) -> ExperimentSpec:
    where = f"{source}: " if source else ""
    require(isinstance(raw, dict), f"{where}an experiment spec must be a YAML mapping")
    unknown = sorted(set(raw) - set(SPEC_KEYS))
    require(not unknown, f"{where}unknown experiment key(s) {unknown}; valid: {', '.join(SPEC_KEYS)}")
    for key in ("name", "base", "variants"):
        require(key in raw, f"{where}the experiment spec needs '{key}'")
    name = raw["name"]
    require(
        isinstance(name, str) and bool(NAME_RE.match(name)),
        f"{where}name={name!r}: use letters, digits, '_', '-', '.'",
    )

    base_raw = raw["base"]
    if isinstance(base_raw, str):
        path = Path(base_raw)
        if not path.is_absolute() and source is not None and not path.exists():
            path = source.parent / path
        base_raw = read_yaml(path)
    require(isinstance(base_raw, dict), f"{where}base must be a train config mapping or a path to one")
    base = TrainConfig.from_dict(base_raw)

    # The spec's own overrides, then a profile's, then the command line's.
    base_overrides: dict[str, Any] = parse_overrides(raw.get("overrides") or {})
    profiles = raw.get("profiles") or {}
    if profile is not None:
        require(
            profile in profiles, f"{where}no profile {profile!r}; this spec has {sorted(profiles) or 'none'}"
        )
        base_overrides.update(parse_overrides(profiles[profile] or {}))
    base_overrides.update(parse_overrides(overrides or []))
    base = base.override(base_overrides)

    variants_raw = raw["variants"]
    require(
        isinstance(variants_raw, dict) and variants_raw,
        f"{where}variants must be a non-empty mapping name -> overrides",
    )
    variants: dict[str, dict[str, Any]] = {}
    for vname, ov in variants_raw.items():
        require(
            isinstance(vname, str) and bool(NAME_RE.match(vname)),
            f"{where}variant name {vname!r} is not valid",
        )
        ov = parse_overrides(ov or {}) if isinstance(ov, (dict, list, type(None))) else None
        require(ov is not None, f"{where}variant {vname!r} must map dotted keys to values")
        require("seed" not in ov, f"{where}variant {vname!r} sets 'seed'; seeds come from the spec's seeds")
        shared = sorted(set(ov) & set(STUDY_WIDE))
        require(
            not shared,
            f"{where}variant {vname!r} sets {', '.join(shared)}: every cell of a study trains on the same "
            "path and numerics; set it in the base, the spec's overrides or on the command line",
        )
        try:
            cfg = base.override(ov)
        except ConfigError as err:
            raise ConfigError(f"{where}variant {vname!r}: {err}") from None
        if ov and cfg == base:
            raise ConfigError(f"{where}variant {vname!r} changes nothing: {ov} equals the base config")
        variants[vname] = ov
    baselines = [v for v, ov in variants.items() if not ov]
    require(
        len(baselines) == 1,
        f"{where}exactly one variant must have no overrides (the baseline); found {baselines or 'none'}",
    )

    adaptive = _adaptive(raw["seeds"], where) if isinstance(raw.get("seeds"), dict) else None
    seeds = tuple(range(adaptive.min)) if adaptive else _seeds(raw.get("seeds", 5), "seeds")
    factors = _seed_factors(raw["seed_factors"], where) if raw.get("seed_factors") is not None else None
    if factors is not None:
        require(
            "seeds" not in raw, f"{where}give seeds or seed_factors, not both (seed_factors sets the seeds)"
        )
        seeds = tuple(range(factors["init"] * factors["data_order"]))
        base_overrides["trainer.order_seeds"] = factors["data_order"]
        base = base.override({"trainer.order_seeds": factors["data_order"]})
    heatmap_seeds = _seeds(raw.get("heatmap_seeds", [seeds[0]]), "heatmap_seeds")
    missing = sorted(set(heatmap_seeds) - set(seeds))
    require(not missing, f"{where}heatmap_seeds {missing} are not among seeds {list(seeds)}")
    metric = raw.get("metric", "test/acc")
    extra_metrics = raw.get("extra_metrics") or []
    require(isinstance(extra_metrics, list), f"{where}extra_metrics must be a list of metric names")
    valid_metrics = [f"{s}/{m}" for s in ("val", "test", "test_long") for m in ("acc", "f1", "loss")]
    for m in [metric, *extra_metrics]:
        require(
            m in valid_metrics, f"{where}metric {m!r} is not logged; choose one of {', '.join(valid_metrics)}"
        )
        require(
            not m.startswith("test_long/") or base.data.long_test_factor > 0,
            f"{where}metric {m!r} needs data.long_test_factor > 0 in the base config",
        )
    direction = raw.get("direction", "maximize")
    require(
        direction in ("maximize", "minimize"),
        f"{where}direction={direction!r}; choose 'maximize' or 'minimize'",
    )
    tags = raw.get("tags") or []
    require(isinstance(tags, list), f"{where}tags must be a list")
    search = _search(raw["search"], base, where) if raw.get("search") is not None else None
    return ExperimentSpec(
        name=name,
        base=base,
        variants=variants,
        seeds=seeds,
        heatmap_seeds=heatmap_seeds,
        metric=metric,
        extra_metrics=tuple(extra_metrics),
        direction=direction,
        wandb_project=raw.get("wandb_project"),
        tags=tuple(str(t) for t in tags),
        description=str(raw.get("description", "")),
        base_overrides=base_overrides,
        search=search,
        adaptive=adaptive,
        seed_factors=factors,
    )


def load_spec(
    path: str | Path, overrides: list[str] | None = None, profile: str | None = None
) -> ExperimentSpec:
    path = Path(path)
    return spec_from_dict(read_yaml(path), source=path, overrides=overrides, profile=profile)


def spec_from_resolved(d: dict[str, Any]) -> ExperimentSpec:
    """Rebuild a spec from ``ExperimentSpec.to_dict()`` (overrides already applied)."""
    base = TrainConfig.from_dict(d["base"])
    return ExperimentSpec(
        name=d["name"],
        base=base,
        variants=d["variants"],
        seeds=tuple(d["seeds"]),
        heatmap_seeds=tuple(d["heatmap_seeds"]),
        metric=d["metric"],
        extra_metrics=tuple(d.get("extra_metrics", ())),
        direction=d["direction"],
        wandb_project=d.get("wandb_project"),
        tags=tuple(d.get("tags", ())),
        description=d.get("description", ""),
        base_overrides=d.get("base_overrides", {}),
        search=_search(d["search"], base, "") if d.get("search") else None,
        tuned=d.get("tuned"),
        adaptive=_adaptive(d["adaptive"], "") if d.get("adaptive") else None,
        extra_seeds={v: tuple(s) for v, s in (d.get("extra_seeds") or {}).items()},
        seed_factors=d.get("seed_factors"),
    )
