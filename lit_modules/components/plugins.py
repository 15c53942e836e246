"""Plugins: the modules that register a user's components, imported in every process that trains,
and what a study records of them.

A config or spec lists them under ``plugins:``, each either

- a Python file (``my_norm.py``, ``./plugins/rel.py``: it ends in ``.py`` or holds a ``/``), resolved
  against the folder of the file that names it and recorded absolute, loaded by its path with no
  change to ``sys.path`` (so ``python -P`` workers, SLURM jobs and the W&B agent load it too), or
- an importable module (``mylab.components``), e.g. of an installed package.

Installed packages may instead declare the entry-point group ``ablate.components``
(lit_modules/model/registry.py loads those). Each plugin is recorded with its module, its file, the
SHA-256 of its code (``code_hash``, over every ``.py`` file of a package) and its distribution's
version: the study's identity includes the hashes, so a study refuses to resume after a plugin's
code changed. A hash is keyed by the plugin's absolute path (a module's: its name), so that two
plugins with one file name (``a/p.py``, ``b/p.py``) are both recorded; studies recorded before
keyed a file by its name alone (``keyed_by_file_name``, ``entry_of`` read that form). The code is the source's tokens without its comments, docstrings, blank lines and
layout: an edit of those cannot move a number, so the study resumes after one. Studies recorded
before hashed the full source (``source_hash``); one still resumes while its plugins match that.

Only training imports a plugin (and ``ablate verify``, after checking its hash: ``check_unchanged``);
reading a study's results records what it recorded (``recorded``) and imports nothing.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import hashlib
import importlib
import importlib.util
import io
import os
import sys
import tokenize
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from importlib.machinery import ModuleSpec
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


_BY_FILE_NAME: contextvars.ContextVar[bool] = contextvars.ContextVar("by_file_name", default=False)


def name_of(entry: str) -> str:
    """The plugin's key in ``plugin_sources``: a file's absolute path (two plugins may share a
    file name: ``a/p.py``, ``b/p.py``), or the module's name. Inside ``keyed_by_file_name``, a file's
    name alone, as studies recorded it before."""
    if not is_file(entry):
        return entry
    return Path(entry).name if _BY_FILE_NAME.get() else os.path.abspath(entry)


@contextlib.contextmanager
def keyed_by_file_name() -> Iterator[None]:
    """Inside: ``name_of`` gives a file plugin's file name, the key studies recorded before plugins
    were keyed by their path; so that the identity such a study recorded can be computed again."""
    token = _BY_FILE_NAME.set(True)
    try:
        yield
    finally:
        _BY_FILE_NAME.reset(token)


def entry_of(key: str, entries: Iterable[str]) -> str | None:
    """The entry of ``entries`` that a ``plugin_sources`` key names: by its key, or by its file
    name alone (a study recorded before keys were paths) when no other entry has that name."""
    entries = list(entries)
    if found := next((e for e in entries if name_of(e) == key), None):
        return found
    named = [e for e in entries if is_file(e) and Path(e).name == key]
    return named[0] if len(named) == 1 else None


def module_name(entry: str) -> str:
    """The module a plugin is imported as: a file under its own name (``FILE_PREFIX``)."""
    if not is_file(entry):
        return entry
    path = Path(entry)
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"{FILE_PREFIX}{stem}_{digest}"


def import_plugin(entry: str) -> ModuleType:
    """Import one plugin (once per process); a ConfigError naming it when it cannot be imported."""
    if not is_file(entry):
        return _import_module(entry)
    path = Path(entry)
    name = module_name(entry)
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
    except (Exception, SystemExit) as err:  # sys.exit() in a plugin is its failure, not the command's end
        del sys.modules[name]
        raise _failed(entry, err) from None
    return module


def _import_module(entry: str) -> ModuleType:
    try:
        return importlib.import_module(entry)
    except ConfigError:
        raise
    except ModuleNotFoundError as err:
        if err.name and (entry == err.name or entry.startswith(f"{err.name}.")):  # the plugin itself
            raise ConfigError(
                f"plugin {entry!r}: no such module (a file of your own: write its path, e.g. {entry}.py)"
            ) from None
        raise _failed(entry, err) from None
    except (Exception, SystemExit) as err:
        raise _failed(entry, err) from None


def _failed(entry: str, err: BaseException) -> ConfigError:
    """The error of a plugin whose code raised ``err`` on import: a module it imports missing is
    named as that, with the plugin that imports it; an exit (``sys.exit``) as one, whatever its
    code, since nothing was run."""
    shown = entry if is_file(entry) else repr(entry)
    if isinstance(err, ModuleNotFoundError) and err.name:
        return ConfigError(
            f"plugin {shown} failed to import: it imports the module {err.name!r}, which is not "
            "installed here (install it where the plugin runs)"
        )
    if isinstance(err, SystemExit):
        return ConfigError(
            f"plugin {shown} failed to import: it exited (SystemExit: {err.code!r}, e.g. sys.exit()); "
            "a plugin must only define and register its components"
        )
    return ConfigError(f"plugin {shown} failed to import: {type(err).__name__}: {err}")


def import_plugins(entries: tuple[str, ...] | list[str]) -> None:
    for entry in entries:
        import_plugin(entry)


# ---- where a plugin's code is ------------------------------------------------------------


def _files_at(origin: Path) -> tuple[Path, list[Path]]:
    """(root, files) of the code at ``origin``: a package's folder and all of its ``.py`` files,
    or a module's folder and its file."""
    if origin.name == "__init__.py":
        return origin.parent, sorted(origin.parent.rglob("*.py"))
    return origin.parent, [origin]


def module_files(module: ModuleType) -> tuple[Path, list[Path]]:
    """(root, files) of an imported module's code; no files for a module without one."""
    file = getattr(module, "__file__", None)
    return _files_at(Path(file)) if file else (Path(), [])


def _find_spec(name: str) -> ModuleSpec | None:
    """The spec of module ``name``, found without importing it or its parent packages: each part
    looked for by the import system's finders in the folders of the package found before it."""
    parts = name.split(".")
    path: list[str] | None = None
    found: ModuleSpec | None = None
    for i in range(len(parts)):
        qualified = ".".join(parts[: i + 1])
        found = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is not None and (found := find(qualified, path)) is not None:
                break
        if found is None:
            return None
        path = list(found.submodule_search_locations or [])
    return found


def plugin_files(entry: str) -> tuple[Path, list[Path]]:
    """(root, files) of a plugin's code, found without importing it; no files when it is absent."""
    if is_file(entry):
        return (Path(entry).parent, [Path(entry)]) if Path(entry).is_file() else (Path(), [])
    if entry in sys.modules:
        return module_files(sys.modules[entry])
    try:
        spec = _find_spec(entry)
    except (ImportError, ValueError):
        return Path(), []
    if spec is None or not spec.has_location or not spec.origin:
        return Path(), []
    return _files_at(Path(spec.origin))


# ---- hashes ------------------------------------------------------------------------------

# Layout kept as marks (the blocks' structure), comments and blank lines dropped.
_MARKS = {tokenize.NEWLINE: "\x01NEWLINE", tokenize.INDENT: "\x01INDENT", tokenize.DEDENT: "\x01DEDENT"}
_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
# Python 3.12 splits an f-string into tokens (PEP 701), 3.11 gives one: kept whole, as written.
_FSTRING_START = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_FSTRING_END = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}
Position = tuple[int, int]  # (line, UTF-8 byte column), as ast counts


def _docstrings(tree: ast.AST) -> list[tuple[Position, Position]]:
    """Where each statement that is a string alone lies: docstrings (and attribute docstrings),
    which do nothing when the code runs."""
    return [
        ((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or 0))
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
    ]


def code_tokens(text: str) -> list[str] | None:
    """The tokens of the Python source ``text`` that make its code: without comments, docstrings,
    blank lines and layout (indentation as INDENT/DEDENT marks); None when it does not parse."""
    try:
        spans = _docstrings(ast.parse(text))
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, ValueError, tokenize.TokenError):
        return None
    lines = io.StringIO(text).readlines()

    def at(pos: tuple[int, int]) -> Position:  # tokenize counts characters, ast bytes
        row, col = pos
        return row, len(lines[row - 1][:col].encode())

    out: list[str] = []
    depth, start, docstring = 0, (0, 0), False  # docstring: one was dropped, its NEWLINE goes too
    for tok in tokens:
        if tok.type in _FSTRING_START:
            start = tok.start if depth == 0 else start
            depth += 1
        elif depth:
            if tok.type in _FSTRING_END:
                depth -= 1
                if depth == 0:
                    out.append(_between(lines, start, tok.end))
        elif tok.type == tokenize.STRING and any(a <= at(tok.start) < b for a, b in spans):
            docstring = True
        elif tok.type not in _DROPPED:
            if not (docstring and tok.type == tokenize.NEWLINE):
                out.append(_MARKS.get(tok.type, tok.string))
            docstring = False
    return out


def _between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The source text from ``start`` to ``end`` (tokenize's (line, character) positions)."""
    (r0, c0), (r1, c1) = start, end
    if r0 == r1:
        return lines[r0 - 1][c0:c1]
    return lines[r0 - 1][c0:] + "".join(lines[r0 : r1 - 1]) + lines[r1 - 1][:c1]


def _code(data: bytes) -> bytes:
    """A file's code (``code_tokens``, NUL-separated), or its bytes when it does not parse."""
    try:
        text = importlib.util.decode_source(data)  # its encoding; universal newlines
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data
    tokens = code_tokens(text)
    return data if tokens is None else "\0".join(tokens).encode()


def _digest(root: Path, files: list[Path], content: Callable[[bytes], bytes]) -> str | None:
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0" + content(f.read_bytes()) + b"\0")
    return h.hexdigest()


def code_hash(root: Path, files: list[Path]) -> str | None:
    """SHA-256 over the files' names and code (``code_tokens``): what a study records."""
    return _digest(root, files, _code)


def full_hash(root: Path, files: list[Path]) -> str | None:
    """SHA-256 over the files' names and full contents, as studies recorded it before ``code_hash``."""
    return _digest(root, files, lambda data: data)


def source_hash(module: ModuleType) -> str | None:
    """``full_hash`` of an imported module's source file(s); None when it has no file."""
    return full_hash(*module_files(module))


def check_unchanged(entry: str, recorded: str | None) -> None:
    """A ConfigError naming the plugin's file unless its code is the one a study recorded (by its
    code hash, or by its full source's as studies recorded before); nothing is imported."""
    root, files = plugin_files(entry)
    if not files:
        where = "file not found" if is_file(entry) else "no such module here"
        raise ConfigError(f"plugin {entry}: {where}; the study ran with it (recorded hash {recorded})")
    if recorded in (code_hash(root, files), full_hash(root, files)):
        return
    raise ConfigError(
        f"plugin {files[0] if is_file(entry) else entry} changed since the study ran (its code, "
        f"comments and docstrings aside: hash {code_hash(root, files)}, recorded {recorded}); "
        "restore it as it was when the cells ran"
    )


# ---- records -----------------------------------------------------------------------------


def _distribution(module: str) -> tuple[str | None, str | None]:
    top = module.split(".")[0]
    dists = metadata.packages_distributions().get(top) or []
    if not dists:
        return None, None
    try:
        return dists[0], metadata.version(dists[0])
    except metadata.PackageNotFoundError:
        return dists[0], None


def record(entry: str, module: ModuleType | None = None) -> dict[str, Any]:
    """What a study records of one plugin: the entry, its module, file, code hash and version."""
    module = module or import_plugin(entry)
    root, files = module_files(module)
    return _record(entry, module.__name__, files, code_hash(root, files))


def recorded(entry: str, sha256: str | None) -> dict[str, Any]:
    """``record`` of a plugin with the hash a study recorded, to read its results: nothing is
    imported, and the plugin may be absent (its file is then the one recorded)."""
    files = plugin_files(entry)[1] or ([Path(entry)] if is_file(entry) else [])
    return _record(entry, module_name(entry), files, sha256)


def _record(entry: str, module: str, files: list[Path], sha256: str | None) -> dict[str, Any]:
    dist, version = (None, None) if is_file(entry) else _distribution(module)
    return {
        "plugin": entry,
        "name": name_of(entry) if is_file(entry) else module,  # its key in plugin_sources
        "module": module,
        "file": str(files[0]) if files else None,
        "sha256": sha256,
        "distribution": dist,
        "version": version,
    }
