"""Files that are either complete or absent: nothing half-written survives a crash."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ablate.errors import ConfigError, user_path

_UMASK_LOCK = threading.Lock()
_UMASK_FALLBACK: int | None = None  # where /proc has no Umask line: read once, under the lock


def current_umask() -> int:
    """This process's umask, the mode bits a new file or folder goes without. Read when needed
    (never at import: importing must not touch process state): on Linux from /proc/self/status,
    which changes nothing; elsewhere once, by setting it and back (``os.umask`` can only be read
    that way), under a lock so that two threads cannot interleave the two calls."""
    global _UMASK_FALLBACK
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        if _UMASK_FALLBACK is None:
            _UMASK_FALLBACK = os.umask(0o022)
            os.umask(_UMASK_FALLBACK)
        return _UMASK_FALLBACK


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to a temporary file in the same folder, fsync, then rename
    over ``path``: a crash or a full disk leaves the old file or the new one, never half of one."""
    path = Path(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise ConfigError(f"cannot write {path}: {err.strerror}") from None
    try:
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ConfigError(f"cannot write {path}: {err.strerror}") from None
    return path


def write_json(path: str | Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def write_yaml(path: str | Path, data: Any) -> None:
    atomic_write(path, yaml.safe_dump(data, sort_keys=False))


@contextlib.contextmanager
def atomic_dir(final: str | Path, *, claim: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling folder; rename it to ``final`` only on success.

    On any exception (bad data, Ctrl-C, a crash) the temporary folder is
    removed, so no half-written run folder is left behind. With ``claim`` (``ablate train``),
    ``final`` is claimed for the whole time (``.NAME.claim`` beside it), so a second process
    writing to the same folder is refused before it starts, not after its work (a sweep's cells
    are claimed in the study instead). A symlink to a folder is written through.
    """
    final = Path(final)
    if final.is_symlink() and final.is_dir():
        final = Path(os.path.realpath(final))
    if final.exists() and not final.is_dir():
        raise ConfigError(f"output folder {final} is a file, not a folder; choose another --out")
    if final.exists() and any(final.iterdir()):
        raise ConfigError(f"output folder {final} already exists and is not empty; choose another --out")
    claimed = None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(final)
        claimed = _claim(final) if claim else None
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=_partial_prefix(final) + _owner() + "."))
        tmp.chmod(0o777 & ~current_umask())  # mkdtemp makes 0700
    except OSError as err:
        if claimed is not None:
            claimed.unlink(missing_ok=True)
        raise ConfigError(f"cannot create output folder {final}: {err.strerror}") from None
    try:
        yield tmp
        if final.exists() and any(final.iterdir()):
            keep = final.parent / f"{final.name}.unpublished-{_owner()}"
            os.replace(tmp, keep)
            raise ConfigError(f"output folder {final} filled up while this ran; the results are in {keep}")
        if final.exists():
            final.rmdir()
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if claimed is not None:
            claimed.unlink(missing_ok=True)


def _claim(final: Path) -> Path:
    """``.NAME.claim`` beside ``final``, created exclusively; a live owner's is a ConfigError, a
    dead process's (kill -9) is taken over."""
    claim = final.parent / f".{final.name}.claim"
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = claim.read_text(errors="replace").strip()
            pid, at, host = owner.partition("@")
            if at and pid.isdigit() and host == socket.gethostname() and not _alive(int(pid)):
                claim.unlink(missing_ok=True)
                continue
            raise ConfigError(
                f"output folder {final} is being written by another process ({owner or 'unknown'}); "
                "choose another --out"
            ) from None
        with os.fdopen(fd, "w") as fh:
            fh.write(_owner())
        return claim
    raise ConfigError(f"output folder {final}: cannot claim it ({claim} keeps reappearing)")


# --- paths named on the command line, and what a killed process leaves behind ---------------


def input_file(path: str | Path, what: str = "YAML file") -> Path:
    """A file the user named: it must exist and be a file (a folder is called a folder)."""
    path = user_path(str(path), what)
    if path.is_dir():
        raise ConfigError(f"{path} is a folder, not a {what}")
    if path.exists() and not path.is_file():
        raise ConfigError(f"{path} is not a regular file (a device, FIFO or socket), not a {what}")
    if not path.is_file():
        raise ConfigError(f"file not found: {path}")
    return path


def output_folder(path: str | Path) -> list[Path]:
    """Create the output folder ``path`` and its missing parents; return the folders it created,
    outermost first. A part of the path that is a file, or a folder that cannot be created
    (read-only, /proc), is a ConfigError naming the path."""
    path = user_path(str(path), "output folder")
    chain = [path, *path.parents]
    blocker = next((p for p in chain if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise ConfigError(f"output folder {path}: {blocker} is a file, not a folder; choose another folder")
    created = [p for p in reversed(chain) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot create output folder {path}: {err.strerror}") from None
    return created


@contextlib.contextmanager
def new_output_folder(path: str | Path) -> Iterator[Path]:
    """``output_folder(path)`` for the body; if the body fails, the folders this call created
    are removed again while still empty (a refused run leaves no empty run folder behind)."""
    created = output_folder(path)
    try:
        yield Path(path)
    except BaseException:
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if empty
        raise


def _partial_prefix(final: Path) -> str:
    return f".{final.name}.partial-"


def _owner() -> str:
    """``PID@HOST`` of this process: who owns a partial folder (host: run folders may be shared)."""
    return f"{os.getpid()}@{socket.gethostname()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def remove_stale_partials(final: Path) -> list[Path]:
    """Remove the ``.NAME.partial-PID@HOST.*`` folders beside ``final`` whose process is gone
    (``kill -9`` skips ``atomic_dir``'s cleanup). A live owner, another host's, or a name
    without an owner is kept. Returns what was removed."""
    prefix = _partial_prefix(final)
    removed = []
    for tmp in final.parent.glob(glob.escape(prefix) + "*"):
        pid, at, rest = tmp.name[len(prefix) :].partition("@")
        host = rest.rpartition(".")[0]
        if at and pid.isdigit() and host == socket.gethostname() and not _alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed
