"""Files that are either complete or absent: nothing half-written survives a crash."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ablate.errors import ConfigError

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise ConfigError(f"cannot write {path}: {err.strerror}") from None
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ConfigError(f"cannot write {path}: {err.strerror}") from None


def write_json(path: str | Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def write_yaml(path: str | Path, data: Any) -> None:
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))


@contextlib.contextmanager
def atomic_dir(final: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling folder; rename it to ``final`` only on success.

    On any exception (bad data, Ctrl-C, a crash) the temporary folder is
    removed, so no half-written run folder is left behind.
    """
    final = Path(final)
    if final.exists() and any(final.iterdir()):
        raise ConfigError(f"output folder {final} already exists and is not empty; choose another --out")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.partial-"))
        tmp.chmod(0o777 & ~_UMASK)  # mkdtemp makes 0700
    except OSError as err:
        raise ConfigError(f"cannot create output folder {final}: {err.strerror}") from None
    try:
        yield tmp
        if final.exists():
            final.rmdir()
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
