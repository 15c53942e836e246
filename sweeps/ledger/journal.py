"""A study in one append-only file on a shared file system: ``--storage journal:PATH``.

Optuna's JournalStorage writes every operation as one JSON line, appended under a file lock,
and every process replays the lines in file order. That order is what makes the suite's
guarantees hold without a database server:

- The claim. Two workers that both write ``WAITING -> RUNNING`` for one trial append two
  lines; on replay the first one in the file wins and the second is rejected (the trial is
  already RUNNING), and ``set_trial_state_values`` returns True only to the writer whose line
  won. No ``BEGIN IMMEDIATE`` is needed: there is no read-then-write gap, the file order decides.
- The study lock (sweeps/ledger/storage.py) is a study whose name must be unique; the first
  ``CREATE_STUDY`` line wins, later ones raise DuplicatedStudyError in their writer.
- Heartbeats. Optuna implements them for RDB storage only; ``HeartbeatJournalStorage`` adds
  them here as a trial system attribute. A trial is stale once its heartbeat has not changed
  for ``grace_period`` seconds *as this process watched it* (the way Optuna's own file lock
  judges a stale lock by its mtime): machines' clocks never compare, so clock skew between
  cluster nodes cannot fail a live cell. A process that opens the study after its workers
  died therefore reruns their cells one grace period later, not at once.

The lock is ``JournalFileOpenLock`` (an ``O_CREAT | O_EXCL`` lock file): atomic on local
disks and on NFSv3 or later, Lustre and GPFS. Optuna's default symlink lock is only needed
on NFSv2.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import JournalStorage
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import FrozenTrial, TrialState

from ablate.errors import ConfigError, user_path

PREFIX = "journal:"
HEARTBEAT_ATTR = "ablate:heartbeat"


def is_journal(url: str) -> bool:
    return url.startswith(PREFIX)


def journal_path(url: str) -> Path:
    """The file a ``journal:PATH`` URL names (relative to the current folder), made absolute."""
    raw = url[len(PREFIX) :]
    if not raw.strip():
        raise ConfigError(f"--storage {url!r} names no file; e.g. journal:/shared/study.log")
    return user_path(raw, "--storage").absolute()  # ~ as a shell expands it; NUL, ENAMETOOLONG refused


def journal_url(path: Path) -> str:
    return f"{PREFIX}{path}"


def check_journal_file(path: Path) -> None:
    """An existing journal must be one: a folder, or a file whose first line is not an Optuna
    journal entry, is refused (an empty file is a journal nothing was written to yet)."""
    if path.is_dir():
        raise ConfigError(f"the journal {path} is a folder; name a file (journal:/path/study.log)")
    try:
        with path.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError as err:
        raise ConfigError(f"cannot read the journal {path}: {err.strerror}") from None
    if not first:
        return
    try:
        entry = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        entry = None
    if not isinstance(entry, dict) or "op_code" not in entry:
        raise ConfigError(
            f"the journal {path} is not an Optuna journal (its first line is no journal entry); "
            "move it away to start a new study, or pass the --storage of the study you meant"
        )


class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
    """JournalStorage with Optuna's heartbeat interface, so that ``fail_stale_trials`` works."""

    def __init__(self, path: Path, heartbeat_interval: int, grace_period: int) -> None:
        lock = JournalFileOpenLock(str(path))
        super().__init__(JournalFileBackend(str(path), lock_obj=lock))
        self.path = path
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period
        # trial id -> (last heartbeat value seen, this process's monotonic time it was first seen)
        self._seen: dict[int, tuple[float, float]] = {}

    def record_heartbeat(self, trial_id: int) -> None:
        # Finished meanwhile (here, or by the worker that won it): as on RDB, not an error.
        with contextlib.suppress(UpdateFinishedTrialError):
            self.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, time.time())

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        now = time.monotonic()
        stale = []
        for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            beat = t.system_attrs.get(HEARTBEAT_ATTR)
            if beat is None:
                continue  # as on RDB: a trial without a heartbeat is never stale
            seen, since = self._seen.get(t._trial_id, (None, now))
            if seen != beat:
                self._seen[t._trial_id] = (beat, now)
            elif now - since > self.grace_period:
                stale.append(t._trial_id)
        return stale

    def get_heartbeat_interval(self) -> int | None:
        return self.heartbeat_interval

    def get_heartbeat_stale_trial_callback(self) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        return None


def open_journal(path: Path, *, create: bool, heartbeat_interval: int, grace_period: int) -> JournalStorage:
    """The journal at ``path``; a missing one is created only with ``create``."""
    if not path.exists():
        if not create:
            raise ConfigError(f"no journal {path}; pass the --storage journal:PATH of an existing study")
        if not path.parent.is_dir():
            raise ConfigError(f"cannot create the journal {path}: folder {path.parent} not found")
    else:
        check_journal_file(path)
    try:
        return HeartbeatJournalStorage(path, heartbeat_interval, grace_period)
    except OSError as err:
        raise ConfigError(f"cannot open the journal {path}: {err.strerror}") from None
