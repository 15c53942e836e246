"""A grid from the command line, with no spec file: ``ablate sweep CONFIG.yaml model.n_heads=1,2,4``.

Each override whose value is a comma list (``key=a,b``), or Hydra's ``range(a,b[,step])`` (the
integers a..b-1, like Python's range) or ``choice(a,b,...)`` (the comma list a,b,...), is a swept
key; the variants are every combination of their values, and the first value of each list is the
baseline's (so the baseline is the combination the user wrote first). Every other override applies
to the base of all of them; a YAML flow list (``key=[a,b]``) is one value, for a key that takes a
list, and is refused on any other key with the sweep forms to write instead (``check_list_values``).
The result is the mapping an experiment spec file would hold, validated like one.

Sizes multiply: six keys of ten values are a million variants. The grid is counted before it is
expanded (``grid_size``), and one above MAX_VARIANTS variants or MAX_CELLS cells (variants x
seeds) is refused, naming its size, unless confirmed (``ablate sweep ... --yes``). An experiment
spec file lists its variants one by one (there is no grid form to expand), so it has no cap.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

from ablate.errors import ConfigError, require

if TYPE_CHECKING:
    from ablate.experiments.specs.spec import ExperimentSpec

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.-]+")

# The largest quick grid run without --yes: 256 variants (4 keys x 4 values) or 2,000 cells, hours
# of tiny models on 2 cores; a report of more variants is a table nobody reads.
MAX_VARIANTS = 256
MAX_CELLS = 2_000


# Hydra's sweep functions as values: NAME(ARGS). range and choice are sweeps here; the others
# Hydra has are refused (their values are not a grid), never split at their commas.
_CALL = re.compile(r"([A-Za-z_]\w*)\((.*)\)", re.DOTALL)
SWEEP_FORMS = "key=a,b,c, key=choice(a,b,c) or key=range(start,stop[,step])"
NOT_SWEEPS = ("glob", "interval", "sort", "shuffle", "tag", "extend_list")
MAX_RANGE = 100_000  # values of one range(): the grid's size is checked after (check_size)


def _range(args: str, item: str) -> list[str]:
    """``range(1,4)`` -> ``["1", "2", "3"]``: Python's range, integers only, the stop excluded."""
    parts = [p.strip() for p in args.split(",")]
    try:
        bounds = [int(p) for p in parts]
    except ValueError:
        bounds = []
    require(
        1 <= len(bounds) <= 3 and (len(bounds) < 3 or bounds[2] != 0),
        f"override {item!r}: range takes integers, range(start,stop[,step]) with stop excluded "
        "(range(1,4) is 1,2,3); list other values as key=a,b,c",
    )
    values = range(*bounds)
    require(
        len(values) <= MAX_RANGE, f"override {item!r}: {len(values):,} values; a range holds {MAX_RANGE:,}"
    )
    return [str(v) for v in values]


def _sweep_call(key: str, text: str, item: str) -> list[str] | None:
    """The values of ``range(...)`` / ``choice(...)``; None for a value that is no such call."""
    call = _CALL.fullmatch(text)
    if call is None or call[1] not in ("range", "choice", *NOT_SWEEPS):
        return None
    require(
        call[1] in ("range", "choice"),
        f"override {item!r}: {call[1]}() is Hydra's, not a sweep here; sweep {key} with {SWEEP_FORMS}",
    )
    values = _range(call[2], item) if call[1] == "range" else [v.strip() for v in call[2].split(",")]
    require(
        len(values) > 1,
        f"override {item!r} is {len(values)} value(s); a sweep needs two or more (one value: {key}=VALUE)",
    )
    return values


def list_values(item: str) -> tuple[str, list[str]] | None:
    """``("model.n_heads", ["1", "2"])`` for ``model.n_heads=1,2`` (or ``=choice(1,2)``, or
    ``=range(1,3)``); None for an override that is not a comma list (a YAML flow list ``[1,2]``
    or a quoted string is a single value)."""
    key, sep, text = item.partition("=")
    key, text = key.strip(), text.strip()
    if sep and (values := _sweep_call(key, text, item)) is not None:
        return key, values
    if not sep or "," not in text or text.startswith(("[", "{", "'", '"')):
        return None
    return key, [v.strip() for v in text.split(",")]


def _takes_a_list(hint: Any) -> bool:
    if get_origin(hint) in (Union, UnionType):
        return any(_takes_a_list(h) for h in get_args(hint))
    return (get_origin(hint) or hint) in (list, tuple, dict)


def takes_one_value(key: str) -> bool:
    """Whether the config key ``key`` is known to take one value, not a list (or a mapping): False
    for ``plugins``, the ``*_options`` mappings, a component's option and an unknown key."""
    from ablate.errors import type_hints
    from ablate.experiments.schema.config import SECTIONS, TrainConfig

    section, _, name = key.partition(".")
    cls = SECTIONS.get(section) if name else TrainConfig
    name = getattr(cls, "ALIASES", {}).get(name, name) if name else key
    hints = type_hints(cls) if cls is not None else {}
    return name in hints and not _takes_a_list(hints[name])


def check_list_values(overrides: list[str], then: str = "") -> None:
    """The one rule for ``key=[a,b]``: one list value, for a key that takes a list; on a key that
    takes one value, a ConfigError naming the sweep forms (``then``: where they work)."""
    for item in overrides:
        key, _, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if text.startswith("[") and takes_one_value(key):
            inner = text[1:].removesuffix("]")
            raise ConfigError(
                f"override {item!r}: {key} takes one value, and [a,b] is one list value (for a key "
                f"that takes a list, like plugins); to sweep {key}, write {key}={inner} or "
                f"{key}=choice({inner}){then}"
            )


def split_overrides(overrides: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The plain overrides, and the comma-listed ones by key (in the order given)."""
    plain: list[str] = []
    lists: dict[str, list[str]] = {}
    for item in overrides:
        found = list_values(item)
        if found is None:
            plain.append(item)
            continue
        key, values = found
        require(all(values), f"override {item!r}: an empty value in the list; write key=a,b,c")
        require(len(set(values)) == len(values), f"override {item!r}: a value is listed twice")
        require(key not in lists, f"{key} is swept twice; give one list")
        lists[key] = values
    return plain, lists


def _value(text: str, key: str) -> Any:
    import yaml  # imported where used: the CLI's parser reads this module's limits for its help

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{key}={text}: cannot parse the value: {err}") from None


def _name_part(text: str) -> str:
    return _NOT_A_NAME.sub("_", text).strip("_") or "x"


def grid_size(lists: dict[str, list[str]], seeds: int | None) -> tuple[int, int]:
    """(variants, cells) of a quick grid over ``lists``, counted without expanding it: the product
    of the lists' lengths, times ``seeds`` (None: the count a spec without ``seeds:`` gets for
    that many variants, spec_file._seeds)."""
    from ablate.experiments.schema.seeds import default_seed_count

    variants = math.prod(len(v) for v in lists.values())
    n_seeds = seeds if seeds is not None else default_seed_count(variants - 1)
    return variants, variants * n_seeds


def check_size(lists: dict[str, list[str]], seeds: int | None, *, confirmed: bool) -> None:
    """A ConfigError naming the grid's size when it is above MAX_VARIANTS or MAX_CELLS and not
    ``confirmed`` (``--yes``)."""
    variants, cells = grid_size(lists, seeds)
    if confirmed or (variants <= MAX_VARIANTS and cells <= MAX_CELLS):
        return
    sizes = " x ".join(str(len(v)) for v in lists.values())
    n_seeds = cells // variants
    raise ConfigError(
        f"this quick grid is {variants:,} variants ({sizes} values of {len(lists)} keys) x {n_seeds} "
        f"seeds = {cells:,} cells; a quick grid runs without --yes up to {MAX_VARIANTS} variants and "
        f"{MAX_CELLS:,} cells: list fewer values or sweep fewer keys at once (or give fewer --seeds), "
        "or add --yes to run it as it is"
    )


def quick_spec(
    config: Path, lists: dict[str, list[str]], seeds: int | None, *, confirmed: bool = False
) -> dict[str, Any]:
    """The experiment spec of a command-line grid over ``lists`` on the train config ``config``;
    counted first (``check_size``: above the cap only when ``confirmed``)."""
    require(bool(lists), "a quick grid needs at least one comma list, e.g. model.n_heads=1,2")
    require(
        "seed" not in lists,
        "seed=0,1,... is not a variant; give the number of seeds with --seeds N",
    )
    check_size(lists, seeds, confirmed=confirmed)
    leaves = [_name_part(k.rpartition(".")[2]) for k in lists]
    combos = list(itertools.product(*lists.values()))
    first = dict(zip(lists, combos[0], strict=True))
    variants: dict[str, dict[str, Any]] = {}
    for combo in combos:
        name = ".".join(f"{leaf}-{_name_part(v)}" for leaf, v in zip(leaves, combo, strict=True))
        require(name not in variants, f"two variants would be named {name}; list values that differ")
        variants[name] = {k: _value(v, k) for k, v in zip(lists, combo, strict=True) if v != first[k]}
    raw: dict[str, Any] = {
        "name": f"{_name_part(config.stem)}-{'-'.join(leaves)}",
        "description": f"{config.name} over "
        + ", ".join(f"{k} in {{{', '.join(v)}}}" for k, v in lists.items()),
        "base": str(config.resolve()),
        "overrides": {k: _value(v, k) for k, v in first.items()},
        "variants": variants,
    }
    if seeds is not None:
        raw["seeds"] = seeds
    return raw


def is_spec(raw: Any) -> bool:
    """Whether a loaded YAML file is an experiment spec (``name``/``base``/``variants``) rather
    than a train config (``model``/``data``/...)."""
    return isinstance(raw, dict) and bool({"variants", "base"} & set(raw))


def load_sweep(
    given: str,
    overrides: list[str],
    *,
    profile: str | None = None,
    seeds: int | None = None,
    confirmed: bool = False,
) -> ExperimentSpec:
    """What ``ablate sweep GIVEN ...`` runs: an experiment spec (a file, or a shipped spec's name),
    or a quick grid over a train config's comma-listed overrides, refused above the cap unless
    ``confirmed`` (``--yes``; ``check_size``)."""
    from ablate.experiments.specs.loading import read_yaml
    from ablate.experiments.specs.shipped import resolve
    from ablate.experiments.specs.spec_file import checked, load_spec, spec_from_dict

    path = resolve(given, ("spec", "config"), "experiment spec or train config")
    plain, lists = split_overrides(overrides)
    if is_spec(read_yaml(path)):
        if lists:
            key = next(iter(lists))
            raise ConfigError(
                f"{key}={','.join(lists[key])}: a comma list makes a quick grid from a train config, "
                f"but {given} is an experiment spec; add the values to its variants"
            )
        return load_spec(path, overrides, profile=profile, seeds=seeds)
    require(
        profile is None,
        f"--profile {profile}: profiles belong to an experiment spec, and {given} is a train config",
    )
    check_list_values(plain)
    require(
        bool(lists),
        f"{given} is a train config, not an experiment spec: sweep a key of it with a comma list "
        f"(ablate sweep {given} model.n_heads=1,2 --seeds 5; or =choice(1,2), =range(1,3)), or "
        "train it with ablate train",
    )
    fixed = {item.partition("=")[0].strip() for item in plain}
    both = sorted(fixed & set(lists))
    require(not both, f"{', '.join(both)} given both as a list and as one value; give it once")
    return checked(spec_from_dict(quick_spec(path, lists, seeds, confirmed=confirmed), overrides=plain))
