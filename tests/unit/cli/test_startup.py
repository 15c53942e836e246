"""``ablate`` answers at once: its help pages, ``ablate configs`` and the usage errors raised before a
command's work starts import none of the heavy libraries (seconds of imports between them). A
``sys.modules`` check in a fresh interpreter, not a timing: it fails the day a top-level import
pulls one in again (benchmarks/startup.py measures the seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "scipy", "optuna", "lightning", "wandb", "datasets")

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


def test_help_usage_errors_and_configs_import_no_heavy_library(tmp_path: Path) -> None:
    cheap = [argv.split() for argv in CHEAP]
    ran = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{CHILD}", json.dumps(cheap)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    helps = {argv: code for argv, code in out["codes"].items() if argv.endswith("--help")}
    assert {"--help", "sweep --help", "configs --help", "configs copy --help"} <= set(helps)
    assert set(helps.values()) == {0}, helps
    assert {argv: out["codes"][argv] for argv in CHEAP} == CHEAP
    assert out["heavy"] == [], f"ablate's help, usage errors or configs imported {out['heavy']}"
    assert list(tmp_path.iterdir()) == [], "a cheap command wrote into its folder"
