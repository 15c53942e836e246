"""What changed between the settings a study was run with and the settings of this command.

A study refuses a spec whose results would not be comparable with its own (another base config,
variants, metric or direction, plugin code or data). The refusal names the keys that differ,
with both values, and each changed plugin's file, so that the user sees which override, spec
line or file to restore.

A plugin counts by its code, not its comments and docstrings (lit_modules/components/plugins.py
``code_hash``), keyed by its path (``plugins.name_of``). Studies recorded before hashed a plugin's
full source, or keyed a plugin file by its file name alone: ``code_hashed`` lets one resume while
its plugins are unchanged, and records their hashes in today's form from then on; one whose
plugins share a file name recorded only one of them, and is refused.

A plugin's code may change under a study when no finished result ran it (``plugin_fix``): the
cells of the variants whose components it defines all failed (its ``__init__`` raised, say) or
never ran, so a fixed plugin can be retried (``--retry-failed``) in the same study.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ablate.errors import ConfigError
from ablate.experiments.schema.config import without_later_defaults
from ablate.lit_modules.components.plugins import entry_of, is_file, keyed_by_file_name, name_of
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
    old_plugins = _plugins(old)
    if isinstance(old.get("plugin_sources"), dict):  # keyed by file name, as studies recorded before
        old = {**old, "plugin_sources": path_keyed(old["plugin_sources"], old_plugins)}
    old = json.loads(json.dumps({k: _comparable(k, old.get(k)) for k in keys}, default=str))
    new = json.loads(json.dumps({k: _comparable(k, new.get(k)) for k in keys}, default=str))
    a, b = flatten(old), flatten(new)
    return [
        f"{k}: {json.dumps(a.get(k, ABSENT))} -> {json.dumps(b.get(k, ABSENT))}{_plugin_note(k, b, old_plugins)}"
        for k in sorted(set(a) | set(b))
        if a.get(k, ABSENT) != b.get(k, ABSENT)
    ]


def _plugins(spec: dict[str, Any]) -> list[str]:
    """The plugins: entries of a resolved spec's base (as stored: any JSON)."""
    base = spec.get("base")
    entries = base.get("plugins") if isinstance(base, dict) else None
    return [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []


def path_keyed(sources: dict[str, Any], entries: list[str]) -> dict[str, Any]:
    """``plugin_sources`` with each key that is a plugin file's name alone (as studies recorded
    before keys were paths) replaced by that file's key (``plugins.name_of``), where one of
    ``entries`` (the study's plugins) has that name; a name that several share stays as it is."""
    out = {}
    for key, value in sources.items():
        entry = entry_of(key, entries)
        out[name_of(entry) if entry is not None and name_of(entry) not in sources else key] = value
    return out


def shared_file_names(entries: list[str]) -> list[str]:
    """The file names that more than one plugin file of ``entries`` has (``a/p.py``, ``b/p.py``)."""
    names = [Path(e).name for e in entries if is_file(e)]
    return sorted({n for n in names if names.count(n) > 1})


def _plugin_note(key: str, new: dict[str, Any], studied: list[str]) -> str:
    """For a plugin's hash: which file (or module) changed."""
    prefix = "plugin_sources."
    if not key.startswith(prefix):
        return ""
    name = key[len(prefix) :]
    if name in shared_file_names(studied):
        return (
            f" (the study recorded the plugins named {name} by that name alone, so one of them only: "
            "which code its cells ran cannot be told; run this spec as a new study)"
        )
    if key not in new:
        return f" (the study ran with the plugin {name}; this spec has none of that name)"
    return (
        f" (the code of the plugin {name} changed; its comments and docstrings do "
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


# How studies recorded their plugins before: (keyed by file name alone, hashed by full source).
OLDER_FORMS = ((False, True), (True, False), (True, True))


def older_identities(spec: ExperimentSpec, identity: Callable[[bool], str]) -> dict[str, bool]:
    """``identity(full_source)`` (a study's identity from ``spec``) in each form older studies
    recorded plugins in (OLDER_FORMS) -> whether by full source. Keyed by file name only where
    no two of the spec's plugin files share one: such a study recorded one of them only."""
    out: dict[str, bool] = {}
    for by_name, full in OLDER_FORMS:
        if by_name and shared_file_names(list(spec.base.plugins)):
            continue
        with keyed_by_file_name() if by_name else contextlib.nullcontext():
            out.setdefault(identity(full), full)
    return out


def code_hashed(attrs: dict[str, Any], spec: ExperimentSpec) -> dict[str, Any] | None:
    """For a study recorded in an older form (``attrs``: its user attributes, with the hashes of
    its plugins' full source, or keyed by their file names alone): when it is ``spec``'s study
    with the same plugins, the attributes that record them as today ("spec", then "identity", to
    set in that order); None when it differs in more than that, or holds no plugins."""
    stored = attrs.get("spec") or {}
    if not stored.get("plugin_sources"):
        return None
    full = older_identities(spec, lambda full: spec.identity(full_source=full)).get(attrs.get("identity"))
    if full is None:
        return None
    recorded = {**spec.to_dict(), "plugin_sources": spec.plugin_sources(full_source=full)}
    if changed_keys(stored, recorded):
        return None
    return {"spec": {**stored, "plugin_sources": spec.plugin_sources()}, "identity": spec.identity()}


def changed_plugins(stored: dict[str, Any], spec: ExperimentSpec) -> list[str]:
    """The plugins (``plugin_sources`` keys) whose code alone differs between a study's stored
    spec and ``spec``'s, everything else equal (the same plugins too); [] when anything else differs."""
    new = spec.to_dict()
    old_sources = path_keyed(stored.get("plugin_sources") or {}, _plugins(stored))
    new_sources = new.get("plugin_sources") or {}
    if set(old_sources) != set(new_sources) or changed_keys(stored, {**new, "plugin_sources": old_sources}):
        return []
    return sorted(k for k in new_sources if new_sources[k] != old_sources[k])


def plugin_users(spec: ExperimentSpec, key: str) -> list[str]:
    """The variants of ``spec`` that run the code of the plugin ``key``: an active component of
    theirs (the class, or one of its bases) is defined in its module (or package). A plugin's
    code that no component of theirs calls does not count: import-time code runs in every cell."""
    from ablate.lit_modules.model import registry

    module = next(r["module"] for r in spec.plugin_records() if r["name"] == key)

    def uses(variant: str) -> bool:
        classes = registry.active(spec.cell_config(variant, spec.seeds[0]).model).values()
        owners = {c.__module__ for cls in classes for c in cls.__mro__}
        return any(m == module or m.startswith(f"{module}.") for m in owners)

    return [v for v in spec.variants if uses(v)]


def plugin_fix(
    stored: dict[str, Any], spec: ExperimentSpec, finished: dict[str, int]
) -> tuple[list[str], list[str]] | None:
    """When ``spec`` differs from the study's ``stored`` spec only in the code of some plugins:
    (notes, blockers). A note per plugin that no finished cell ran (``finished``: variant -> its
    cells complete or running), so that the study can take its new code; a blocker per plugin
    that one did, naming those cells' variants. None when more than plugin code differs."""
    keys = changed_plugins(stored, spec)
    if not keys:
        return None
    notes, blockers = [], []
    for key in keys:
        users = plugin_users(spec, key)
        ran = {v: finished[v] for v in users if finished.get(v)}
        if ran:
            cells = ", ".join(f"{v} ({n})" for v, n in ran.items())
            blockers.append(
                f"complete or running cells of {cells} ran the old code of the plugin {key}, so it "
                "cannot change under them"
            )
        else:
            who = f"the variants that use it ({', '.join(users)}) have" if users else "no variant uses it:"
            notes.append(
                f"the plugin {key} changed since the study ran; {who} no complete or running cell, "
                "so the study goes on with its new code"
            )
    return notes, blockers
