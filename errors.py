"""The error and validation kernel every layer may import (model, data, experiments, sweeps).

A ``ConfigError`` is a configuration or input the user can fix: the CLI prints its message and
exits with code 2. Configs are frozen dataclasses; ``validate_fields`` type-checks them and reads
a ``Literal`` field's valid values from its annotation, so messages and docs cannot drift.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import reprlib
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

C = TypeVar("C")


class ConfigError(ValueError):
    """A configuration or input the user can fix; the CLI exits with code 2."""


@dataclass(frozen=True)
class Range:
    """The valid interval of a numeric config field: ``[lo, hi]``, either end open on request.

    Every int and float field of a config dataclass has one, given with the field (``setting``)
    and gathered into the class's ``RANGES`` (``documented``); ``validate_fields`` checks it (and
    finiteness) before anything runs, and the message states the interval.
    """

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, value: float) -> bool:
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        finite = not isinstance(value, float) or math.isfinite(value)  # an int of any size is finite
        return finite and above and below

    def __str__(self) -> str:
        lo, hi = _bound(self.lo), _bound(self.hi)
        return f"{'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"


def _bound(x: float) -> str:
    """An interval end as written: whole numbers exactly (2**32 - 1 = 4294967295), others by %g."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@functools.cache
def type_hints(cls: type) -> dict[str, object]:
    """``typing.get_type_hints`` of a config class, once per class (it parses the annotations)."""
    return typing.get_type_hints(cls)


def choices(cls: type, name: str) -> tuple | None:
    """The allowed values of a ``Literal`` field, or None for other fields."""
    hint = type_hints(cls)[name]
    if get_origin(hint) is Literal:
        return get_args(hint)
    return None


def validate_fields(obj: object) -> None:
    """Type-check every field, check ``Literal`` choices and numeric ``RANGES``, naming the field."""
    _check_types(obj)
    cls = type(obj)
    prefix = getattr(cls, "SECTION", cls.__name__)
    for name, interval in getattr(cls, "RANGES", {}).items():
        value = getattr(obj, name)
        if value is not None and value not in interval:
            raise ConfigError(f"{prefix}.{name}={short(value)} is out of range; valid: {interval}")


def numeric_fields(cls: type) -> list[str]:
    """The int and float fields of a config dataclass (bools excluded): each needs a Range."""
    out = []
    for name, hint in type_hints(cls).items():
        types = set(get_args(hint) or (hint,))
        if types & {int, float} and name in {f.name for f in dataclasses.fields(cls)}:
            out.append(name)
    return out


def _check_types(obj: object) -> None:
    cls = type(obj)
    hints = type_hints(cls)
    prefix = getattr(cls, "SECTION", cls.__name__)
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        hint = hints[f.name]
        key = f"{prefix}.{f.name}"
        allowed = choices(cls, f.name)
        if allowed is not None:
            if value not in allowed:
                raise ConfigError(
                    f"{key}={value!r} is not a valid choice; choose one of {', '.join(map(repr, allowed))}"
                )
            continue
        types = tuple(t for t in (get_args(hint) or (hint,)) if isinstance(t, type))
        if type(None) in types and value is None:
            continue
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            # An int beyond the float range stays an int: the range check reports it.
            if abs(value) <= sys.float_info.max:
                object.__setattr__(obj, f.name, float(value))
            continue
        if float in types and isinstance(value, str):
            # PyYAML reads "1e-3" as a string (YAML 1.1); accept it as a float.
            try:
                object.__setattr__(obj, f.name, float(value))
                continue
            except ValueError:
                pass
        if isinstance(value, bool) and bool not in types:
            raise ConfigError(f"{key}={value!r} has the wrong type; expected {_type_name(hint)}")
        if types and not isinstance(value, types):
            raise ConfigError(f"{key}={value!r} has the wrong type; expected {_type_name(hint)}")


def _type_name(hint: object) -> str:
    args = get_args(hint)
    if args:
        return " or ".join(getattr(a, "__name__", str(a)).replace("NoneType", "null") for a in args)
    return getattr(hint, "__name__", str(hint))


_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxdict, _BRIEF.maxstring, _BRIEF.maxother = 3, 4, 4, 60, 60


def short(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters for messages (a 400-digit int, a long path).

    A container is shown through ``reprlib`` (a few items per level, a few levels), so a message
    costs the same for a YAML alias bomb or a recursive list as for a small value."""
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        text = _BRIEF.repr(value)
        return text if len(text) <= limit else f"{text[: limit - 4]}...{text[-1]}"
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 15]}... ({len(text)} chars)"


def user_path(value: str, key: str) -> Path:
    """A path the user wrote, ``~`` expanded like a shell (``~nobody`` stays as typed), checked
    for what the OS refuses outright: a NUL byte, a name longer than the file system allows."""
    if "\0" in value:
        raise ConfigError(f"{key}: the path {short(value)} contains a NUL byte")
    path = Path(os.path.expanduser(value))
    try:
        path.exists()
    except OSError as err:  # ENAMETOOLONG and the like; not-found is no error here
        raise ConfigError(f"{key}: cannot use the path {short(value)}: {err.strerror}") from None
    return path


def require(cond: bool, message: str) -> None:
    if not cond:
        raise ConfigError(message)


# --- one table per config class: each field's meaning and valid interval --------------------


def setting(
    default: Any = dataclasses.MISSING,
    doc: str = "",
    valid: Range | None = None,
    *,
    factory: Any = dataclasses.MISSING,
) -> Any:
    """A config field with its one-line meaning (``doc``: the config reference shows it) and, for
    a number, its valid interval: the one place both are written (``documented`` reads them)."""
    metadata: dict[str, Any] = {"doc": doc} | ({"range": valid} if valid is not None else {})
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


def documented(cls: type[C]) -> type[C]:
    """Above ``@dataclass``: sets the class's ``DOCS`` (field -> meaning) and ``RANGES`` (field ->
    Range, what ``validate_fields`` checks), in field order, from its fields' ``setting``."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    cls.DOCS = {f.name: f.metadata["doc"] for f in fields if "doc" in f.metadata}  # type: ignore[attr-defined]
    cls.RANGES = {f.name: f.metadata["range"] for f in fields if "range" in f.metadata}  # type: ignore[attr-defined]
    return cls
