"""The option groups several subcommands share, each defined once: ``--storage``, ``--profile``,
the sweep drivers' options, ``--dry-run``/``--print-config`` and the launchers."""

from __future__ import annotations

import argparse

from ablate.sweeps.ledger.secrets import STORAGE_ENV

PROFILE_HELP = "apply the spec's named profile (e.g. cpu, gpu) to the base"


def storage_option(p: argparse.ArgumentParser, fallback: str) -> None:
    """``--storage``. Its default, $ABLATE_STORAGE, is read when the command runs (storage_from_env),
    never when the parser is built: a password in it stays out of ``--help`` and the docs."""
    p.add_argument(
        "--storage",
        help="Optuna storage: a database URL, or journal:PATH (one file on a shared file system, no "
        f"server); default ${STORAGE_ENV} if set when the command runs (keeps a password off the "
        f"command line), else {fallback}",
    )


def profile_option(
    p: argparse.ArgumentParser, text: str = PROFILE_HELP, choices: list[str] | None = None
) -> None:
    p.add_argument("--profile", choices=choices, help=text)


def sweep_options(p: argparse.ArgumentParser, default_workers: int | None = 1) -> None:
    p.add_argument("overrides", nargs="*", help="dotted overrides applied to every variant's base")
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers,
        help=f"worker processes on this machine (default {default_workers or 'one per GPU or CPU core'})",
    )
    storage_option(p, "sqlite in the run folder")
    p.add_argument(
        "--runs",
        metavar="DIR",
        default="runs",
        help="the folder run folders go in: DIR/<experiment>/ (default runs)",
    )
    p.add_argument("--out", dest="misplaced_out", help=argparse.SUPPRESS)  # checks.py explains --runs
    p.add_argument("--no-wandb", action="store_true", help="do not log to Weights & Biases")
    p.add_argument("--heartbeat", type=int, default=10, help="seconds between worker heartbeats (default 10)")
    p.add_argument(
        "--grace",
        type=int,
        default=30,
        help="seconds without a heartbeat before a cell is rerun (default 30)",
    )
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the cells that failed for good (after their error repeated), once the cause is fixed",
    )


def plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the cells it would run and each variant's overrides; run and write nothing",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved experiment (YAML: base config, variants, seeds) and exit; "
        "run and write nothing",
    )
    p.add_argument("--print_config", action="store_true", help=argparse.SUPPRESS)  # LightningCLI's spelling


def launcher_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--launcher",
        choices=["processes", "local", "slurm"],
        default="processes",
        help="where the --workers workers run: processes on this machine (default), a SLURM job "
        "array through submitit (slurm), or submitit's local executor (local)",
    )
    p.add_argument(
        "--slurm",
        metavar="KEY=VALUE,...",
        help="with --launcher slurm: submitit's job parameters, e.g. "
        "partition=gpu,gpus_per_node=1,timeout_min=120,array_parallelism=8",
    )


def margin_value(text: str) -> float:
    """``--margin``'s value: a number > 0, the smallest effect that matters in the metric's units."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number > 0 (the smallest effect that matters, in the metric's units, e.g. 0.01)"
        )
    return value


def margin_option(
    p: argparse.ArgumentParser, what: str = "for every comparison (default: the spec's margin:)"
) -> None:
    p.add_argument(
        "--margin",
        type=margin_value,
        default=None,
        metavar="M",
        help=f"equivalence margin in the metric's units, {what}",
    )
