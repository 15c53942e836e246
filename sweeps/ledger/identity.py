"""What changed between the settings a study was run with and the settings of this command.

A study refuses a spec whose results would not be comparable with its own (another base config,
variants, metric or direction, plugin code or data). The refusal names the keys that differ,
with both values, and each changed plugin's file, so that the user sees which override, spec
line or file to restore.

A plugin counts by its code, not its comments and docstrings (lit_modules/components/plugins.py
``code_hash``). Studies recorded before that hashed a plugin's full source: ``code_hashed`` lets
one resume while its plugins are unchanged, and records their code hashes from then on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NoReturn

from ablate.errors import ConfigError
from ablate.experiments.schema.config import without_later_defaults
from ablate.lit_modules.components.plugins import name_of
from ablate.trees import flatten

if TYPE_CHECKING:
    from ablate.experiments.specs.spec import ExperimentSpec

# The parts of a resolved spec (``ExperimentSpec.to_dict()``) that a study's results depend on.
GRID_KEYS = ("base", "variants", "metric", "direction", "plugin_sources", "data_sources")
GRID_WHAT = "base config, variants, metric, direction, plugin code or data"
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
    plugins = {name_of(e): e for e in (new.get("base") or {}).get("plugins") or []}
    return [
        f"{k}: {json.dumps(a.get(k, ABSENT))} -> {json.dumps(b.get(k, ABSENT))}{_plugin_note(k, b, plugins)}"
        for k in sorted(set(a) | set(b))
        if a.get(k, ABSENT) != b.get(k, ABSENT)
    ]


def _plugin_note(key: str, new: dict[str, Any], plugins: dict[str, str]) -> str:
    """For a plugin's hash: which file (or module) changed."""
    prefix = "plugin_sources."
    if not key.startswith(prefix):
        return ""
    name = key[len(prefix) :]
    if key not in new:
        return f" (the study ran with the plugin {name}; this spec has none of that name)"
    return (
        f" (the code of the plugin {plugins.get(name, name)} changed; its comments and docstrings do "
        "not count, but in a study recorded before plugins were hashed by their code they do)"
    )


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
        "start it as a new study in another --runs folder (or --storage), or resume it with the "
        "same spec, overrides, plugins and data as before"
    )


def code_hashed(attrs: dict[str, Any], spec: ExperimentSpec) -> dict[str, Any] | None:
    """For a study recorded before plugins were hashed by their code (``attrs``: its user
    attributes, with the hashes of their full source): when it is ``spec``'s study with the same
    plugins, the attributes that record their code hashes instead ("spec", then "identity", to set
    in that order); None when it differs in more than that, or holds no plugins."""
    stored = attrs.get("spec") or {}
    if not stored.get("plugin_sources"):
        return None
    by_source = {**spec.to_dict(), "plugin_sources": spec.plugin_sources(full_source=True)}
    if attrs.get("identity") != spec.identity(full_source=True) or changed_keys(stored, by_source):
        return None
    return {"spec": {**stored, "plugin_sources": spec.plugin_sources()}, "identity": spec.identity()}
