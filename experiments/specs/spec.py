"""ExperimentSpec: named variants x seeds over one base train config.

A variant is a set of dotted overrides on the base; the baseline is the one
variant with none. Validation happens before anything runs: every variant
must build a valid TrainConfig, change at least one value, and name existing
keys only.

One schema: each field of ``ExperimentSpec`` says which key of a spec file gives it, whether a
file must have it, and how it is written to spec.json and read back (``_spec_field``). The keys
a spec file may hold (``SPEC_KEYS``), the required ones, ``to_dict`` and ``spec_from_resolved``
are read from the fields; spec_file.py reads a spec file one section at a time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ablate.errors import ConfigError, choices, require
from ablate.experiments.schema.config import TrainConfig, without_later_defaults
from ablate.experiments.schema.parsing import parse_overrides
from ablate.experiments.schema.seeds import (
    AdaptiveSeeds,
    parse_adaptive,
)
from ablate.experiments.specs.search_spec import SearchSpec, parse_search
from ablate.lit_modules.model import registry

Loaded = dict[str, Any]  # the fields spec_from_resolved has read so far (search needs the base)


def _spec_field(
    default: Any = dataclasses.MISSING,
    *,
    doc: str,
    key: str | None = None,
    required: bool = False,
    newer: bool = False,
    dump: Callable[[Any], Any] | None = None,
    load: Callable[[Any, Loaded], Any] | None = None,
    factory: Any = dataclasses.MISSING,
) -> Any:
    """A field of the spec and its rules: ``key``, the spec file's key that gives it (None: the
    file does not name it); ``required``, a file must have that key; ``newer``, spec.json files
    from before the field existed lack it (absent reads as the default); ``dump`` and ``load``,
    its value to spec.json and back (None: as it is)."""
    metadata = {"doc": doc, "key": key, "required": required, "newer": newer, "dump": dump, "load": load}
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


def _to_dict(value: Any) -> Any:
    return None if value is None else value.to_dict()


def _tuple(value: Any, _: Loaded) -> tuple:
    return tuple(value)


def _seed_lists(value: dict[str, tuple[int, ...]]) -> dict[str, list[int]]:
    return {v: list(s) for v, s in value.items()}


def _seed_tuples(value: dict[str, list[int]] | None, _: Loaded) -> dict[str, tuple[int, ...]]:
    return {v: tuple(s) for v, s in (value or {}).items()}


def _load_base(value: dict[str, Any], _: Loaded) -> TrainConfig:
    return TrainConfig.from_dict(value)


def _load_search(value: dict[str, Any] | None, loaded: Loaded) -> SearchSpec | None:
    return parse_search(value, loaded["base"], "") if value else None


def _load_adaptive(value: dict[str, Any] | None, _: Loaded) -> AdaptiveSeeds | None:
    return parse_adaptive(value, "") if value else None


@dataclass(frozen=True, kw_only=True)
class ExperimentSpec:
    # The fields in the order spec.json holds them (to_dict).
    name: str = _spec_field(key="name", required=True, doc="the study's name: letters, digits, _ - .")
    description: str = _spec_field("", key="description", newer=True, doc="one line about the study")
    base: TrainConfig = _spec_field(
        key="base", required=True, dump=_to_dict, load=_load_base, doc="the train config, inline or a path"
    )
    variants: dict[str, dict[str, Any]] = _spec_field(
        key="variants", required=True, doc="variant name -> dotted overrides; the baseline has none"
    )
    seeds: tuple[int, ...] = _spec_field(
        key="seeds", dump=list, load=_tuple, doc="a count (0..n-1), a list, or an adaptive schedule"
    )
    heatmap_seeds: tuple[int, ...] = _spec_field(
        key="heatmap_seeds", dump=list, load=_tuple, doc="the seeds whose attention maps are drawn"
    )
    metric: str = _spec_field(
        "test/acc", key="metric", doc="the primary metric (val|test|test_long / acc|f1|loss)"
    )
    extra_metrics: tuple[str, ...] = _spec_field(
        (),
        key="extra_metrics",
        newer=True,
        dump=list,
        load=_tuple,
        doc="further metrics reported with the same statistics (e.g. test_long/acc)",
    )
    direction: Literal["maximize", "minimize"] = _spec_field(
        "maximize", key="direction", doc="maximize a score, minimize a loss"
    )
    wandb_project: str | None = _spec_field(None, key="wandb_project", newer=True, doc="the W&B project")
    tags: tuple[str, ...] = _spec_field((), key="tags", newer=True, dump=list, load=_tuple, doc="W&B tags")
    base_overrides: dict[str, Any] = _spec_field(
        key="overrides",
        newer=True,
        factory=dict,
        doc="the overrides applied to the base: the file's, then a profile's, then the command line's",
    )
    search: SearchSpec | None = _spec_field(
        None,
        key="search",
        newer=True,
        dump=_to_dict,
        load=_load_search,
        doc="per-variant tuning (ablate search)",
    )
    tuned: dict[str, dict[str, Any]] | None = _spec_field(
        None, newer=True, doc="set by `ablate search --then-evaluate`: variant -> tuned parameters"
    )
    adaptive: AdaptiveSeeds | None = _spec_field(
        None, newer=True, dump=_to_dict, load=_load_adaptive, doc="adaptive seeds (`seeds: {min, ...}`)"
    )
    # seed s = (init x c + numerics) x b + order (TrainConfig.seed_streams; c = 1 without numerics).
    seed_factors: dict[str, int] | None = _spec_field(
        None,
        key="seed_factors",
        newer=True,
        doc="`{init: a, data_order: b[, numerics: c]}`: crossed seed factors, seeds 0..abc-1",
    )
    extra_seeds: dict[str, tuple[int, ...]] = _spec_field(
        newer=True,
        factory=dict,
        dump=_seed_lists,
        load=_seed_tuples,
        doc="the seeds that adaptive rounds added, per variant",
    )
    # How the results are read, not what they are: neither is part of the identity, so a margin
    # or a comparison can be added to a finished study (`ablate report` rereads spec.json).
    margin: dict[str, float] = _spec_field(
        key="margin",
        newer=True,
        factory=dict,
        doc="the smallest effect that matters, in the metric's units: a number, or comparison -> number "
        "(`default:` for the rest); a comparison with one also gets an equivalence test",
    )
    compare: tuple[tuple[str, str], ...] = _spec_field(
        (),
        key="compare",
        newer=True,
        dump=lambda pairs: [list(p) for p in pairs],
        load=lambda value, _: tuple(tuple(p) for p in value),
        doc="pairs of variants compared with each other as well: a list of [a, b], or `all`",
    )

    @property
    def baseline(self) -> str:
        return next(name for name, ov in self.variants.items() if not ov)

    def comparisons(self) -> list[str]:
        """Every comparison's name: each variant against the baseline (its name), then each
        ``compare:`` pair ("a vs b")."""
        return [v for v in self.variants if v != self.baseline] + [f"{a} vs {b}" for a, b in self.compare]

    def margin_for(self, comparison: str) -> float | None:
        """The equivalence margin of a comparison (its own, else ``default``), None without one."""
        return self.margin.get(comparison, self.margin.get("default"))

    def margins(self) -> dict[str, float]:
        """comparison -> margin, for the comparisons that have one."""
        return {c: m for c in self.comparisons() if (m := self.margin_for(c)) is not None}

    def cells(self) -> list[tuple[str, int]]:
        """Every (variant, seed) pair, seed-major so early results cover all variants; then the
        seeds that adaptive rounds added to some variants."""
        extra = sorted((s, v) for v, seeds in self.extra_seeds.items() for s in seeds)
        return [(v, s) for s in self.seeds for v in self.variants] + [(v, s) for s, v in extra]

    def all_seeds(self) -> list[int]:
        return sorted({s for _, s in self.cells()})

    def cell_config(self, variant: str, seed: int) -> TrainConfig:
        return self.base.override({**self.variants[variant], "seed": seed})

    def identity(self, *, full_source: bool = False) -> str:
        """Hash of what makes results comparable: the base, the variants, the metric, and the code
        of every plugin and non-built-in component the cells use.

        Seeds are not part of it, so a study can grow by more seeds later; keys added to the config
        after studies existed count only away from their defaults (LATER_DEFAULTS). A plugin counts
        by its code (plugins.code_hash: its tokens without comments, docstrings and layout), so a
        study resumes after an edit of its comments or docstrings and refuses any other; with
        ``full_source``, by its full source, as studies recorded it before (sweeps/ledger/identity.py
        still resumes those).
        """
        payload: dict[str, Any] = {
            "base": without_later_defaults(self.base.to_dict()),
            "variants": self.variants,
            "metric": self.metric,
        }
        sources = self.plugin_sources(full_source=full_source)
        if sources:
            payload["plugins"] = sources
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def plugin_records(self) -> list[dict[str, Any]]:
        """What the study records of its plugins (lit_modules/components/plugins.py ``record``): each declared
        plugin, and the module of every component a cell uses that is neither built in nor declared."""
        from ablate.lit_modules.components import plugins

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

    def plugin_sources(self, *, full_source: bool = False) -> dict[str, str | None]:
        """plugin (file name or module) -> SHA-256 of its code, for the identity (empty without);
        with ``full_source``, of its full source (``identity``)."""
        if not full_source:
            return {r["name"]: r["sha256"] for r in self.plugin_records()}
        from ablate.lit_modules.components.plugins import source_hash

        return {r["name"]: source_hash(sys.modules[r["module"]]) for r in self.plugin_records()}

    def to_dict(self) -> dict[str, Any]:
        """What spec.json holds: every field as JSON data, in field order, then the SHA-256 of
        each plugin's code and of each local data file the cells read (when there are any)."""
        out = {f.name: _dumped(f, getattr(self, f.name)) for f in FIELDS}
        if sources := self.plugin_sources():
            out["plugin_sources"] = sources
        if data := self.data_sources():
            out["data_sources"] = data
        return out


def _dumped(f: dataclasses.Field, value: Any) -> Any:
    dump = f.metadata["dump"]
    return value if dump is None else dump(value)


log = logging.getLogger(__name__)
FIELDS = dataclasses.fields(ExperimentSpec)
DEFAULTS = {f.name: f.default for f in FIELDS if f.default is not dataclasses.MISSING}
# Keys of a spec file that fill no field of their own: profiles (named base overrides, one chosen
# by --profile) and plugins (added to the base's plugins).
FILE_ONLY_KEYS = ("profiles", "plugins")
SPEC_KEYS = (*(f.metadata["key"] for f in FIELDS if f.metadata["key"]), *FILE_ONLY_KEYS)
REQUIRED_KEYS = tuple(f.metadata["key"] for f in FIELDS if f.metadata["required"])
DIRECTIONS: tuple[str, ...] = choices(ExperimentSpec, "direction")  # type: ignore[assignment]


# What spec.json holds besides the fields (ExperimentSpec.to_dict): a RecordedSpec reads them back.
RECORDED_KEYS = ("plugin_sources", "data_sources")


@dataclass(frozen=True, kw_only=True)
class RecordedSpec(ExperimentSpec):
    """A study's spec read back from its spec.json to read its results (``spec_from_resolved``
    with ``reading``): its configs are built without importing its plugins or checking their
    components (registry.reading), and the hashes spec.json recorded stand for its plugins and
    data files, so that its identity is the study's whether or not they are still there. What
    trains (the workers, ``ablate verify``) reads spec.json as an ExperimentSpec instead."""

    recorded: dict[str, dict[str, str | None]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )

    def cell_config(self, variant: str, seed: int) -> TrainConfig:
        with registry.reading():
            return super().cell_config(variant, seed)

    def plugin_sources(self, *, full_source: bool = False) -> dict[str, str | None]:
        """As recorded (by code or, for a study recorded before, by full source)."""
        return dict(self.recorded.get("plugin_sources") or {})

    def data_sources(self) -> dict[str, str]:
        return dict(self.recorded.get("data_sources") or {})  # type: ignore[arg-type]

    def plugin_records(self) -> list[dict[str, Any]]:
        """plugins.recorded of each recorded plugin: its file and hash, nothing imported."""
        from ablate.lit_modules.components import plugins

        entries = {plugins.name_of(e): e for e in self.base.plugins}
        records = [
            plugins.recorded(entries.get(n) or plugins.entry_of(n, self.base.plugins) or n, h)
            for n, h in self.plugin_sources().items()
        ]
        return sorted(records, key=lambda r: r["module"])


def spec_from_resolved(d: dict[str, Any], *, reading: bool | None = None) -> ExperimentSpec:
    """Rebuild a spec from ``ExperimentSpec.to_dict()`` (overrides already applied): each field
    read by its ``load``; a ``newer`` field's absent key is its default, another's a KeyError.

    With ``reading`` (None: whether this runs inside registry.reading(), as the commands that read
    results do), a RecordedSpec: no plugin is imported. Otherwise the plugins are imported, as
    training needs them."""
    if reading is None:
        reading = registry.is_reading()
    if not reading:
        return ExperimentSpec(**_loaded(d))
    with registry.reading():
        loaded = _loaded(d)
    return RecordedSpec(**loaded, recorded={k: dict(d.get(k) or {}) for k in RECORDED_KEYS})


def _loaded(d: dict[str, Any]) -> Loaded:
    loaded: Loaded = {}
    for f in FIELDS:
        if f.name not in d and f.metadata["newer"]:
            continue
        load = f.metadata["load"]
        loaded[f.name] = d[f.name] if load is None else load(d[f.name], loaded)
    return loaded


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
        log.warning("note: variant %s sets %s=%r; %s=%r not applied", variant, key, own[key], key, extra[key])
    return variant, seed, spec.base.override({**extra, **own, "seed": seed})
