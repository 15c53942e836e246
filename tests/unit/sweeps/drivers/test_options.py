"""RunOptions (sweeps/drivers/options.py): one object for the run options, that never shows a
storage URL's password and never puts the URL on a worker's command line."""

from __future__ import annotations

import dataclasses

import pytest

from ablate.sweeps.drivers.launcher import Launcher
from ablate.sweeps.drivers.options import RunOptions

URL = "postgresql://ablate:s3cret-pw@db.example:5432/studies"


def test_repr_str_and_format_mask_the_password() -> None:
    options = RunOptions(workers=3, storage=URL, launcher=Launcher("local"))
    for text in (repr(options), str(options), f"{options}", f"{options!r}", repr([options])):
        assert "s3cret-pw" not in text
        assert "postgresql://ablate:***@db.example:5432/studies" in text
    assert "workers=3" in repr(options) and "launcher=Launcher(kind='local'" in repr(options)
    assert options.storage == URL  # masked when shown, never changed


def test_repr_names_every_field() -> None:
    shown = repr(RunOptions())
    assert shown.startswith("RunOptions(") and "storage=None" in shown
    assert all(f"{f.name}=" in shown for f in dataclasses.fields(RunOptions))


def test_frozen_keyword_only_and_slotted() -> None:
    options = RunOptions(storage=URL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.workers = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        RunOptions(2)  # type: ignore[misc]
    assert not hasattr(options, "__dict__")


def test_the_workers_command_line_never_holds_the_url() -> None:
    options = RunOptions(storage=URL, heartbeat_s=7, grace_s=21)
    assert options.worker_args() == ["--heartbeat", "7", "--grace", "21"]
    assert options.heartbeats == {"heartbeat_interval": 7, "grace_period": 21}
