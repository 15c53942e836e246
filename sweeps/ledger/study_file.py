"""Where a study lives: the ``--storage`` URL checked before anything is written, and the SQLite
study file that is either a valid Optuna study or refused.

An existing file that is not an Optuna study (0 bytes, truncated, another program's database)
must not be taken for a new study: Optuna would create its tables in it and every cell would
rerun. So a new study file is built aside and hard-linked into place complete, and any study
file found already in place must hold Optuna's tables.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from ablate.errors import ConfigError
from ablate.files import current_umask
from ablate.sweeps.ledger.journal import is_journal, journal_path
from ablate.sweeps.ledger.secrets import shown

# Tables every Optuna RDB schema has (optuna/storages/_rdb/models.py).
OPTUNA_TABLES = frozenset({"studies", "trials", "version_info"})
URL_HELP = (
    "e.g. sqlite:///runs/study.db, postgresql+psycopg2://user:pw@host/db, mysql+pymysql://..., "
    "journal:/shared/study.log (a file on a shared file system, no server)"
)


def check_storage_url(url: str) -> Path | None:
    """Parse ``url`` and import its database driver; the SQLite file or journal it names, or None
    for a server.

    A malformed URL, an unknown database or a driver that is not installed is a ConfigError
    here, before a run folder exists; an in-memory SQLite database is one too (worker
    processes could not share it).
    """
    if is_journal(url):
        return journal_path(url)
    try:
        parsed = make_url(url)
        dialect = parsed.get_dialect()
    except ArgumentError as err:  # NoSuchModuleError (unknown database) is one too
        raise ConfigError(f"--storage {shown(url)!r} is not a database URL ({err}); {URL_HELP}") from None
    try:
        dialect.import_dbapi()
    except ImportError as err:
        backend = parsed.get_backend_name()
        raise ConfigError(
            f"--storage {shown(url)!r}: its {backend} driver {parsed.get_driver_name()!r} is not installed "
            f"({err}); install it, or name an installed driver in the URL ({backend}+DRIVER://...; "
            f"{URL_HELP})"
        ) from None
    if parsed.get_backend_name() != "sqlite":
        return None
    if parsed.database in (None, "", ":memory:") or parsed.database.startswith("file::memory:"):
        raise ConfigError(
            f"--storage {shown(url)!r} is an in-memory SQLite database, which worker processes cannot "
            "share; name a file: sqlite:///path/study.db"
        )
    return Path(parsed.database)


def check_study_file(path: Path) -> None:
    """An existing SQLite study file must hold an Optuna schema; else a ConfigError naming it."""
    if path.is_dir():
        raise ConfigError(f"the study file {path} is a folder; name a file (sqlite:///path/study.db)")
    if path.stat().st_size == 0:
        raise ConfigError(
            f"the study file {path} is empty (0 bytes), not an Optuna study; move it away to start "
            "a new study, or pass the --storage/--out of the study you meant"
        )
    try:
        # Read-only: a check must never create or change the file; waits for writers like the workers do.
        with contextlib.closing(
            sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=120)
        ) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as err:
        if err.sqlite_errorname not in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
            raise ConfigError(f"cannot read the study file {path}: {err}") from None
        tables = None
    if tables is None or not OPTUNA_TABLES.issubset(tables):
        what = "not a SQLite database" if tables is None else "a SQLite database without Optuna's tables"
        raise ConfigError(
            f"the study file {path} is {what}, not an Optuna study; move it away to start a new "
            "study, or pass the --storage/--out of the study you meant"
        )


def create_study_file(path: Path) -> None:
    """Create an empty Optuna study file at ``path`` unless one is there (safe to race).

    The schema is written into a temporary file beside it, which is then hard-linked to
    ``path``: a concurrent starter sees no file or a complete one, never a half-made one.
    """
    from optuna.storages import RDBStorage

    if not path.parent.is_dir():
        raise ConfigError(f"cannot create the study file {path}: folder {path.parent} not found")
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
        os.close(fd)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; SQLite would have made the usual mode
    except OSError as err:
        raise ConfigError(f"cannot create the study file {path}: {err.strerror}") from None
    try:
        try:
            RDBStorage(f"sqlite:///{Path(tmp).resolve()}").engine.dispose()
        except SQLAlchemyError as err:  # a full disk, say
            raise ConfigError(f"cannot create the study file {path}: {err}") from None
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another starter won; its file is complete
        except OSError:  # a file system without hard links: a plain rename, if still absent
            if not path.exists():
                os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def prepare_study_file(url: str, *, create: bool) -> None:
    """Check ``url``; for a SQLite file, refuse an invalid one and create a missing one if asked
    (a journal is checked and created by sweeps/ledger/journal.py)."""
    path = check_storage_url(url)
    if path is None or is_journal(url):
        return
    if not path.exists():
        if not create:
            raise ConfigError(f"no study file {path}; pass the --storage URL of an existing study")
        create_study_file(path)
    check_study_file(path)


def file_identity(url: str) -> tuple[int, int] | None:
    """(device, inode) of a SQLite study file, to notice later that it was deleted or replaced
    while the sweep ran (its processes would go on writing to the unlinked file); None for a server."""
    path = check_storage_url(url)
    if path is None:
        return None
    st = path.stat()
    return st.st_dev, st.st_ino


def file_lost(url: str, identity: tuple[int, int] | None) -> str | None:
    """Why the study file opened as ``identity`` is no longer at ``url``, or None if it still is."""
    path = check_storage_url(url)
    if path is None or identity is None:
        return None
    try:
        st = path.stat()
    except FileNotFoundError:
        return f"the study file {path} was deleted while the sweep ran; its results are gone"
    if (st.st_dev, st.st_ino) != identity:
        return f"the study file {path} was replaced while the sweep ran; its results are not in it"
    return None
