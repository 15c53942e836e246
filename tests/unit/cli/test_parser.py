"""The command line's help and completion: plain text, a default in every option's help, and a
completion script that a shell can load and that completes the real commands."""

from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest

from ablate.cli.parser import build_parser, completion_script, main


def commands() -> dict[str, argparse.ArgumentParser]:
    return build_parser()._subparsers._group_actions[0].choices


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["-h"])
    top = capsys.readouterr().out
    assert "``" not in top and ":func:" not in top and "configs" in top
    for name, command in commands().items():
        assert command.description, f"ablate {name} -h has no description"
        assert "``" not in command.format_help(), name


def test_every_option_with_a_default_says_it_in_its_help() -> None:
    missing = []
    for name, command in commands().items():
        for action in command._actions:
            flag_only = isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction))
            has_default = action.default not in (None, argparse.SUPPRESS)
            if action.option_strings and not flag_only and has_default and "default" not in action.help:
                missing.append(f"ablate {name} {action.option_strings[0]}")
    assert not missing, f"no default in the help of {missing}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_bash_completion_completes_commands_and_options() -> None:
    script = completion_script("bash")
    complete = (
        'COMP_WORDS=(ablate "$1"); COMP_CWORD=1; _shtab_ablate; echo "${COMPREPLY[*]}"; '
        'COMP_WORDS=(ablate sweep --wo); COMP_CWORD=2; _shtab_ablate; echo "${COMPREPLY[*]}"'
    )
    ran = subprocess.run(
        ["bash", "-c", f"{script}\n{complete}", "bash", "sw"], capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 0, ran.stderr
    commands_line, option_line = ran.stdout.splitlines()
    assert commands_line.split() == ["sweep"] and option_line.split() == ["--workers"]


@pytest.mark.parametrize("shell", ["zsh", "tcsh"])
def test_other_shells_get_a_script_naming_every_command(shell: str) -> None:
    script = completion_script(shell)
    assert all(name in script for name in commands())


def test_out_on_a_command_that_makes_run_folders_names_runs(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for command in ("sweep", "search", "lr-check", "reproduce"):
        assert main([command, "x.yaml", "--out", "mine"]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"ablate {command} writes one run folder per experiment" in err and "--runs mine" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["sweep", "x.yaml", "-m", "model.n_heads=1,2"],
            "no -m here: a grid is ablate sweep CONFIG.yaml key=a,b",
        ),
        (["train", "--config", "x.yaml"], "the config file is the first argument"),
    ],
)
def test_hydra_and_lightningcli_habits_get_a_hint(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and message in " ".join(capsys.readouterr().err.split())


def test_a_plus_key_is_refused_with_the_key_to_write(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.configs import TINY_YAML

    (tmp_path / "base.yaml").write_text(TINY_YAML)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "base.yaml", "+model.n_heads=1", "--print-config"]) == 2
    assert "drop the '+' (model.n_heads=...)" in capsys.readouterr().err
