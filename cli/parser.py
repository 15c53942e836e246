"""The ``ablate`` command line: its parser and ``main``.

Every user error (bad config key, impossible combination, missing or
malformed data) exits with code 2 and one message naming the problem, and
leaves no output folder behind. What each subcommand does is in cli/commands.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from ablate.cli.checks import check_options
from ablate.cli.commands import (
    cmd_aggregate,
    cmd_check_component,
    cmd_compare,
    cmd_configs,
    cmd_dashboard,
    cmd_lr_check,
    cmd_power,
    cmd_report,
    cmd_reproduce,
    cmd_search,
    cmd_sweep,
    cmd_train,
    cmd_verify,
    cmd_wandb_report,
    cmd_wandb_sweep,
)
from ablate.cli.tables import console
from ablate.errors import ConfigError
from ablate.lit_modules.model.registry import KINDS
from ablate.sweeps.drivers.lr_check import DEFAULT_FACTORS
from ablate.sweeps.integrations.wandb_report import REPORT_FILE, WORKSPACE_FILE
from ablate.sweeps.ledger.secrets import STORAGE_ENV, shown

EXIT_USAGE = 2


def _sweep_options(p: argparse.ArgumentParser, default_workers: int | None = 1) -> None:
    p.add_argument("overrides", nargs="*", help="dotted overrides applied to every variant's base")
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers,
        help=f"worker processes on this machine (default {default_workers or 'one per GPU or CPU core'})",
    )
    p.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help="Optuna storage: a database URL, or journal:PATH (one file on a shared file system, "
        f"no server); default ${STORAGE_ENV} if set (keeps a password off the command line), "
        "else sqlite in the run folder",
    )
    p.add_argument(
        "--runs",
        metavar="DIR",
        default="runs",
        help="the folder run folders go in: DIR/<experiment>/ (default runs)",
    )
    p.add_argument("--out", dest="misplaced_out", help=argparse.SUPPRESS)
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


def _plan_options(p: argparse.ArgumentParser) -> None:
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


def _launcher_options(p: argparse.ArgumentParser) -> None:
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformer-ablate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


DESCRIPTION = """Ablations of transformer encoder classifiers: every variant x seed of an experiment
as a cell of an Optuna study, reported as medians over seeds with one exact test per comparison.
Start with `ablate configs` (what ships), `ablate train order` (one run) or `ablate sweep order
model.pe=sinusoidal,none --dry-run` (a grid). `ablate COMMAND -h` explains a command."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ablate", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"ablate {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train = sub.add_parser("train", help="train and evaluate one configuration")
    train.add_argument(
        "config", nargs="?", help="train config YAML (sections model, data, optim, trainer, seed)"
    )
    train.add_argument(
        "overrides", nargs="*", help="dotted overrides, e.g. model.n_heads=1 model.pe=none seed=3"
    )
    train.add_argument("--out", help="output folder (default runs/train/<task>-<time>)")
    train.add_argument(
        "--no-progress",
        action="store_true",
        help="hide the progress bar (it is hidden anyway when stderr is not a terminal)",
    )
    train.add_argument(
        "--no-checkpoint", action="store_true", help="do not save the final weights (DIR/final.ckpt)"
    )
    train.add_argument(
        "--spec",
        help="train one cell of an experiment instead of CONFIG: variant=NAME [seed=N] "
        "(what wandb agent runs; default --out runs/<name>/wandb-sweep/<variant>-s<seed>-<time>)",
    )
    train.add_argument("--profile", help="with --spec: apply the spec's named profile to the base")
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (YAML) and exit; trains nothing",
    )
    train.set_defaults(func=cmd_train)

    ws = sub.add_parser("wandb-sweep", help="print a W&B sweep configuration (YAML) for an experiment")
    ws.add_argument("spec", help="experiment spec YAML")
    ws.add_argument("overrides", nargs="*", help="dotted overrides applied to every variant's base")
    ws.add_argument("--method", choices=["grid", "random", "bayes"], default="grid", help="default grid")
    ws.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    ws.set_defaults(func=cmd_wandb_sweep)

    sw = sub.add_parser(
        "sweep",
        help="run every variant x seed of an experiment, then report",
        description="Run every variant x seed of an experiment, then report. SPEC is an experiment "
        "spec, or a train config with comma lists (key=a,b,...): a quick grid whose variants are "
        "every combination of the listed values, the first value of each list the baseline's.",
    )
    sw.add_argument(
        "spec",
        help="experiment spec YAML (name, base, variants, seeds, ...), a train config YAML with "
        "comma-listed overrides, or the name of a shipped one (ablate configs)",
    )
    sw.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    sw.add_argument(
        "--seeds",
        type=int,
        help="run seeds 0..N-1 (default: the spec's seeds; for a quick grid, the fewest at which "
        "the paired test can reach p Holm <= 0.05)",
    )
    _plan_options(sw)
    _sweep_options(sw)
    _launcher_options(sw)
    sw.set_defaults(func=cmd_sweep)

    se = sub.add_parser(
        "search", help="tune each variant on validation (TPE + pruning), optionally run the tuned grid"
    )
    se.add_argument("spec", help="experiment spec YAML with a 'search' block (or a shipped spec's name)")
    se.add_argument("--variants", help="comma-separated variants to tune (default: all)")
    se.add_argument("--trials", type=int, help="trials per variant (default: the spec's search.trials)")
    se.add_argument(
        "--then-evaluate", action="store_true", help="then run every seed with each variant's best"
    )
    se.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    _plan_options(se)
    _sweep_options(se)
    _launcher_options(se)
    se.set_defaults(func=cmd_search)

    lr = sub.add_parser(
        "lr-check", help="run an experiment again at other learning rates (its shared lr, scaled)"
    )
    lr.add_argument("spec", help="experiment spec YAML")
    lr.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    lr.add_argument(
        "--factors", default=DEFAULT_FACTORS, help=f"lr factors, comma-separated (default {DEFAULT_FACTORS})"
    )
    _sweep_options(lr)
    _launcher_options(lr)
    lr.set_defaults(func=cmd_lr_check)

    cc = sub.add_parser(
        "check-component",
        help="check a component against the contracts a built-in keeps (exit 1 if one breaks)",
    )
    cc.add_argument("kind", choices=list(KINDS), help="the component's kind")
    cc.add_argument("name", help="its registered name (e.g. rmsnorm, or a plugin's)")
    cc.add_argument(
        "--plugins",
        nargs="+",
        default=[],
        metavar="MODULE_OR_FILE",
        help="plugins to import first: module names or .py files (default: none)",
    )
    cc.set_defaults(func=cmd_check_component)

    rp = sub.add_parser("report", help="(re)write the report of a sweep run folder")
    rp.add_argument("run_dir", help="sweep run folder (with spec.json)")
    rp.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help=f"Optuna storage URL if not the run folder's study.db (default ${STORAGE_ENV} if set)",
    )
    rp.set_defaults(func=cmd_report)

    db = sub.add_parser(
        "dashboard", help="review a sweep run folder: its report, live, and optuna-dashboard (local web UI)"
    )
    db.add_argument("run_dir", help="sweep run folder (with spec.json)")
    db.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    db.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    db.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help=f"Optuna storage URL if not the run folder's study.db (default ${STORAGE_ENV} if set)",
    )
    db.set_defaults(func=cmd_dashboard)

    pw = sub.add_parser("power", help="seeds each comparison needs, from a model fitted to a finished study")
    pw.add_argument("run_dir", help="finished sweep run folder (with spec.json)")
    pw.add_argument(
        "--delta",
        type=float,
        help="effect to detect, in the metric's units: the shift the primary test measures "
        "(default: each pilot's Hodges-Lehmann estimate)",
    )
    pw.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    pw.add_argument(
        "--alpha", type=float, default=0.05, help="family-wise two-sided level, split by Holm (default 0.05)"
    )
    pw.add_argument("--max-seeds", type=int, default=200, help="largest seed count tried (default 200)")
    pw.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help=f"Optuna storage URL if not the run folder's study.db (default ${STORAGE_ENV} if set)",
    )
    pw.set_defaults(func=cmd_power)

    ag = sub.add_parser("aggregate", help="one table across tasks: IQM and P(improve) of normalized scores")
    ag.add_argument("run_dirs", nargs="+", help="finished sweep run folders that share variant names")
    ag.add_argument(
        "--out", default="runs/aggregate", help="output stem: STEM.json and STEM.md (default runs/aggregate)"
    )
    ag.add_argument(
        "--storage",
        default=os.environ.get(STORAGE_ENV),
        help=f"Optuna storage URL if not each run folder's study.db (default ${STORAGE_ENV} if set)",
    )
    ag.set_defaults(func=cmd_aggregate)

    cp = sub.add_parser("compare", help="put two sweep run folders side by side")
    cp.add_argument("run_a", help="first sweep run folder")
    cp.add_argument("run_b", help="second sweep run folder")
    cp.add_argument("--out", help="output folder (default RUN_A-vs-NAME_B)")
    cp.set_defaults(func=cmd_compare)

    vf = sub.add_parser(
        "verify", help="rerun a few finished cells here and check they give the same numbers, bit for bit"
    )
    vf.add_argument(
        "path",
        help="a sweep run folder, or a committed result's prefix (PREFIX.spec.json, PREFIX.results.csv)",
    )
    vf.add_argument("--cells", type=int, default=2, help="cells to rerun, drawn at random (default 2)")
    vf.add_argument("--seed", type=int, default=0, help="seed of that draw (default 0)")
    vf.add_argument("--no-progress", action="store_true", help="no progress bar while a cell trains")
    vf.set_defaults(func=cmd_verify)

    cf = sub.add_parser(
        "configs",
        help="list the train configs and experiment specs that ship with ablate, or copy one to edit",
        description="List the shipped train configs (ablate train NAME) and experiment specs "
        "(ablate sweep NAME); `ablate configs copy NAME [DEST]` writes one to edit. A name works "
        "wherever a file does when no file of that name exists.",
    )
    cf_sub = cf.add_subparsers(dest="configs_action", metavar="{copy}")
    cp_cf = cf_sub.add_parser("copy", help="write a shipped config or spec to edit")
    cp_cf.add_argument("name", help="its name (ablate configs lists them)")
    cp_cf.add_argument("dest", nargs="?", help="file or folder to write (default ./NAME.yaml)")
    cp_cf.add_argument("--force", action="store_true", help="replace DEST if it exists (default: refuse)")
    cf.set_defaults(func=cmd_configs)

    rr = sub.add_parser("reproduce", help="run a preset ablation end to end")
    rr.add_argument("name", nargs="?", help="preset name (see --list)")
    rr.add_argument("--list", action="store_true", help="list the presets")
    rr.add_argument("--profile", choices=["cpu", "gpu"], help="cpu: minutes on 2 cores; gpu: full size")
    _sweep_options(rr, default_workers=None)
    _launcher_options(rr)
    rr.set_defaults(func=cmd_reproduce)
    wr = sub.add_parser(
        "wandb-report",
        help="build the W&B Report and project workspace that review a sweep (offline: write their specs)",
    )
    wr.add_argument("run_dir", help="sweep run folder (with spec.json)")
    wr.add_argument(
        "--from-spec",
        action="store_true",
        help=f"create the report and workspace from RUN_DIR/{REPORT_FILE} and {WORKSPACE_FILE} "
        "(written offline), once online",
    )
    wr.set_defaults(func=cmd_wandb_report)

    co = sub.add_parser(
        "completion",
        help="print the shell completion script (e.g. ablate completion bash > ~/.ablate-complete.bash)",
        description="Print a completion script for SHELL; load it from your shell's startup file, "
        "e.g. `ablate completion bash > ~/.ablate-complete.bash` and "
        "`source ~/.ablate-complete.bash` in ~/.bashrc.",
    )
    co.add_argument("shell", choices=["bash", "zsh", "tcsh"], help="the shell to complete in")
    co.set_defaults(func=cmd_completion)

    for action in sub._choices_actions:  # a command's help line is its -h description too
        command = sub.choices[action.dest]
        if command.description is None and action.help:
            command.description = action.help[0].upper() + action.help[1:] + "."
    return parser


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.shell))
    return 0


def completion_script(shell: str) -> str:
    """shtab's script for ``shell``, with YAML files offered for a config or spec argument."""
    import shtab

    parser = build_parser()
    yaml_files = {"bash": "_shtab_compgen_files", "zsh": "_files -g '*.y(a|)ml'", "tcsh": "f"}
    for command in parser._subparsers._group_actions[0].choices.values():
        for action in command._actions:
            if action.dest in ("spec", "config", "run_dir", "run_dirs", "run_a", "run_b", "path"):
                action.complete = (
                    {shell: yaml_files[shell]} if action.dest in ("spec", "config") else shtab.DIR
                )
    return shtab.complete(parser, shell=shell)


# What Hydra and LightningCLI users type, and what ablate takes instead.
HABITS = {
    ("-m", "--multirun"): "no -m here: a grid is ablate sweep CONFIG.yaml key=a,b",
    ("--config", "-c", "--config-name", "--config-path"): "the config file is the first argument: "
    "ablate train CONFIG.yaml, ablate sweep SPEC.yaml",
}


def habit_hint(stray: list[str]) -> str:
    """``; <what to type instead>`` for a Hydra / LightningCLI habit among ``stray``, else ''."""
    for flags, hint in HABITS.items():
        if any(x.partition("=")[0] in flags for x in stray):
            return f" ({hint})"
    return ""


def main(argv: list[str] | None = None) -> int:
    # What records this process's command line later (the W&B summary run) sees no password.
    sys.argv[:] = [shown(a) for a in sys.argv]
    parser = build_parser()
    # Overrides may come after options (`--workers 2 model.pe=none`): collect them too.
    args, extra = parser.parse_known_args(argv)
    stray = [x for x in extra if x.startswith("-") or "=" not in x]
    if stray or (extra and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(stray or extra)}{habit_hint(stray or extra)}")
    if extra:
        args.overrides = [*args.overrides, *extra]
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        check_options(args)
        return func(args)
    except ConfigError as err:
        console.print(f"error: {err}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.print("interrupted", markup=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
