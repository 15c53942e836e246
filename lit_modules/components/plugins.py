"""Plugins: the modules that register a user's components, imported in every process that builds
a model, and what a study records of them.

A config or spec lists them under ``plugins:``, each either

- a Python file (``my_norm.py``, ``./plugins/rel.py``: it ends in ``.py`` or holds a ``/``), resolved
  against the folder of the file that names it and recorded absolute, loaded by its path with no
  change to ``sys.path`` (so ``python -P`` workers, SLURM jobs and the W&B agent load it too), or
- an importable module (``mylab.components``), e.g. of an installed package.

Installed packages may instead declare the entry-point group ``ablate.components``
(lit_modules/model/registry.py loads those). Each plugin is recorded with its module, its file, the
SHA-256 of its source (every ``.py`` file of a package) and its distribution's version: the
study's identity includes the hashes, so a study refuses to resume after a plugin changed.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from ablate.errors import ConfigError

FILE_PREFIX = "ablate_plugin_"  # the module name a plugin file is loaded under


def is_file(entry: str) -> bool:
    """Whether a ``plugins:`` entry names a file rather than an importable module."""
    return entry.endswith(".py") or "/" in entry or os.sep in entry


def absolute(entry: str, folder: Path) -> str:
    """A file entry made absolute against ``folder`` (the declaring file's); a module as it is."""
    return os.path.abspath(Path(folder, os.path.expanduser(entry))) if is_file(entry) else entry


def _module_name(path: Path) -> str:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"{FILE_PREFIX}{stem}_{digest}"


def import_plugin(entry: str) -> ModuleType:
    """Import one plugin (once per process); a ConfigError naming it when it cannot be imported."""
    if is_file(entry):
        path = Path(entry)
        name = _module_name(path)
        if name in sys.modules:
            return sys.modules[name]
        if not path.is_file():
            raise ConfigError(f"plugin {entry}: file not found")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except ConfigError:
            del sys.modules[name]
            raise
        except Exception as err:
            del sys.modules[name]
            raise ConfigError(f"plugin {entry} failed to import: {type(err).__name__}: {err}") from None
        return module
    try:
        return importlib.import_module(entry)
    except ConfigError:
        raise
    except ModuleNotFoundError as err:
        if err.name and entry.startswith(err.name):
            raise ConfigError(
                f"plugin {entry!r}: no such module (a file of your own: write its path, e.g. {entry}.py)"
            ) from None
        raise ConfigError(f"plugin {entry!r} failed to import: {type(err).__name__}: {err}") from None
    except Exception as err:
        raise ConfigError(f"plugin {entry!r} failed to import: {type(err).__name__}: {err}") from None


def import_plugins(entries: tuple[str, ...] | list[str]) -> None:
    for entry in entries:
        import_plugin(entry)


def _sources(module: ModuleType) -> list[Path]:
    file = getattr(module, "__file__", None)
    if file is None:
        return []
    path = Path(file)
    if path.name == "__init__.py":  # a package: all of its code
        return sorted(path.parent.rglob("*.py"))
    return [path]


def source_hash(module: ModuleType) -> str | None:
    """SHA-256 over the module's source file(s), names and contents; None when it has no file."""
    files = _sources(module)
    if not files:
        return None
    h = hashlib.sha256()
    root = files[0].parent
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _distribution(module_name: str) -> tuple[str | None, str | None]:
    top = module_name.split(".")[0]
    dists = metadata.packages_distributions().get(top) or []
    if not dists:
        return None, None
    try:
        return dists[0], metadata.version(dists[0])
    except metadata.PackageNotFoundError:
        return dists[0], None


def record(entry: str, module: ModuleType | None = None) -> dict[str, Any]:
    """What a study records of one plugin: the entry, its module, file, source hash and version."""
    module = module or import_plugin(entry)
    dist, version = (None, None) if is_file(entry) else _distribution(module.__name__)
    files = _sources(module)
    return {
        "plugin": entry,
        "name": Path(entry).name if is_file(entry) else module.__name__,  # where it lives aside
        "module": module.__name__,
        "file": str(files[0]) if files else None,
        "sha256": source_hash(module),
        "distribution": dist,
        "version": version,
    }


def records(entries: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """``record`` of every declared plugin and of every installed entry-point plugin, in order."""
    from ablate.lit_modules.model.registry import load_entry_points, loaded_entry_points

    load_entry_points()
    out = [record(e) for e in entries]
    out += [record(ep.value, importlib.import_module(ep.module)) for ep in loaded_entry_points()]
    return out
