"""``ablate.cli.main(argv)`` runs exactly ``argv`` and leaves the process as it found it: neither
``sys.argv`` nor ``os.environ`` changes, twice in one process. The parser never reads the
environment: ``$ABLATE_STORAGE`` is read when a command runs, so a password in it reaches
neither ``--help`` nor the generated reference page."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from ablate.cli import build_parser, main
from ablate.cli.parser import storage_from_env
from ablate.sweeps.ledger.secrets import STORAGE_ENV, masked_argv
from docs._gen import reference

SECRET_URL = "postgresql://u:secret@h/db"
# What this process was started with, as far as main can tell: a command that is not the one run.
PROCESS_ARGV = ["ablate", "sweep", "mine.yaml", "--storage", SECRET_URL]


def every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    parser = build_parser()
    return [("ablate", parser), *((name, p) for name, _, p in reference.subcommands(parser))]


def test_main_runs_the_argv_it_is_given_and_leaves_argv_and_environ_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(PROCESS_ARGV))
    monkeypatch.setenv(STORAGE_ENV, SECRET_URL)
    environ = dict(os.environ)

    assert main(["configs"]) == 0
    listed = capsys.readouterr()
    assert "order" in listed.out and "ablate configs copy NAME" in listed.err

    assert main(["sweep", "x.yaml", "--workers", "0"]) == 2  # not the process's mine.yaml
    assert "--workers=0 is out of range" in capsys.readouterr().err

    with pytest.raises(SystemExit) as exited:
        main(["power", "--help"])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("usage: ablate power")

    assert sys.argv == PROCESS_ARGV  # not masked, not replaced
    assert dict(os.environ) == environ
    assert list(tmp_path.iterdir()) == []


def test_the_storage_default_is_read_when_the_command_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    parser = build_parser()  # built before the variable is set: it must not matter
    monkeypatch.setenv(STORAGE_ENV, SECRET_URL)
    args = parser.parse_args(["report", "runs/x"])
    assert args.storage is None  # the parser took nothing from the environment
    storage_from_env(args)
    assert args.storage == SECRET_URL
    given = parser.parse_args(["report", "runs/x", "--storage", "sqlite:///other.db"])
    storage_from_env(given)
    assert given.storage == "sqlite:///other.db"  # --storage wins over the variable
    no_storage = parser.parse_args(["compare", "a", "b"])
    storage_from_env(no_storage)
    assert not hasattr(no_storage, "storage")


def test_a_password_in_the_environment_reaches_no_help_and_no_reference_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(STORAGE_ENV, SECRET_URL)
    for name, parser in every_parser():
        assert "secret" not in parser.format_help(), f"{name} --help shows ${STORAGE_ENV}"
    page = reference.render_cli()
    assert "secret" not in page and "postgresql://u:" not in page
    assert "==SUPPRESS==" not in page and "MISPLACED_OUT" not in page  # the hidden --out stays hidden
    assert "## `ablate configs copy`" in page  # nested commands have their section


def test_wandb_sees_the_command_line_masked_and_the_process_keeps_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What replaced main's rewrite of sys.argv: W&B reads the command line inside masked_argv
    (wandb_glue.log_summary), which masks the password and then restores the list."""
    monkeypatch.setattr(sys, "argv", list(PROCESS_ARGV))
    with masked_argv():
        assert sys.argv == ["ablate", "sweep", "mine.yaml", "--storage", "postgresql://u:***@h/db"]
    assert sys.argv == PROCESS_ARGV
    with pytest.raises(RuntimeError), masked_argv():
        raise RuntimeError
    assert sys.argv == PROCESS_ARGV


def test_a_pinned_restart_reruns_the_argv_main_was_given(
    tiny_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``trainer.cpu_isa`` pins kernels read when torch loads, so ``ablate train`` restarts itself
    pinned: with ``main(argv)``'s arguments, not the process's own (a notebook's)."""
    monkeypatch.setattr(sys, "argv", list(PROCESS_ARGV))
    for key in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS"):
        monkeypatch.delenv(key, raising=False)
    restarts = []

    def execve(path: str, args: list[str], env: dict[str, str]) -> None:
        restarts.append(args)
        raise SystemExit(0)  # the real one never returns

    monkeypatch.setattr(os, "execve", execve)
    argv = ["train", str(tiny_config), "trainer.cpu_isa=default"]
    with pytest.raises(SystemExit):
        main(argv)
    assert restarts == [[sys.executable, "-m", "ablate", *argv]]
