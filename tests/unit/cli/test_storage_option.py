"""``--storage URL`` with a password: the storage gets the URL as typed (the parser masks nothing
before it reads it), and no password reaches another process's command line or an error message.
No server: the storage is intercepted where the URL is opened (sweeps/ledger/storage.py)."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest

from ablate.cli import build_parser, commands, main
from ablate.sweeps.drivers import grid
from ablate.sweeps.ledger import storage
from ablate.sweeps.ledger.secrets import STORAGE_ENV
from docs._gen import reference
from tests.helpers.configs import write_spec

URL = "postgresql+psycopg2://abl:s3cretPW@db.example:5432/studies"
ISA_VARS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS")


class Opened(Exception):
    """Raised where the database would be connected to: the URL has arrived."""


@pytest.mark.parametrize("form", ["two words", "one word"])
def test_sweep_opens_the_storage_with_the_password_as_typed(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []

    def rdb_storage(url: str, **_: object) -> None:
        opened.append(url)
        raise Opened

    monkeypatch.setattr(storage, "RDBStorage", rdb_storage)
    monkeypatch.setattr(grid, "prepare_data", lambda specs: None)  # the data is not the subject
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    spec = write_spec(tmp_path)
    option = ["--storage", URL] if form == "two words" else [f"--storage={URL}"]
    argv = ["sweep", str(spec), *option, "--runs", str(tmp_path / "runs"), "--no-wandb"]
    monkeypatch.setattr(sys, "argv", ["ablate", *argv])
    with pytest.raises(Opened):
        main()  # as the `ablate` script calls it: the arguments are this process's
    assert opened and set(opened) == {URL}  # "password authentication failed" when it was ***
    assert sys.argv == ["ablate", *argv]


def restarting_commands() -> set[str]:
    """The subcommands whose function restarts the process pinned (``commands.pin_process``)."""
    restarts = {
        fn
        for _, fn in inspect.getmembers(commands, inspect.isfunction)
        if "pin_process(" in inspect.getsource(fn)
    } - {commands.pin_process}
    # The parser holds each command by name (parser.Command); commands.py has the function.
    return {
        name
        for name, _, p in reference.subcommands(build_parser())
        if getattr(commands, getattr(p.get_default("func"), "name", ""), None) in restarts
    }


def test_no_command_that_restarts_itself_takes_a_storage_url() -> None:
    """A pinned restart reruns the command line main was given: a ``--storage URL`` on it would be
    the restarted process's command line too. The URL a restarted command needs comes through
    $ABLATE_STORAGE, which the restart inherits (next test)."""
    names = restarting_commands()
    assert {"train", "verify"} <= names
    parsers = {name: p for name, _, p in reference.subcommands(build_parser())}
    takes_storage = [n for n in names if any("--storage" in a.option_strings for a in parsers[n]._actions)]
    assert takes_storage == []


def test_a_pinned_restart_carries_the_storage_in_its_environment_only(
    tiny_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in ISA_VARS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv(STORAGE_ENV, URL)
    restarts: list[tuple[list[str], dict[str, str]]] = []

    def execve(path: str, args: list[str], env: dict[str, str]) -> None:
        restarts.append((args, env))
        raise SystemExit(0)  # the real one never returns

    monkeypatch.setattr(os, "execve", execve)
    with pytest.raises(SystemExit):
        main(["train", str(tiny_config), "trainer.cpu_isa=default"])
    [(args, env)] = restarts
    assert not any("s3cret" in a for a in args) and env[STORAGE_ENV] == URL
    assert "s3cret" not in capsys.readouterr().err


def test_a_storage_url_a_command_does_not_take_is_refused_masked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["train", "x.yaml", "--storage", URL])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "unrecognized arguments: --storage" in err
    assert "s3cret" not in err and "abl:***@db.example" in err
