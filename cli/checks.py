"""The command line's own inputs, checked by one rule each before a command runs (numeric
options in their ranges), and the exit line of commands that run cells."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ablate.errors import ConfigError, Range

if TYPE_CHECKING:  # the drivers' outcome imports optuna: loaded by print_outcome, once cells ran
    from rich.console import Console  # rich: imported by the commands that print, not the parser

    from ablate.sweeps.drivers.outcome import Outcome

# Every numeric option of every subcommand (argparse dest -> valid interval).
OPTION_RANGES: dict[str, Range] = {
    "workers": Range(1, 256),
    "heartbeat": Range(1, 3600),
    "grace": Range(2, 86400),
    "trials": Range(1, 100_000),
    "port": Range(1, 65535),
    "power": Range(0, 1, lo_open=True, hi_open=True),
    "alpha": Range(0, 1, lo_open=True, hi_open=True),
    "max_seeds": Range(3, 1000),
    "delta": Range(-1e6, 1e6),
    "cells": Range(1, 100_000),
    "seed": Range(0, 2**32 - 1),
}


def check_options(args: argparse.Namespace) -> None:
    """A numeric option outside its range is a ConfigError stating the range."""
    for dest, interval in OPTION_RANGES.items():
        value = getattr(args, dest, None)
        if value is not None and value not in interval:
            raise ConfigError(f"--{dest.replace('_', '-')}={value} is out of range; valid: {interval}")
    if (out := getattr(args, "misplaced_out", None)) is not None:
        raise ConfigError(
            f"--out {out}: ablate {args.command} writes one run folder per experiment; name the folder "
            f"they go in with --runs {out} (then {out}/<experiment>/). --out is the output of train, "
            "compare and aggregate"
        )
    heartbeat, grace = getattr(args, "heartbeat", None), getattr(args, "grace", None)
    if heartbeat is not None and grace is not None and grace <= heartbeat:
        # A grace period within one heartbeat would fail cells whose worker is alive, and rerun them.
        raise ConfigError(f"--grace={grace} must be longer than --heartbeat={heartbeat} (seconds)")


def print_outcome(console: Console, outcomes: list[tuple[str, Outcome]]) -> int:
    """Print the first error of a failed cell and, last, the counts with the exit code; return it."""
    from ablate.sweeps.drivers.outcome import final_line

    for name, o in outcomes:
        prefix = f"{name}: " if name else ""
        if o.first_error:
            console.print(f"{prefix}a failed cell: {o.first_error}", markup=False)
        if o.failed and o.unit == "cells" and not o.stopped:  # a stopped run's message said how
            console.print(
                f"{prefix}{o.failed} cell(s) failed for good; fix the cause, then rerun the same command "
                "with --retry-failed",
                markup=False,
            )
        if o.lost:
            console.print(f"{prefix}{o.lost}", markup=False, style="bold red")
    line, code = final_line(outcomes)
    console.print(line, markup=False, style=None if code == 0 else "bold yellow", soft_wrap=True)
    return code
