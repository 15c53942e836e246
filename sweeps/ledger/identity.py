"""What changed between the settings a study was run with and the settings of this command.

A study refuses a spec whose results would not be comparable with its own (another base config,
variants, metric or direction). The refusal names the keys that differ, with both values, so
that the user sees which override or spec line to restore.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from ablate.errors import ConfigError
from ablate.experiments.schema.config import without_later_defaults
from ablate.trees import flatten

# The parts of a resolved spec (``ExperimentSpec.to_dict()``) that a study's results depend on.
GRID_KEYS = ("base", "variants", "metric", "direction", "plugin_sources", "data_sources")
GRID_WHAT = "base config, variants, metric, direction, plugin source or data"
# Recorded only since a later version: a study that lacks the key cannot be checked on it.
RECORDED_LATER = ("data_sources",)
ABSENT = "(absent)"
SHOWN = 6  # changed keys named in one message


def changed_keys(old: dict[str, Any], new: dict[str, Any], keys: tuple[str, ...] = GRID_KEYS) -> list[str]:
    """``key: old -> new`` for every dotted key under ``keys`` whose value differs."""
    # Compare as stored: the study keeps its attributes as JSON (tuples become lists). Keys the
    # config gained later count only away from their defaults, as in the identity.
    keys = tuple(k for k in keys if k not in RECORDED_LATER or k in old)
    old = json.loads(json.dumps({k: _comparable(k, old.get(k)) for k in keys}, default=str))
    new = json.loads(json.dumps({k: _comparable(k, new.get(k)) for k in keys}, default=str))
    a, b = flatten(old), flatten(new)
    return [
        f"{k}: {json.dumps(a.get(k, ABSENT))} -> {json.dumps(b.get(k, ABSENT))}"
        for k in sorted(set(a) | set(b))
        if a.get(k, ABSENT) != b.get(k, ABSENT)
    ]


def _comparable(key: str, value: Any) -> Any:
    return without_later_defaults(value) if key == "base" and isinstance(value, dict) else value


def refuse_changes(
    study_name: str, where: str, changes: list[str], fallback: str, what: str = GRID_WHAT
) -> NoReturn:
    """Raise the refusal naming the changed keys (``fallback`` when none can be named)."""
    if not changes:
        changes = [fallback]
    shown = "; ".join(changes[:SHOWN]) + (
        f"; and {len(changes) - SHOWN} more" if len(changes) > SHOWN else ""
    )
    raise ConfigError(
        f"the study {study_name!r} in {where} was run with a different {what} ({shown}); "
        "use another --out/--storage, or the same spec and overrides as before"
    )
