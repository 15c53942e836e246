"""``--storage journal:PATH``: the claim, the study lock and heartbeats on an Optuna journal file,
then the same exactly-once and kill -9 tests as SQLite and PostgreSQL (tests/e2e/test_sweep.py,
tests/e2e/test_faults.py)."""

from __future__ import annotations

import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.sweeps.ledger.journal import HEARTBEAT_ATTR, HeartbeatJournalStorage, journal_path
from ablate.sweeps.ledger.storage import open_storage
from tests.helpers.configs import write_spec
from tests.helpers.forked import run_forked


def test_heartbeat_goes_stale_without_beats(tmp_path: Path) -> None:
    """A RUNNING trial is stale once its heartbeat stopped changing for the grace period, as this
    process watched it (no clocks compared); one without a heartbeat never is (as on RDB)."""
    storage = open_storage(
        f"journal:{tmp_path / 'hb.log'}", create=True, heartbeat_interval=1, grace_period=1
    )
    assert isinstance(storage, HeartbeatJournalStorage)
    study = optuna.create_study(storage=storage)
    beating, dead, silent = (study.ask()._trial_id for _ in range(3))
    storage.record_heartbeat(beating)
    storage.record_heartbeat(dead)
    assert storage._get_stale_trial_ids(study._study_id) == []  # first seen now
    time.sleep(0.7)
    storage.record_heartbeat(beating)
    assert storage._get_stale_trial_ids(study._study_id) == []
    time.sleep(0.7)
    storage.record_heartbeat(beating)
    assert storage._get_stale_trial_ids(study._study_id) == [dead]
    optuna.storages.fail_stale_trials(study)
    states = {t._trial_id: t.state for t in study.get_trials()}
    assert states == {beating: TrialState.RUNNING, dead: TrialState.FAIL, silent: TrialState.RUNNING}
    assert HEARTBEAT_ATTR in storage.get_trial(beating).system_attrs
    storage.record_heartbeat(dead)  # a late beat of a finished trial is dropped, not an error


@pytest.mark.parametrize(
    ("files", "storage", "expect"),
    [
        ({"study.log": "this is not a journal\n"}, "journal:study.log", ["not an Optuna journal"]),
        ({"study.log": None}, "journal:study.log", ["is a folder"]),
        ({}, "journal:nowhere/study.log", ["folder", "nowhere", "not found"]),
        ({}, "journal:", ["names no file"]),
    ],
    ids=["not-a-journal", "folder", "no-parent", "empty"],
)
def test_bad_journal_exits_2(tmp_path: Path, files: dict, storage: str, expect: list[str]) -> None:
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    for name, content in files.items():
        (tmp_path / name).mkdir() if content is None else (tmp_path / name).write_text(content)
    ran = run_forked(["sweep", "tiny.yaml", "--runs", "out", "--no-wandb", "--storage", storage], tmp_path)
    message = " ".join(ran.stderr.split())
    assert ran.returncode == 2, ran.stderr
    assert all(part in message for part in expect), message
    assert not (tmp_path / "out").exists()
    if files.get("study.log"):
        assert (tmp_path / "study.log").read_text() == files["study.log"]  # left as it was


def test_a_journal_path_is_a_user_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``~`` expands as a shell would (``~nobody-here`` stays as typed, never a RuntimeError); a NUL
    byte is refused with the option's name (errors.user_path)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert journal_path("journal:~/s.log") == tmp_path / "s.log"
    assert journal_path("journal:~nobody-here-x/s.log").name == "s.log"
    with pytest.raises(ConfigError, match="--storage: the path .* contains a NUL byte"):
        journal_path("journal:/tmp/a\0b.log")
