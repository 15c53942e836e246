"""Fuzzing the input surface (issue 13): Hypothesis generates train configs, override lists,
experiment specs and small data files and runs them through validation and data loading
in-process. The property: a valid result (a config, a spec, loaded splits) or a ConfigError
(DataError is one) with a message; any other exception would be a traceback at the command
line. Nothing trains.

Generation starts from a valid tiny config or spec and mutates a few values, so that each odd
value meets an otherwise valid input and reaches the check meant for it. Bounded and
deterministic: the ``FUZZ`` settings derandomize (the same examples on every run), keep no
example database, and fix the example count (370 in all). A failure prints the shrunk input:
keep it as a case of ``test_found_by_fuzzing`` at the end of this file.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import datasets
import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from pyarrow.lib import ArrowException

from ablate.datamodules import ClassificationDataModule, sources
from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError, choices
from ablate.experiments.schema.config import SECTIONS, TrainConfig
from ablate.experiments.schema.parsing import parse_overrides
from ablate.experiments.specs.loading import load_config
from ablate.experiments.specs.spec import SPEC_KEYS, spec_from_resolved
from ablate.experiments.specs.spec_file import NAME_RE, load_spec, spec_from_dict
from ablate.files import input_file, output_folder
from tests.helpers.configs import TINY_BASE

# Hypothesis caches constants it reads from the sources under its home folder (./.hypothesis
# by default): keep the checkout clean.
_HOME = tempfile.TemporaryDirectory(prefix="ablate-hypothesis-")
set_hypothesis_home_dir(_HOME.name)
settings.register_profile(
    "ablate-fuzz",
    derandomize=True,  # the same examples on every run and machine
    database=None,  # no replay of old failures from a local folder
    deadline=None,  # the machine is shared: time per example varies
    phases=(Phase.explicit, Phase.generate, Phase.shrink),  # "explain" costs a minute per failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("ablate-fuzz")
T = TypeVar("T")


def outcome(fn: Callable[..., T], *args: Any, **kw: Any) -> T | None:
    """``fn(...)``, or None when it refuses with a ConfigError that says something. Any other
    exception propagates: that is the bug the fuzzer looks for."""
    try:
        return fn(*args, **kw)
    except ConfigError as err:
        assert str(err).strip(), f"{type(err).__name__} without a message"
        return None


def scratch() -> tempfile.TemporaryDirectory:
    """A fresh folder per example: pytest's tmp_path is shared by all examples of a test."""
    return tempfile.TemporaryDirectory(prefix="ablate-fuzz-")


# --- values ----------------------------------------------------------------------------------

# What a typo or a hostile file puts in a field: beyond any range, not finite, the wrong type.
EXTREMES = st.sampled_from(
    [10**400, -(10**400), 2**64, 2**63, -1, 0, math.inf, math.nan, "nan", "1e400", True, "", None, [], {}]
)
INTS = st.one_of(st.integers(-2, 300), st.integers(), st.sampled_from([2**31, 2**32, 2**64, -(10**400)]))
FLOATS = st.one_of(st.floats(), st.sampled_from([0.0, -0.0, 1e-8, 0.5, 1.0, 1e308, math.inf, math.nan]))
# Path pieces a user may type: a home folder (of nobody here), parents, a name over NAME_MAX.
PATH_PARTS = st.sampled_from(["~", "~nobody-here", "..", "", "n" * 300, "d.csv", "/dev/null"])
PATHS = PATH_PARTS | st.lists(PATH_PARTS | st.text(max_size=5), min_size=2, max_size=3).map("/".join)
# Strings YAML reads as something else, or that trip a parser.
TRICKY = st.sampled_from(
    ["", " ", "null", "~", ".nan", "1e-3", "0x1F", "yes", "1_0", "2001-01-01", "a: b", "[1"]
)
TEXT = st.one_of(st.text(max_size=10), TRICKY, PATHS)
SCALARS = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
ANY = st.recursive(
    SCALARS, lambda v: st.lists(v, max_size=3) | st.dictionaries(SCALARS, v, max_size=3), max_leaves=6
)


def field_values(cls: type, name: str) -> st.SearchStrategy[Any]:
    """Values for one config field: its default, a valid choice, numbers at and beyond the ends
    of its range (also as strings: YAML 1.1 reads "1e-05" as one), extremes, paths, anything."""
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    default = field.default_factory() if field.default is dataclasses.MISSING else field.default
    options = [st.just(default), EXTREMES, ANY]
    if (allowed := choices(cls, name)) is not None:
        options.append(st.sampled_from(allowed))
    if (interval := getattr(cls, "RANGES", {}).get(name)) is not None:
        lo, hi = interval.lo, interval.hi
        if isinstance(default, int):
            options.append(st.integers(int(lo), int(min(hi, lo + 64))))
            ends = [int(lo), int(hi), int(lo) - 1, int(hi) + 1]
        else:
            options.append(st.floats(lo, hi).flatmap(lambda x: st.sampled_from([x, str(x)])))
            ends = [lo, hi, lo - 1, hi + 1, math.inf, math.nan]
        options.append(st.sampled_from([*ends, 10**400, -(10**400)]))
    if default is None or isinstance(default, str):
        options += [PATHS, PATHS]
    return st.one_of(*options)


DOTTED = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)] + ["seed"]
# Keys whose values are paths, resolved when a file is read: drawn as often as all others.
KEYS = st.sampled_from(DOTTED) | st.sampled_from(["data.source", "data.cache_dir"])


def dotted_value(key: str) -> st.SearchStrategy[Any]:
    section, _, name = key.partition(".")
    return field_values(SECTIONS[section], name) if name else st.one_of(INTS, EXTREMES, ANY)


@st.composite
def config_dicts(draw: st.DrawFn) -> dict[Any, Any]:
    """The tiny test config (or nothing: the defaults) with up to four mutations."""
    raw: dict[Any, Any] = {k: dict(v) for k, v in draw(st.sampled_from([TINY_BASE, {}])).items()}
    for _ in range(draw(st.integers(0, 4))):
        mutation, key = draw(st.integers(0, 9)), draw(KEYS)
        section, _, name = key.partition(".")
        if mutation <= 6 and not name:
            raw["seed"] = draw(dotted_value(key))
        elif mutation <= 6 and isinstance(raw.setdefault(section, {}), dict):
            raw[section][name] = draw(dotted_value(key))
        elif mutation == 7:
            raw[section] = draw(ANY)  # a section that is no mapping: [], 0, "x", null
        elif mutation == 8:
            raw.pop(section, None)
        else:  # an unknown or non-string key, in a section or at the top
            target = raw[section] if isinstance(raw.get(section), dict) else raw
            target[draw(TEXT | INTS)] = draw(ANY)
    return raw


def yaml_text(value: Any) -> str:
    """``value`` as one line of YAML: what a user types after ``key=``."""
    return yaml.safe_dump(value, default_flow_style=True, width=math.inf).removesuffix("\n...\n").strip()


@st.composite
def override_items(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 6))
    if kind <= 3:
        key = draw(KEYS)
        return f"{key}={draw(dotted_value(key).map(yaml_text) | TEXT)}"
    if kind == 4:
        return f"{draw(TEXT)}={draw(TEXT)}"  # an unknown key
    return draw(TEXT if kind == 5 else ANY)  # mostly no "=", or no string at all


@st.composite
def override_lists(draw: st.DrawFn) -> Any:
    """``key=value`` lists (now and then with a key twice), dotted mappings, or anything."""
    kind = draw(st.integers(0, 4))
    if kind <= 2:
        items = draw(st.lists(override_items(), max_size=3))
        if items and kind == 2 and isinstance(items[0], str):
            items.append(items[0].partition("=")[0] + "=" + draw(TEXT))
        return items
    return draw(st.dictionaries(KEYS | TEXT, ANY, max_size=4) if kind == 3 else ANY)


# --- train configs and overrides ------------------------------------------------------------


def assert_round_trips(cfg: TrainConfig) -> None:
    """A valid config survives config.yaml: what a run writes is what a worker reads back."""
    assert TrainConfig.from_dict(yaml.safe_load(yaml.safe_dump(cfg.to_dict()))) == cfg


@settings(FUZZ, max_examples=60)
@given(raw=config_dicts())
def test_config_dicts_validate_or_refuse(raw: dict) -> None:
    if (cfg := outcome(TrainConfig.from_dict, raw)) is not None:
        assert_round_trips(cfg)


ENCODINGS = ["utf-8"] * 5 + ["utf-8-sig", "latin-1", "utf-16"]


@settings(FUZZ, max_examples=100)
@given(
    raw=st.one_of(config_dicts(), config_dicts(), config_dicts(), ANY),
    garbage=st.one_of(st.none(), st.none(), st.none(), st.text(max_size=40)),
    encoding=st.sampled_from(ENCODINGS),
    overrides=st.none() | override_lists(),
)
def test_config_files_load_or_refuse(raw: Any, garbage: str | None, encoding: str, overrides: Any) -> None:
    """``load_config`` of a written file (YAML of a mapping, or garbage, in some encoding)."""
    with scratch() as folder:
        path = Path(folder, "train.yaml")
        path.write_bytes((yaml.safe_dump(raw) if garbage is None else garbage).encode(encoding, "replace"))
        cfg = outcome(load_config, path, overrides)
    if cfg is not None:
        assert_round_trips(cfg)


TINY = TrainConfig.from_dict(TINY_BASE)


@settings(FUZZ, max_examples=60)
@given(overrides=override_lists())
def test_overrides_apply_or_refuse(overrides: Any) -> None:
    parsed = outcome(parse_overrides, overrides)
    cfg = outcome(TINY.override, overrides)
    assert parsed is not None or cfg is None  # what cannot be parsed cannot be applied
    if cfg is not None:
        assert_round_trips(cfg)


# --- experiment specs ------------------------------------------------------------------------

# Control characters too: a name with a trailing newline once made a folder "nl⏎".
NAMES = st.sampled_from(["baseline", "no_pe", "v.2", "a-b", "nl\n", "t\tab", "\x00", "a\r", "x\u2028"]) | TEXT
METRICS = st.sampled_from(["test/acc", "val/loss", "test_long/f1", "val/acc", "train/acc"])


@st.composite
def dotted_maps(draw: st.DrawFn) -> Any:
    """A variant's, a profile's or the spec's overrides: mostly a dotted mapping."""
    kind = draw(st.integers(0, 3))
    if kind == 3:
        return draw(ANY | override_lists())  # a list, a "key=value" string, ...
    keys = draw(st.lists(KEYS, unique=True, max_size=2 * kind))
    return {k: draw(dotted_value(k)) for k in keys}


NUMBERS = st.one_of(FLOATS, INTS, EXTREMES)
ADAPTIVE = st.fixed_dictionaries(
    {"min": st.integers(0, 4), "max": st.integers(1, 8), "step": st.integers(0, 3)},
    optional={"stop": st.sampled_from(["separated", "ci_width", "x"]), "width": NUMBERS},
)
SPACE = st.one_of(
    st.fixed_dictionaries({"low": NUMBERS, "high": NUMBERS}, optional={"log": ANY}),
    st.fixed_dictionaries({"choices": st.lists(SCALARS, max_size=3) | ANY}),
)
SEARCH = st.fixed_dictionaries(
    {"space": st.dictionaries(KEYS, SPACE | ANY, max_size=2) | ANY},
    optional={"trials": INTS, "metric": METRICS, "seed": INTS, "reduction_factor": INTS, "direction": TEXT}
    | {"pruner": st.sampled_from(["none", "none", "median", "hyperband", "x"])},
)
# base: inline, or a path: the written base file (as named, relative or absolute), a folder,
# a missing file, anything path-like.
BASES = config_dicts() | st.sampled_from(["base.yaml", "./base.yaml", "{abs}", "sub", "missing.yaml"]) | PATHS
SPEC_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "name": NAMES,
    "base": BASES,
    "variants": st.dictionaries(NAMES, dotted_maps(), max_size=3).flatmap(
        lambda v: st.sampled_from([{"baseline": {}, **v}, v])  # mostly one baseline
    ),
    "overrides": dotted_maps(),
    "seeds": st.one_of(st.integers(-1, 6), st.lists(st.integers(0, 9) | INTS, max_size=4), ADAPTIVE),
    "seed_factors": st.fixed_dictionaries({"init": INTS, "data_order": INTS}),
    "heatmap_seeds": st.lists(st.integers(-1, 6), max_size=3),
    "metric": METRICS,
    "extra_metrics": st.lists(METRICS, max_size=2),
    "direction": st.sampled_from(["maximize", "minimize"]),
    "wandb_project": TEXT,
    "description": TEXT,
    "tags": st.lists(SCALARS, max_size=3),
    "profiles": st.dictionaries(NAMES, dotted_maps(), max_size=3),
    "search": SEARCH,
    # Never a real module name: importing one (say "antigravity") would run it.
    "plugins": st.lists(
        st.sampled_from(["missing.py", "no_such_plugin_module", "./sub/x.py", "", "a/"]), max_size=2
    )
    | ANY,
    "margin": st.one_of(
        st.floats(allow_nan=True),
        st.integers(-1, 2),
        st.dictionaries(NAMES | st.just("default"), SCALARS, max_size=2),
    ),
    "compare": st.one_of(
        st.just("all"), st.lists(st.lists(NAMES | st.just("no_pe"), max_size=3) | TEXT, max_size=3), ANY
    ),
}
assert set(SPEC_VALUES) == set(SPEC_KEYS), "a new spec key needs values here"
VALID_SPEC = {"name": "fuzz", "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}, "seeds": 2}


@st.composite
def spec_dicts(draw: st.DrawFn) -> dict[Any, Any]:
    """A small valid spec (inline base or the written base file) with up to four keys set to
    a random value of their kind or to anything, removed, or added."""
    raw: dict[Any, Any] = {**VALID_SPEC, "base": draw(st.sampled_from([TINY_BASE, "base.yaml"]))}
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from([*SPEC_KEYS, "base", "variants", "seeds", "search"]))  # nested: twice
        mutation = draw(st.integers(0, 7))
        if mutation <= 5:
            raw[key] = draw(SPEC_VALUES[key] if mutation <= 3 else ANY)
        elif mutation == 6:
            raw.pop(key, None)
        else:
            raw[draw(TEXT | INTS)] = draw(ANY)
    return raw


@settings(FUZZ, max_examples=80)
@given(raw=spec_dicts(), base_file=config_dicts(), profile=st.one_of(st.none(), st.none(), NAMES))
def test_specs_validate_or_refuse(raw: dict, base_file: dict, profile: str | None) -> None:
    with scratch() as name:
        folder = Path(name)
        (folder / "base.yaml").write_text(yaml.safe_dump(base_file))
        (folder / "sub").mkdir()
        if raw.get("base") == "{abs}":
            raw["base"] = str(folder / "base.yaml")
        spec = outcome(spec_from_dict, raw, source=folder / "spec.yaml", profile=profile)
    if spec is None:
        return
    assert NAME_RE.fullmatch(spec.name) and all(NAME_RE.fullmatch(v) for v in spec.variants)
    assert [v for v, ov in spec.variants.items() if not ov] == [spec.baseline]
    for variant in spec.variants:
        assert spec.cell_config(variant, spec.seeds[-1]).seed == spec.seeds[-1]
    # `ablate report` rebuilds the spec from the run folder's spec.json.
    again = spec_from_resolved(json.loads(json.dumps(spec.to_dict(), default=str)))
    assert again.base == spec.base and again.cells() == spec.cells()


@settings(FUZZ, max_examples=40)
@given(
    value=ANY,
    levels=st.integers(0, 7),
    width=st.integers(1, 12),
    key=st.sampled_from(["tags", "variants", "base", "description", "seeds", "overrides", "plugins"]),
)
def test_spec_files_with_yaml_aliases_load_or_refuse_quickly(
    value: Any, levels: int, width: int, key: str
) -> None:
    """An anchor chain inside one spec field: each level repeats the one below ``width`` times
    (up to 12^7 values), so a spec of a few hundred bytes may describe millions of values."""
    chain = [f"&a0 {yaml_text(value)}"] + [
        f"&a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels + 1)
    ]
    text = (
        f"name: fuzz\nvariants: {{baseline: {{}}, no_pe: {{model.pe: none}}}}\n{key}: [{', '.join(chain)}]\n"
    )
    start = time.perf_counter()
    with scratch() as name:
        (Path(name) / "spec.yaml").write_text(text)
        outcome(load_spec, Path(name) / "spec.yaml")
    assert time.perf_counter() - start < 5.0


# --- data files ------------------------------------------------------------------------------

COLUMNS = st.sampled_from(["sentence", "label", "text", "idx", "", "Label", " label"]) | st.text(max_size=6)
LABELS = st.one_of(
    st.sampled_from([-1, 2, 5, 1.0, 1.5, "1", " 0 ", "one", "", None, True, 2**63, 10**30, math.nan, 1e300]),
    INTS,
    TEXT,
)
CELLS = st.sampled_from(['"', 'say "hi"', "a,b", "a\tb", "two\nlines", "\r", "\ufeff"]) | st.text(max_size=30)
# Relative ones are taken in the example's folder; "~" and "/" ones as they are.
ODD_SOURCES = st.sampled_from(
    ["~nobody-here/d.csv", "/dev/null", "n" * 300 + ".csv", "nul\x00.csv", "d.csv/"]
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[Any]]]:
    """A header (mostly sentence and label; sometimes more, repeated or odd names) and 0..50
    rows labelled i % C, with up to three cells replaced by odd texts or labels."""
    header = draw(st.sampled_from([["sentence", "label"], ["label", "sentence", "idx"]]))
    odd = draw(st.integers(0, 5))
    header = (
        [*header, draw(COLUMNS)] if odd == 4 else draw(st.lists(COLUMNS, max_size=4)) if odd == 5 else header
    )
    n, classes = draw(st.integers(0, 50)), draw(st.sampled_from([2, 2, 3, 1]))
    texts = draw(st.lists(st.sampled_from(["a good film", "bad"]) | CELLS, min_size=1, max_size=4))
    rows = [
        [i % classes if c == "label" else f"{texts[i % len(texts)]} {i}" for c in header] for i in range(n)
    ]
    for _ in range(draw(st.integers(0, 3)) if rows and header else 0):
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, len(header) - 1))
        rows[i][j] = draw(LABELS if header[j] == "label" else CELLS | LABELS)
    return header, rows


def render(fmt: str, header: list[str], rows: list[list[Any]]) -> str:
    """csv (quoted as Excel does), raw csv and tsv (joined without quoting: a delimiter or a
    newline in a cell breaks the row), json and jsonl (a repeated column is a repeated key)."""
    if fmt == "csv":
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([header, *rows])
        return out.getvalue()
    if fmt in ("raw-csv", "tsv"):
        return "".join(("\t" if fmt == "tsv" else ",").join(map(str, r)) + "\n" for r in [header, *rows])
    pairs = [
        ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in zip(header, r, strict=True)) for r in rows
    ]
    records = ["{" + p + "}" for p in pairs]
    return "[" + ",\n".join(records) + "]" if fmt == "json" else "".join(r + "\n" for r in records)


@st.composite
def data_sources(draw: st.DrawFn) -> tuple[dict[str, bytes], str]:
    """Files to write (name -> bytes) and the data.source: one file, a folder of train / dev /
    test files cut from one table, or a path that names no usable file."""
    header, rows = draw(tables())
    fmt = draw(st.sampled_from(["csv", "raw-csv", "tsv", "json", "jsonl"]))
    ext = (
        fmt.removeprefix("raw-") if draw(st.integers(0, 7)) else draw(st.sampled_from(["csv", "json", "txt"]))
    )
    encoding = draw(st.sampled_from(ENCODINGS))

    def encode(part: list[list[Any]]) -> bytes:
        odd = draw(st.integers(0, 15))
        if odd == 15:
            return draw(st.binary(max_size=40))
        return (json.dumps(draw(ANY)) if odd == 14 else render(fmt, header, part)).encode(encoding, "replace")

    where = draw(st.integers(0, 15))
    if where >= 4:
        return {f"d.{ext}": encode(rows)}, f"d.{ext}" if where < 15 else draw(ODD_SOURCES)
    cut = draw(st.integers(0, len(rows)))
    files = {f"d/train.{ext}": encode(rows[:cut]), f"d/test.{ext}": encode(rows[cut:])}
    if draw(st.booleans()):
        files[f"d/dev.{ext}"] = encode(rows[cut:][::-1])
    return files, "d"


def loaded(cfg: DataConfig) -> ClassificationDataModule:
    dm = ClassificationDataModule(cfg)
    dm.setup()
    return dm


COLUMN_OPTIONS = st.fixed_dictionaries(
    {
        "text_column": st.sampled_from(["sentence"] * 6 + ["text", "idx"]),
        "label_column": st.sampled_from(["label"] * 6 + ["Label", "idx"]),
        "val_fraction": st.sampled_from([0.05, 0.2, 0.49, 1e-9]),
    }
)
# data.cache_dir in the example's folder: mostly fine; a file, below a file, a long or odd name.
CACHES = st.sampled_from(["cache"] * 12 + ["d.csv", "d.csv/c", "n" * 300, "c\x00"])


@settings(FUZZ, max_examples=70)
@given(source=data_sources(), options=COLUMN_OPTIONS, cache_dir=CACHES)
def test_data_files_load_or_refuse(
    source: tuple[dict[str, bytes], str], options: dict, cache_dir: str
) -> None:
    """A file or folder through the whole data path: read, labels, splits, tokenizer, cache."""
    files, name = source
    with scratch() as tmp:
        folder, cache = Path(tmp), Path(tmp, cache_dir)
        for rel, content in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(content)
        path = name if name.startswith(("~", "/")) else str(folder / name)
        dm = outcome(loaded, DataConfig(task="text", source=path, cache_dir=str(cache), **options))
        if dm is None:
            left = (
                [p.name for p in cache.iterdir() if p.name != "hf"]
                if cache_dir == "cache" and cache.is_dir()
                else []
            )
            assert left == [], f"a refused input left {left} in the cache"
            return
        assert dm.n_classes >= 2 and dm.splits is not None and len(dm.splits) == 3
        for split in dm.splits.values():
            assert split["label"] and all(0 <= y < dm.n_classes for y in split["label"])


# A column whose type is not text: lists (a tokenized corpus), numbers, records, nulls.
TYPED_TEXT = st.one_of(
    st.lists(st.text(max_size=4), max_size=3),
    st.integers(),
    st.floats(allow_nan=False),
    st.fixed_dictionaries({"x": st.text(max_size=3)}),
    st.none(),
    st.text(max_size=8),
)


@settings(FUZZ, max_examples=30)
@given(
    texts=st.lists(TYPED_TEXT, min_size=1, max_size=6),
    fmt=st.sampled_from(["parquet", "jsonl"]),
    n=st.integers(2, 40),
)
def test_typed_columns_load_as_text_or_refuse(texts: list[Any], fmt: str, n: int) -> None:
    """Parquet and JSONL keep their types: a text column must hold strings, or be refused."""
    rows = [texts[i % len(texts)] for i in range(n)]
    kinds = {type(r) for r in rows}
    if len(kinds) > 1 and fmt == "parquet":
        rows = [json.dumps(r) for r in rows]  # Arrow cannot mix types in a column: the file is text
    with scratch() as tmp:
        path = Path(tmp) / f"train.{fmt}"
        try:
            ds = datasets.Dataset.from_dict({"sentence": rows, "label": [i % 2 for i in range(n)]})
        except (TypeError, ValueError, OverflowError, ArrowException):
            return  # not even a table: nothing to load
        (ds.to_parquet if fmt == "parquet" else ds.to_json)(str(path))
        cfg = DataConfig(task="text", source=str(path))
        raw = outcome(sources.read_file, path, cfg, str(Path(tmp, "hf")))
    if raw is not None:  # read as text only where every value was a string
        assert all(isinstance(r, str) for r in rows) and raw.texts == [str(r) for r in rows]


# --- what the fuzzer found (each raised another exception before its fix) ---------------------
# Each runs in its own tmp_path as the current folder, so relative names land there.

NO_USER, LONG = "~nobody-here", "n" * 300  # the home of no user here; a name over NAME_MAX (255)
LONG_SHOWN = LONG[:40]
DEEP = "[" * 1000 + "]" * 1000  # PyYAML recurses per level; Python stops at ~1000 frames
HUGE_LR = {"optim": {"lr": 10**400}}
BIG_LOW = {"pruner": "none", "space": {"optim.lr": {"low": 10**400, "high": 1}}}


def spec(base: Any, **extra: Any) -> Callable[[], Any]:
    return lambda: spec_from_dict({**VALID_SPEC, "base": base, **extra}, source=Path("spec.yaml").absolute())


def config(text: str) -> Callable[[], Any]:
    def run() -> TrainConfig:
        Path("train.yaml").write_text(text)
        return load_config("train.yaml")

    return run


def data(source: str, cache: str = "cache") -> Callable[[], Any]:
    def run() -> ClassificationDataModule:
        Path("d.csv").write_text("sentence,label\n" + "".join(f"w{i} x,{i % 2}\n" for i in range(20)))
        return loaded(DataConfig(task="text", source=source, cache_dir=cache))

    return run


# id: (what it raised before the fix, where, the input, a word the refusal must say; None where
# accepting the input is right too). Messages cut a long value to its first characters.
BUGS: dict[str, tuple[type[Exception], str, Callable[[], Any], str | None]] = {
    "huge-lr": (OverflowError, "errors._check_types", lambda: TrainConfig.from_dict(HUGE_LR), "optim.lr"),
    "home-spec-base": (RuntimeError, "spec._base", spec(f"{NO_USER}/b.yaml"), NO_USER),
    "home-config": (RuntimeError, "config._absolute", config(f"data: {{source: {NO_USER}/d.csv}}"), None),
    "home-data-source": (RuntimeError, "sources.resolve", data(f"{NO_USER}/d.csv"), NO_USER),
    "long-config-file": (OSError, "config.read_yaml", lambda: load_config(f"{LONG}.yaml"), LONG_SHOWN),
    "long-spec-base": (OSError, "config.read_yaml", spec(f"{LONG}.yaml"), LONG_SHOWN),
    "long-config": (OSError, "config._names_local", config(f"data: {{source: {LONG}.csv}}"), None),
    "long-data-source": (OSError, "sources.resolve", data(f"{LONG}.csv"), LONG_SHOWN),
    "nul-data-source": (ValueError, "sources.resolve", data("d\x00.csv"), "data.source"),
    "long-cache-dir": (OSError, "datamodule.prepare_data", data("d.csv", LONG), LONG_SHOWN),
    "nul-cache-dir": (ValueError, "datamodule._make_temp", data("d.csv", "c\x00"), "cache_dir"),
    # Found by hand, next to the above: the same classes where the generators do not reach.
    "huge-search": (OverflowError, "search_spec._param_space", spec(TINY_BASE, search=BIG_LOW), "optim.lr"),
    "home-cache-dir": (RuntimeError, "datamodule.cache_root", data("d.csv", f"{NO_USER}/c"), None),
    "long-input-file": (OSError, "io.input_file", lambda: input_file(f"{LONG}.yaml"), LONG_SHOWN),
    "long-out-folder": (OSError, "io.output_folder", lambda: output_folder(LONG), LONG_SHOWN),
    "deep-override": (RecursionError, "PyYAML", lambda: parse_overrides([f"seed={DEEP}"]), "seed"),
    "deep-config-file": (RecursionError, "PyYAML", config(f"seed: {DEEP}"), "train.yaml"),
}
CASES = [pytest.param(run, word, id=name) for name, (_, _, run, word) in BUGS.items()]


@pytest.mark.parametrize(("run", "word"), CASES)
def test_found_by_fuzzing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Callable, word: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    if word is None:
        outcome(run)
    else:
        with pytest.raises(ConfigError, match=word.replace(".", r"\.")):
            run()
