"""Reading an experiment spec file into an ``ExperimentSpec``, one section at a time
(``spec_from_dict``, ``load_spec``): names, the base and its plugins, profiles and overrides,
variants, seeds, metrics and labels, each checked with a message that names the file and key.
The keys a file may hold come from the spec's fields (spec.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from ablate.errors import ConfigError, require, user_path
from ablate.experiments.schema.config import TrainConfig
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
from ablate.experiments.specs.search_spec import parse_search
from ablate.experiments.specs.spec import (
    DEFAULTS,
    DIRECTIONS,
    REQUIRED_KEYS,
    SPEC_KEYS,
    ExperimentSpec,
)
from ablate.lit_modules.components.plugins import import_plugins

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # fullmatch: "x\n" is no name

METRICS = [f"{s}/{m}" for s in ("val", "test", "test_long") for m in ("acc", "f1", "loss")]

STUDY_WIDE = (
    "trainer.seed_parallel",
    "trainer.cpu_threads",
    "trainer.order_seeds",
    "trainer.numerics_levels",
    "trainer.cpu_isa",
    "plugins",
)


class _Source(NamedTuple):
    """Where a spec file's values come from: ``where`` starts its messages, ``folder`` anchors its
    relative paths."""

    where: str
    folder: Path


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
    src = _Source(f"{source}: " if source else "", source.parent if source is not None else Path.cwd())
    where = src.where
    name = _checked_keys(raw, where)
    base_overrides = _base_overrides(raw, src, profile, overrides)
    base = _base_with_plugins(raw, src, fallback="data.source" not in base_overrides)
    base = base.override(base_overrides)
    variants = _variants(raw, base, src)
    seeds, adaptive, factors = _seeds(raw, len(variants), where)
    if factors is not None:  # the factors' streams go on the base, after the variants' checks
        streams = _factor_streams(factors)
        base_overrides.update(streams)
        base = base.override(streams)
    heatmap_seeds = _heatmap_seeds(raw, seeds, where)
    metric, extra_metrics, direction = _metrics(raw, base, where)
    tags, description, wandb_project = _labels(raw, where)
    search = parse_search(raw["search"], base, where, src.folder) if raw.get("search") is not None else None
    compare = _compare(raw.get("compare"), variants, where)
    margin = _margin(raw.get("margin"), variants, compare, where)
    return ExperimentSpec(
        name=name,
        base=base,
        variants=variants,
        seeds=seeds,
        heatmap_seeds=heatmap_seeds,
        metric=metric,
        extra_metrics=extra_metrics,
        direction=direction,
        wandb_project=wandb_project,
        tags=tags,
        description=description,
        base_overrides=base_overrides,
        search=search,
        adaptive=adaptive,
        seed_factors=factors,
        compare=compare,
        margin=margin,
    )


def _checked_keys(raw: Any, where: str) -> str:
    """A mapping with known keys (``SPEC_KEYS``) and the required ones; its valid name."""
    require(isinstance(raw, dict), f"{where}an experiment spec must be a YAML mapping")
    as_mapping(raw, f"{where}the experiment spec")
    unknown = sorted(set(raw) - set(SPEC_KEYS))
    require(not unknown, f"{where}unknown experiment key(s) {unknown}; valid: {', '.join(SPEC_KEYS)}")
    for key in REQUIRED_KEYS:
        require(key in raw, f"{where}the experiment spec needs '{key}'")
    name = raw["name"]
    require(
        isinstance(name, str) and bool(NAME_RE.fullmatch(name)),
        f"{where}name={name!r}: use letters, digits, '_', '-', '.'",
    )
    return name


def _base_with_plugins(raw: dict[str, Any], src: _Source, *, fallback: bool) -> TrainConfig:
    """``plugins:`` imported (before the base: it may already name a plugin's component), then
    ``base:`` with them added to its own (``fallback``: as ``absolute_sections``)."""
    plugins = absolute_plugins(raw.get("plugins") or [], src.folder)
    require(
        isinstance(plugins, list) and all(isinstance(p, str) and p.strip() for p in plugins),
        f"{src.where}plugins must be a list of module names or .py files, got {raw.get('plugins')!r}",
    )
    import_plugins(plugins)
    base = _base(raw["base"], src.folder, src.where, fallback)
    return base.override({"plugins": [*base.plugins, *plugins]}) if plugins else base


def _base_overrides(
    raw: dict[str, Any], src: _Source, profile: str | None, overrides: list[str] | None
) -> dict[str, Any]:
    """The spec's own overrides, then a profile's, then the command line's. Every profile is
    type-checked; the chosen one is applied."""
    where = src.where
    base_overrides = _file_overrides(raw.get("overrides"), f"{where}overrides", src.folder)
    profiles = as_mapping(raw.get("profiles"), f"{where}profiles")
    parsed = {
        name: _file_overrides(p, f"{where}profile {name!r}", src.folder) for name, p in profiles.items()
    }
    if profile is not None:
        require(
            profile in profiles, f"{where}no profile {profile!r}; this spec has {sorted(profiles) or 'none'}"
        )
        base_overrides.update(parsed[profile])
    base_overrides.update(absolute_paths(parse_overrides(overrides, "the command line"), Path.cwd()))
    return base_overrides


def _variants(raw: dict[str, Any], base: TrainConfig, src: _Source) -> dict[str, dict[str, Any]]:
    """Every variant's overrides, each checked on the base; exactly one baseline (no overrides)."""
    where = src.where
    variants_raw = as_mapping(raw["variants"], f"{where}variants")
    require(bool(variants_raw), f"{where}variants must be a non-empty mapping name -> overrides")
    variants = {vname: _variant(vname, ov, base, src) for vname, ov in variants_raw.items()}
    baselines = [v for v, ov in variants.items() if not ov]
    require(
        len(baselines) == 1,
        f"{where}exactly one variant must have no overrides (the baseline); found {baselines or 'none'}",
    )
    return variants


def _variant(vname: str, value: Any, base: TrainConfig, src: _Source) -> dict[str, Any]:
    """One variant's overrides: a valid name, no seed and no study-wide key, a valid config that
    differs from the base and fits in memory."""
    where = src.where
    require(bool(NAME_RE.fullmatch(vname)), f"{where}variant name {vname!r} is not valid")
    ov = _file_overrides(value, f"{where}variant {vname!r}", src.folder)
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
    return ov


def _seeds(
    raw: dict[str, Any], n_variants: int, where: str
) -> tuple[tuple[int, ...], AdaptiveSeeds | None, dict[str, int] | None]:
    """(seeds, an adaptive schedule, seed factors): ``seeds:`` a count, a list or a schedule
    (default: enough for the comparisons), or ``seed_factors:`` instead, which sets them."""
    adaptive = parse_adaptive(raw["seeds"], where) if isinstance(raw.get("seeds"), dict) else None
    seeds = (
        tuple(range(adaptive.min))
        if adaptive
        else parse_seeds(raw.get("seeds", default_seed_count(n_variants - 1)), "seeds")
    )
    factors = parse_seed_factors(raw["seed_factors"], where) if raw.get("seed_factors") is not None else None
    if factors is not None:
        require(
            "seeds" not in raw, f"{where}give seeds or seed_factors, not both (seed_factors sets the seeds)"
        )
        seeds = tuple(range(factors["init"] * factors["data_order"] * factors.get("numerics", 1)))
    return seeds, adaptive, factors


def _factor_streams(factors: dict[str, int]) -> dict[str, int]:
    """The base overrides that cross the factors (TrainConfig.seed_streams)."""
    streams = {"trainer.order_seeds": factors["data_order"]}
    if "numerics" in factors:  # absent: the base keeps numerics_levels 1, as before it existed
        streams["trainer.numerics_levels"] = factors["numerics"]
    return streams


def _heatmap_seeds(raw: dict[str, Any], seeds: tuple[int, ...], where: str) -> tuple[int, ...]:
    heatmap_seeds = parse_seeds(raw.get("heatmap_seeds", [seeds[0]]), "heatmap_seeds")
    missing = sorted(set(heatmap_seeds) - set(seeds))
    require(not missing, f"{where}heatmap_seeds {missing} are not among seeds {list(seeds)}")
    return heatmap_seeds


def _metrics(raw: dict[str, Any], base: TrainConfig, where: str) -> tuple[str, tuple[str, ...], str]:
    """(metric, extra_metrics, direction): logged metrics (test_long needs its split), and the
    direction the metric calls for."""
    metric = raw.get("metric", DEFAULTS["metric"])
    extra_metrics = raw.get("extra_metrics") or []
    require(isinstance(extra_metrics, list), f"{where}extra_metrics must be a list of metric names")
    for m in [metric, *extra_metrics]:
        require(m in METRICS, f"{where}metric {m!r} is not logged; choose one of {', '.join(METRICS)}")
        require(
            not m.startswith("test_long/") or base.data.long_test_factor > 0,
            f"{where}metric {m!r} needs data.long_test_factor > 0 in the base config",
        )
    direction = raw.get("direction", DEFAULTS["direction"])
    require(
        direction in DIRECTIONS,
        f"{where}direction={direction!r}; choose {' or '.join(map(repr, DIRECTIONS))}",
    )
    wanted = "minimize" if metric.endswith("/loss") else "maximize"
    require(
        direction == wanted,
        f"{where}metric {metric!r} is {'a loss: lower' if wanted == 'minimize' else 'a score: higher'} is "
        f"better, so direction must be {wanted!r}, not {direction!r}",
    )
    return metric, tuple(extra_metrics), direction


def _labels(raw: dict[str, Any], where: str) -> tuple[tuple[str, ...], str, str | None]:
    """(tags, description, wandb_project): what names the study, checked as text."""
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
    return (
        tuple(str(t) for t in tags),
        raw.get("description") or DEFAULTS["description"],
        raw.get("wandb_project"),
    )


def _compare(value: Any, variants: dict[str, dict[str, Any]], where: str) -> tuple[tuple[str, str], ...]:
    """``compare:``: pairs of non-baseline variants (a list of [a, b] or "a vs b"), or ``all``."""
    others = [v for v, ov in variants.items() if ov]
    if value is None:
        return ()
    if value == "all":
        return tuple((a, b) for i, a in enumerate(others) for b in others[i + 1 :])
    require(
        isinstance(value, list),
        f"{where}compare must be `all` or a list of pairs [a, b] (or 'a vs b'), got {value!r}",
    )
    pairs: list[tuple[str, str]] = []
    for item in value:
        pair = item.split(" vs ") if isinstance(item, str) else item
        require(
            isinstance(pair, list) and len(pair) == 2 and pair[0] != pair[1],
            f"{where}compare: {item!r} is not a pair of two different variants ([a, b] or 'a vs b')",
        )
        for name in pair:
            require(
                name in others,
                f"{where}compare: {name!r} is not a variant to compare"
                + (" (the baseline is compared with every variant already)" if name in variants else "")
                + f"; choose from {', '.join(others)}",
            )
        require(
            (pair[0], pair[1]) not in pairs and (pair[1], pair[0]) not in pairs,
            f"{where}compare: {pair[0]} and {pair[1]} are listed twice",
        )
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _margin(
    value: Any, variants: dict[str, dict[str, Any]], compare: tuple[tuple[str, str], ...], where: str
) -> dict[str, float]:
    """``margin:``: a number > 0 for every comparison, or comparison -> number (``default`` for
    the rest), in the metric's units."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        value = {"default": value}
    names = ["default", *(v for v, ov in variants.items() if ov), *(f"{a} vs {b}" for a, b in compare)]
    for key, m in value.items():
        require(key in names, f"{where}margin: no comparison {key!r}; choose from {', '.join(names)}")
        require(
            isinstance(m, (int, float)) and not isinstance(m, bool) and 0 < m < float("inf"),
            f"{where}margin {key}: {m!r} must be a number > 0 (the smallest effect that matters, in the "
            "metric's units, e.g. 0.01 for one point of accuracy)",
        )
    return {k: float(m) for k, m in value.items()}


def _base(value: Any, folder: Path, where: str, fallback: bool = True) -> TrainConfig:
    """``base:``, a train config inline or a path to one: relative to the spec's folder, and the
    base file's own relative paths relative to its folder."""
    if isinstance(value, str):
        path = folder / user_path(value, f"{where}base")
        value, folder = read_yaml(path), path.parent
    require(isinstance(value, dict), f"{where}base must be a train config mapping or a path to one")
    return TrainConfig.from_dict(absolute_sections(value, folder, fallback=fallback))


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
