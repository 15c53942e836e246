"""The parsing rules every config, spec and command line shares: a mapping with string keys,
a number in its interval, dotted ``key=value`` overrides."""

from __future__ import annotations

from typing import Any

import yaml

from ablate.errors import ConfigError, Range, require, short


def as_mapping(value: Any, place: str) -> dict[str, Any]:
    """The one rule for every YAML section, variant, profile and block: a mapping with string keys.

    Absent (no key, or a key with no value) means empty; anything else that is not a mapping
    (``[]``, ``0``, ``"model.pe=none"``) is an error naming the place and the type found, never
    a silent default.
    """
    if value is None:
        return {}
    require(
        isinstance(value, dict),
        f"{place} must be a mapping (key: value), got {type(value).__name__} {short(value)}",
    )
    for key in value:
        require(
            isinstance(key, str), f"{place}: keys must be strings, got the {type(key).__name__} key {key!r}"
        )
    return value


def require_number(value: Any, key: str, interval: Range, *, integer: bool = True) -> Any:
    """A spec's numeric setting (``seeds.min``, ``search.trials``): an int (or, with ``integer``
    false, a float) inside ``interval``, else a ConfigError naming the key, the type or the interval."""
    types = int if integer else (int, float)
    expected = "int" if integer else "float"
    require(
        isinstance(value, types) and not isinstance(value, bool),
        f"{key}={value!r} has the wrong type; expected {expected}",
    )
    require(value in interval, f"{key}={value!r} is out of range; valid: {interval}")
    return value


def parse_overrides(
    overrides: list[str] | tuple[str, ...] | dict[str, Any] | None, place: str = "overrides"
) -> dict[str, Any]:
    """``["a.b=1"]`` (the command line) or ``{"a.b": 1}`` (YAML) -> ``{"a.b": 1}``; values in
    ``key=value`` items are parsed as YAML scalars. A key given twice is an error, not "last wins"."""
    if overrides is None or isinstance(overrides, dict):
        return dict(as_mapping(overrides, place))
    require(
        isinstance(overrides, (list, tuple)),
        f"{place} must be a mapping or a list of key=value, got {type(overrides).__name__} {short(overrides)}",
    )
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # key -> the item that set it, for the duplicate message
    for item in overrides:
        require(
            isinstance(item, str), f"{place}: {item!r} is not of the form key=value (e.g. model.n_heads=1)"
        )
        key, sep, text = item.partition("=")
        key = key.strip()
        require(
            not key.startswith("~"),
            f"override {item!r}: ~KEY (Hydra's delete) resets a key to its default on the ablate "
            f"command line only; here give {key[1:]}=VALUE",
        )
        require(
            bool(sep) and bool(key),
            f"override {item!r} is not of the form key=value (e.g. model.n_heads=1)",
        )
        if key in given:
            raise ConfigError(f"{place}: {key} is given twice ({given[key]!r} and {item!r}); give it once")
        given[key] = item
        try:
            out[key] = check_size(yaml.safe_load(text), f"override {key}") if text.strip() else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"override {item!r}: cannot parse the value: {err}") from None
        except RecursionError:  # PyYAML's composer recurses once per nesting level
            raise ConfigError(f"override {short(item)}: nested too deeply to parse") from None
    return out


# What a config, a spec or an override may expand to: YAML aliases share one object per anchor,
# and what walks the loaded value (validation, JSON, deep copies) visits it once per reference.
MAX_VALUES = 100_000


def check_size(value: Any, place: str, limit: int = MAX_VALUES) -> Any:
    """``value`` if it expands to at most ``limit`` values (every alias counted at each use);
    a ConfigError for more, or for a value that contains itself. Linear in the distinct values."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    open_ids: set[int] = set()
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        key = id(node)
        if done:
            children = node.values() if isinstance(node, dict) else node
            total = 1 + sum(sizes.get(id(c), 1) for c in children if isinstance(c, (dict, list)))
            total += sum(1 for c in children if not isinstance(c, (dict, list)))
            total += len(node) if isinstance(node, dict) else 0  # the keys
            sizes[key] = total
            open_ids.discard(key)
            if total > limit:
                raise ConfigError(
                    f"{place}: expands to more than {limit:,} values (YAML aliases repeat what an anchor "
                    "holds); write it out or make it smaller"
                )
            continue
        if key in open_ids:
            raise ConfigError(f"{place}: a value contains itself (a recursive YAML alias)")
        if key in sizes:
            continue
        open_ids.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in (node.values() if isinstance(node, dict) else node))
    return value
