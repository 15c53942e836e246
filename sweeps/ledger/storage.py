"""Where a study lives and how it is opened: Optuna storage (RDB or journal) with heartbeats,
serialized SQLite transactions, retries of transient database errors, and the study-wide lock.

Everything else in the ledger reaches storage through these functions, so that every process
(driver, worker, report, dashboard) opens a study with the same settings.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from optuna.exceptions import DuplicatedStudyError
from optuna.storages import BaseStorage, RDBStorage
from optuna.study import StudyDirection
from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError

from ablate.errors import ConfigError
from ablate.sweeps.ledger.journal import (
    HeartbeatJournalStorage,
    is_journal,
    journal_path,
    journal_url,
    open_journal,
)
from ablate.sweeps.ledger.secrets import shown
from ablate.sweeps.ledger.study_file import prepare_study_file

LOCK_TTL_S = 60.0
T = TypeVar("T")


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def retry_db(what: str, fn: Callable[[], T], attempts: int = 5) -> T:
    """Run ``fn``, retrying transient database errors.

    Processes that open a fresh database at once race on its schema (PostgreSQL:
    ``duplicate key ... pg_type``; SQLite: the alembic version row) and on the study
    row; a moment later the loser finds everything in place.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except (SQLAlchemyError, OSError) as err:
            if attempt == attempts - 1:
                raise ConfigError(f"{what}: {one_line(err)}") from None
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


def one_line(err: BaseException) -> str:
    """A database error as one line: the driver's own message (not SQLAlchemy's wrapper with its
    SQL and background link), whitespace collapsed, any URL password masked."""
    return shown(" ".join(str(getattr(err, "orig", None) or err).split()))


def open_storage(
    url: str, *, create: bool = False, heartbeat_interval: int = 10, grace_period: int = 30
) -> BaseStorage:
    """An RDB storage with heartbeats (SQLite gets serialized write transactions), or a journal
    file with the same heartbeats (``journal:PATH``, sweeps/ledger/journal.py).

    The URL and its driver are checked first; a SQLite study file or a journal must be a valid
    Optuna study, and is created (complete, see sweeps/ledger/study_file.py) only when ``create``.
    """
    if is_journal(url):
        return open_journal(
            journal_path(url), create=create, heartbeat_interval=heartbeat_interval, grace_period=grace_period
        )
    prepare_study_file(url, create=create)
    is_sqlite = url.startswith("sqlite")
    kwargs = (
        {"connect_args": {"timeout": 120, "isolation_level": None}} if is_sqlite else {"pool_pre_ping": True}
    )
    storage = retry_db(
        f"cannot open study storage {shown(url)}",
        lambda: RDBStorage(
            url, engine_kwargs=kwargs, heartbeat_interval=heartbeat_interval, grace_period=grace_period
        ),
    )
    if is_sqlite:
        event.listen(storage.engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    return storage


@contextlib.contextmanager
def study_lock(storage: BaseStorage, name: str, ttl: float = LOCK_TTL_S) -> Iterator[None]:
    """A mutex from the unique study names (RDB: a unique constraint; journal: the first
    CREATE_STUDY line in the file wins); expired locks are broken."""
    lock_name = f"{name}::lock"
    first_seen: dict[int, float] = {}
    while True:
        try:
            lock_id = storage.create_new_study([StudyDirection.MINIMIZE], lock_name)
            storage.set_study_user_attr(lock_id, "expires", time.time() + ttl)
            break
        except DuplicatedStudyError:
            with contextlib.suppress(KeyError):
                held = storage.get_study_id_from_name(lock_name)
                expires = storage.get_study_user_attrs(held).get("expires")
                first_seen.setdefault(held, time.time())
                if (expires or first_seen[held] + ttl) < time.time():
                    storage.delete_study(held)  # its holder died; by id, so a new lock is safe
                    continue
            time.sleep(0.1 + random.random() * 0.2)
    try:
        yield
    finally:
        with contextlib.suppress(KeyError):
            storage.delete_study(lock_id)


def storage_where(storage: BaseStorage) -> str:
    """The storage as the user named it, without a password."""
    if isinstance(storage, HeartbeatJournalStorage):
        return journal_url(storage.path)
    assert isinstance(storage, RDBStorage)
    return storage.engine.url.render_as_string(hide_password=True)


@contextlib.contextmanager
def heartbeat(storage: BaseStorage, trial_id: int) -> Iterator[None]:
    """Record heartbeats for a claimed trial while the body runs (ask/tell has no thread of its own)."""
    stop = threading.Event()
    interval = storage.get_heartbeat_interval() or 10

    def beat() -> None:
        while True:
            with contextlib.suppress(Exception):  # a missed beat is retried at the next tick
                storage.record_heartbeat(trial_id)
            if stop.wait(interval):
                return

    storage.record_heartbeat(trial_id)
    thread = threading.Thread(target=beat, daemon=True, name=f"heartbeat-{trial_id}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def default_storage(run_dir: Path) -> str:
    """The embedded default: an SQLite study file in the run folder."""
    return sqlite_url(run_dir / "study.db")
