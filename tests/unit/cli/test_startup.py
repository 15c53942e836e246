"""``ablate`` answers at once: its help pages, ``ablate configs`` and the usage errors raised before a
command's work starts import none of the heavy libraries (seconds of imports between them), and
the help pages and ``--version`` not even rich, PyYAML or numpy (the parser holds each command by
name: cli/commands.py loads when a command runs). A ``sys.modules`` check in a fresh interpreter,
not a timing: it fails the day a top-level import pulls one in again (benchmarks/startup.py
measures the seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "scipy", "optuna", "lightning", "wandb", "datasets")
# Nor does a help page need what the commands print and read with.
HELP_FREE = (*HEAVY, "rich", "yaml", "numpy", "pandas", "matplotlib")

# Runs in the child: every (nested) subcommand's --help, then the cheap commands and the usage
# errors, each as `ablate.cli.main(argv)`; prints the exit codes and the heavy modules loaded.
CHILD = """
import argparse, contextlib, io, json, sys
from ablate import cli

def paths(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from paths(sub, (*prefix, name))

codes = {}
argvs = [["--help"], *([*p, "--help"] for p in paths(cli.build_parser())), *json.loads(sys.argv[1])]
for argv in argvs:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            codes[" ".join(argv)] = cli.main(argv)
        except SystemExit as exit:
            codes[" ".join(argv)] = exit.code
print(json.dumps({"codes": codes, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))}))
"""
# Usage errors (argparse's and the option checks') and the listing: all answer before any work.
CHEAP = {
    "sweep": 2,  # no SPEC
    "sweep x.yaml --workers 0": 2,  # out of range (checks.py)
    "sweep x.yaml --heartbeat 10 --grace 5": 2,
    "sweep x.yaml --out mine": 2,  # --runs, not --out
    "train --config x.yaml": 2,  # a Hydra habit
    "check-component nope rmsnorm": 2,  # not a kind
    "completion fish": 2,
    "configs": 0,
}


def run_child(tmp_path: Path, libraries: tuple[str, ...], argvs: list[list[str]]) -> dict:
    """CHILD's exit codes and the ``libraries`` it loaded, in a fresh interpreter."""
    ran = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {libraries!r}\n{CHILD}", json.dumps(argvs)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_help_usage_errors_and_configs_import_no_heavy_library(tmp_path: Path) -> None:
    out = run_child(tmp_path, HEAVY, [argv.split() for argv in CHEAP])
    helps = {argv: code for argv, code in out["codes"].items() if argv.endswith("--help")}
    assert {"--help", "sweep --help", "configs --help", "configs copy --help"} <= set(helps)
    assert set(helps.values()) == {0}, helps
    assert {argv: out["codes"][argv] for argv in CHEAP} == CHEAP
    assert out["heavy"] == [], f"ablate's help, usage errors or configs imported {out['heavy']}"
    assert list(tmp_path.iterdir()) == [], "a cheap command wrote into its folder"


def test_help_pages_and_version_import_no_library_a_command_needs(tmp_path: Path) -> None:
    """``ablate --help``, every ``ablate COMMAND [SUB] --help`` and ``ablate --version`` load
    none of torch, Lightning, optuna, rich, PyYAML, numpy, ...: nothing but the parser."""
    out = run_child(tmp_path, HELP_FREE, [["--version"]])
    assert {"--help", "power --help", "configs copy --help", "--version"} <= set(out["codes"])
    assert set(out["codes"].values()) == {0}, out["codes"]
    assert out["heavy"] == [], f"ablate's help pages or --version imported {out['heavy']}"


def test_every_command_the_parser_holds_by_name_is_a_function_of_commands() -> None:
    """A misspelt name would fail only when its command runs: each resolves, to a function of
    cli/commands.py, and no two subcommands share one."""
    from ablate.cli import build_parser, commands
    from ablate.cli.parser import Command
    from docs._gen import reference

    held = {name: p.get_default("func") for name, _, p in reference.subcommands(build_parser())}
    named = {name: f.name for name, f in held.items() if isinstance(f, Command)}
    assert set(held) - set(named) == {"completion", "configs copy"}  # parser.py's own; configs' sub
    assert all(callable(getattr(commands, f, None)) for f in named.values()), named
    assert len(set(named.values())) == len(named)
