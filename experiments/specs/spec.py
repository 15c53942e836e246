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
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ablate.errors import ConfigError, require, user_path
from ablate.experiments.schema.config import TrainConfig, without_later_defaults
from ablate.experiments.schema.memory import check_memory
from ablate.experiments.schema.parsing import as_mapping, parse_overrides
from ablate.experiments.schema.seeds import (
    AdaptiveSeeds,
    default_seed_count,
    parse_adaptive,
    parse_seed_factors,
    parse_seeds,
)
from ablate.experiments.specs.loading import absolute_paths, absolute_plugins, absolute_sections, read_yaml
from ablate.experiments.specs.search_spec import SearchSpec, parse_search
from ablate.lit_modules.components.plugins import import_plugins

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
    "plugins",
)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # fullmatch: "x\n" is no name


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
    # ``seed_factors: {init: a, data_order: b[, numerics: c]}``: seeds 0..abc-1, seed
    # s = (init x c + numerics) x b + order (TrainConfig.seed_streams; c = 1 without numerics).
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
        """Hash of what makes results comparable: the base, the variants, the metric, and the source
        of every plugin and non-built-in component the cells use.

        Seeds are not part of it, so a study can grow by more seeds later; keys added to the config
        after studies existed count only away from their defaults (LATER_DEFAULTS).
        """
        payload: dict[str, Any] = {
            "base": without_later_defaults(self.base.to_dict()),
            "variants": self.variants,
            "metric": self.metric,
        }
        sources = self.plugin_sources()
        if sources:
            payload["plugins"] = sources
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def plugin_records(self) -> list[dict[str, Any]]:
        """What the study records of its plugins (lit_modules/components/plugins.py ``record``): each declared
        plugin, and the module of every component a cell uses that is neither built in nor declared."""
        from ablate.lit_modules.components import plugins
        from ablate.lit_modules.model import registry

        out = {r["module"]: r for r in (plugins.record(e) for e in self.base.plugins)}
        for v in self.variants:
            model = self.cell_config(v, self.seeds[0]).model
            for kind, cls in registry.active(model).items():
                name = getattr(model, registry.CONFIG_KEYS[kind])
                if not registry.is_builtin(kind, name) and cls.__module__ not in out:
                    out[cls.__module__] = plugins.record(cls.__module__, sys.modules[cls.__module__])
        return sorted(out.values(), key=lambda r: r["module"])

    def data_sources(self) -> dict[str, str]:
        """Local data file -> SHA-256 of its content, over every variant's text data (empty for
        synthetic tasks and hub data sets): recorded with the study, so that a study refuses to
        resume after a data file changed."""
        out: dict[str, str] = {}
        for v in self.variants:
            data = self.cell_config(v, self.seeds[0]).data
            if data.task == "text" and data.source:
                from ablate.datamodules.sources import content_hashes

                out.update(content_hashes(data.source))
        return out

    def plugin_sources(self) -> dict[str, str | None]:
        """plugin (file name or module) -> SHA-256 of its source, for the identity (empty without)."""
        return {r["name"]: r["sha256"] for r in self.plugin_records()}

    def to_dict(self) -> dict[str, Any]:
        return (
            {
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
            | ({"plugin_sources": sources} if (sources := self.plugin_sources()) else {})
            | ({"data_sources": data} if (data := self.data_sources()) else {})
        )


STUDY_WIDE = (
    "trainer.seed_parallel",
    "trainer.cpu_threads",
    "trainer.order_seeds",
    "trainer.numerics_levels",
    "trainer.cpu_isa",
    "plugins",
)


def spec_from_dict(
    raw: dict[str, Any],
    *,
    source: Path | None = None,
    overrides: list[str] | None = None,
    profile: str | None = None,
) -> ExperimentSpec:
    """Build and validate a spec. Relative paths in it (``base:``, ``data.source``) resolve against
    the folder of ``source`` (the current folder without one); ``overrides`` (the command line's)
    against the current folder."""
    where = f"{source}: " if source else ""
    folder = source.parent if source is not None else Path.cwd()
    require(isinstance(raw, dict), f"{where}an experiment spec must be a YAML mapping")
    as_mapping(raw, f"{where}the experiment spec")
    unknown = sorted(set(raw) - set(SPEC_KEYS))
    require(not unknown, f"{where}unknown experiment key(s) {unknown}; valid: {', '.join(SPEC_KEYS)}")
    for key in ("name", "base", "variants"):
        require(key in raw, f"{where}the experiment spec needs '{key}'")
    name = raw["name"]
    require(
        isinstance(name, str) and bool(NAME_RE.fullmatch(name)),
        f"{where}name={name!r}: use letters, digits, '_', '-', '.'",
    )

    plugins = absolute_plugins(raw.get("plugins") or [], folder)
    require(
        isinstance(plugins, list) and all(isinstance(p, str) and p.strip() for p in plugins),
        f"{where}plugins must be a list of module names or .py files, got {raw.get('plugins')!r}",
    )
    import_plugins(plugins)  # before the base: it may already name a plugin's component
    base = _base(raw["base"], folder, where)
    if plugins:
        base = base.override({"plugins": [*base.plugins, *plugins]})

    # The spec's own overrides, then a profile's, then the command line's.
    base_overrides = _file_overrides(raw.get("overrides"), f"{where}overrides", folder)
    profiles = as_mapping(raw.get("profiles"), f"{where}profiles")
    # Every profile is type-checked; the chosen one is applied.
    parsed = {name: _file_overrides(p, f"{where}profile {name!r}", folder) for name, p in profiles.items()}
    if profile is not None:
        require(
            profile in profiles, f"{where}no profile {profile!r}; this spec has {sorted(profiles) or 'none'}"
        )
        base_overrides.update(parsed[profile])
    base_overrides.update(absolute_paths(parse_overrides(overrides, "the command line"), Path.cwd()))
    base = base.override(base_overrides)

    variants_raw = as_mapping(raw["variants"], f"{where}variants")
    require(bool(variants_raw), f"{where}variants must be a non-empty mapping name -> overrides")
    variants: dict[str, dict[str, Any]] = {}
    for vname, ov in variants_raw.items():
        require(bool(NAME_RE.fullmatch(vname)), f"{where}variant name {vname!r} is not valid")
        ov = _file_overrides(ov, f"{where}variant {vname!r}", folder)
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
        try:
            check_memory(cfg)
        except ConfigError as err:
            raise ConfigError(f"{where}variant {vname!r}: {err}") from None
        variants[vname] = ov
    baselines = [v for v, ov in variants.items() if not ov]
    require(
        len(baselines) == 1,
        f"{where}exactly one variant must have no overrides (the baseline); found {baselines or 'none'}",
    )

    adaptive = parse_adaptive(raw["seeds"], where) if isinstance(raw.get("seeds"), dict) else None
    seeds = (
        tuple(range(adaptive.min))
        if adaptive
        else parse_seeds(raw.get("seeds", default_seed_count(len(variants) - 1)), "seeds")
    )
    factors = parse_seed_factors(raw["seed_factors"], where) if raw.get("seed_factors") is not None else None
    if factors is not None:
        require(
            "seeds" not in raw, f"{where}give seeds or seed_factors, not both (seed_factors sets the seeds)"
        )
        streams = {"trainer.order_seeds": factors["data_order"]}
        if "numerics" in factors:  # absent: the base keeps numerics_levels 1, as before it existed
            streams["trainer.numerics_levels"] = factors["numerics"]
        seeds = tuple(range(factors["init"] * factors["data_order"] * factors.get("numerics", 1)))
        base_overrides.update(streams)
        base = base.override(streams)
    heatmap_seeds = parse_seeds(raw.get("heatmap_seeds", [seeds[0]]), "heatmap_seeds")
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
    wanted = "minimize" if metric.endswith("/loss") else "maximize"
    require(
        direction == wanted,
        f"{where}metric {metric!r} is {'a loss: lower' if wanted == 'minimize' else 'a score: higher'} is "
        f"better, so direction must be {wanted!r}, not {direction!r}",
    )
    tags = raw.get("tags") or []
    require(
        isinstance(tags, list) and all(_is_scalar(t) for t in tags),
        f"{where}tags must be a list of strings, got {tags!r}",
    )
    for key in ("description", "wandb_project"):
        value = raw.get(key)
        require(
            value is None or isinstance(value, str),
            f"{where}{key} must be a string, got {type(value).__name__} {value!r}",
        )
    search = parse_search(raw["search"], base, where, folder) if raw.get("search") is not None else None
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
        description=raw.get("description") or "",
        base_overrides=base_overrides,
        search=search,
        adaptive=adaptive,
        seed_factors=factors,
    )


def _base(value: Any, folder: Path, where: str) -> TrainConfig:
    """``base:``, a train config inline or a path to one: relative to the spec's folder, and the
    base file's own relative paths relative to its folder."""
    if isinstance(value, str):
        path = folder / user_path(value, f"{where}base")
        value, folder = read_yaml(path), path.parent
    require(isinstance(value, dict), f"{where}base must be a train config mapping or a path to one")
    return TrainConfig.from_dict(absolute_sections(value, folder))


def _file_overrides(value: Any, place: str, folder: Path) -> dict[str, Any]:
    """Dotted overrides written in a spec (a mapping, or nothing): paths relative to its folder."""
    return absolute_paths(parse_overrides(as_mapping(value, place), place), folder)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def load_spec(
    path: str | Path,
    overrides: list[str] | None = None,
    profile: str | None = None,
    seeds: int | None = None,
) -> ExperimentSpec:
    """The spec file, validated, and refused if this machine cannot run some variant; ``seeds``
    (``--seeds N``) replaces the file's ``seeds:``."""
    path = Path(path)
    raw = read_yaml(path)
    if seeds is not None and isinstance(raw, dict):
        require(
            "seed_factors" not in raw,
            f"{path}: --seeds {seeds} cannot replace seed_factors (they set the seeds); edit the spec",
        )
        raw = {**raw, "seeds": seeds}
    return checked(spec_from_dict(raw, source=path, overrides=overrides, profile=profile))


def checked(spec: ExperimentSpec) -> ExperimentSpec:
    """``spec``, refused if this machine cannot run some variant (a GPU profile on a CPU)."""
    for variant in spec.variants:
        spec.cell_config(variant, spec.seeds[0]).trainer.check_machine()
    return spec


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
        search=parse_search(d["search"], base, "") if d.get("search") else None,
        tuned=d.get("tuned"),
        adaptive=parse_adaptive(d["adaptive"], "") if d.get("adaptive") else None,
        extra_seeds={v: tuple(s) for v, s in (d.get("extra_seeds") or {}).items()},
        seed_factors=d.get("seed_factors"),
    )


def cell_from_args(spec: ExperimentSpec, args: list[str]) -> tuple[str, int, TrainConfig]:
    """``variant=NAME [seed=N] [key=value ...]`` -> (variant, seed, config).

    The other overrides go on the base and the variant's own overrides last,
    as ``ablate sweep`` applies command-line overrides: a variant is defined by
    what it sets, so a sampled value of a key it sets does not replace it.
    """
    rest: list[str] = []
    variant: str | None = None
    for item in args:
        key, sep, value = item.partition("=")
        if sep and key.strip() == "variant":
            variant = value.strip()
        else:
            rest.append(item)
    if variant not in spec.variants:
        problem = f"no variant {variant!r} in" if variant else "variant=NAME is required with"
        raise ConfigError(f"{problem} {spec.name}; choose one of {', '.join(spec.variants)}")
    extra = parse_overrides(rest)
    seed = extra.pop("seed", spec.seeds[0])
    require(
        isinstance(seed, int) and not isinstance(seed, bool),
        f"seed={seed!r} must be an integer (the spec's seeds: {list(spec.seeds)})",
    )
    own = spec.variants[variant]
    for key in sorted(set(extra) & set(own)):
        print(
            f"note: variant {variant} sets {key}={own[key]!r}; {key}={extra[key]!r} not applied",
            file=sys.stderr,
        )
    return variant, seed, spec.base.override({**extra, **own, "seed": seed})
