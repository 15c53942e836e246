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
from typing import Any, TypeAlias

from ablate.cli.checks import check_options
from ablate.cli.habits import RESET, habit_hint, hydra_overrides
from ablate.cli.options import (
    launcher_options,
    margin_option,
    plan_options,
    profile_option,
    storage_option,
    sweep_options,
)
from ablate.errors import ConfigError
from ablate.experiments.specs.quick_grid import MAX_CELLS, MAX_VARIANTS
from ablate.lit_modules.model.kinds import KINDS
from ablate.sweeps.drivers.defaults import DEFAULT_FACTORS
from ablate.sweeps.integrations.review_files import REPORT_FILE, WORKSPACE_FILE
from ablate.sweeps.ledger.secrets import STORAGE_ENV, shown

EXIT_USAGE = 2


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformer-ablate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class _VersionOnRequest(argparse._VersionAction):
    """``--version``, looked up when asked: importlib.metadata would cost every start ~0.05 s."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        self.version = f"ablate {_version()}"
        super().__call__(parser, *args, **kwargs)


DESCRIPTION = """Ablations of transformer encoder classifiers: every variant x seed of an experiment
as a cell of an Optuna study, reported as medians over seeds with one exact test per comparison.
Start with `ablate configs` (what ships), `ablate train order` (one run) or `ablate sweep order
model.pe=sinusoidal,none --dry-run` (a grid). `ablate COMMAND -h` explains a command."""

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Command:
    """A subcommand's function in cli/commands.py, held by its name: commands.py (rich, PyYAML and
    what each command imports) is imported when a command runs, so that the parser, ``ablate
    --help`` and every ``ablate COMMAND --help`` import none of it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def load(self) -> Callable[[argparse.Namespace], int]:
        from ablate.cli import commands

        func: Callable[[argparse.Namespace], int] = getattr(commands, self.name)
        return func

    def __call__(self, args: argparse.Namespace) -> int:
        return self.load()(args)

    def __repr__(self) -> str:
        return f"Command({self.name!r})"


def _add_train(sub: Subcommands) -> None:
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
    profile_option(train, "with --spec: apply the spec's named profile to the base")
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (YAML) and exit; trains nothing",
    )
    train.add_argument("--print_config", action="store_true", help=argparse.SUPPRESS)  # LightningCLI's
    train.set_defaults(func=Command("cmd_train"))


def _add_wandb_sweep(sub: Subcommands) -> None:
    ws = sub.add_parser("wandb-sweep", help="print a W&B sweep configuration (YAML) for an experiment")
    ws.add_argument("spec", help="experiment spec YAML")
    ws.add_argument("overrides", nargs="*", help="dotted overrides applied to every variant's base")
    ws.add_argument("--method", choices=["grid", "random", "bayes"], default="grid", help="default grid")
    profile_option(ws)
    ws.set_defaults(func=Command("cmd_wandb_sweep"))


def _add_sweep(sub: Subcommands) -> None:
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
    profile_option(sw)
    sw.add_argument(
        "--seeds",
        type=int,
        help="run seeds 0..N-1 (default: the spec's seeds; for a quick grid, the fewest at which "
        "the paired test can reach p Holm <= 0.05)",
    )
    plan_options(sw)
    sw.add_argument(
        "--yes",
        action="store_true",
        help=f"run (or --dry-run) a quick grid above {MAX_VARIANTS} variants or {MAX_CELLS:,} cells "
        "(variants x seeds), which is refused without it; every combination of the lists is a variant, "
        "so their sizes multiply",
    )
    sweep_options(sw)
    launcher_options(sw)
    sw.set_defaults(func=Command("cmd_sweep"))


def _add_search(sub: Subcommands) -> None:
    se = sub.add_parser(
        "search", help="tune each variant on validation (TPE + pruning), optionally run the tuned grid"
    )
    se.add_argument("spec", help="experiment spec YAML with a 'search' block (or a shipped spec's name)")
    se.add_argument("--variants", help="comma-separated variants to tune (default: all)")
    se.add_argument("--trials", type=int, help="trials per variant (default: the spec's search.trials)")
    se.add_argument(
        "--then-evaluate", action="store_true", help="then run every seed with each variant's best"
    )
    profile_option(se)
    plan_options(se)
    sweep_options(se)
    launcher_options(se)
    se.set_defaults(func=Command("cmd_search"))


def _add_lr_check(sub: Subcommands) -> None:
    lr = sub.add_parser(
        "lr-check", help="run an experiment again at other learning rates (its shared lr, scaled)"
    )
    lr.add_argument("spec", help="experiment spec YAML")
    profile_option(lr)
    lr.add_argument(
        "--factors", default=DEFAULT_FACTORS, help=f"lr factors, comma-separated (default {DEFAULT_FACTORS})"
    )
    sweep_options(lr)
    launcher_options(lr)
    lr.set_defaults(func=Command("cmd_lr_check"))


def _add_check_component(sub: Subcommands) -> None:
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
    cc.set_defaults(func=Command("cmd_check_component"))


def _add_readers(sub: Subcommands) -> None:
    """The commands that read finished run folders: report, dashboard, power, aggregate."""
    rp = sub.add_parser("report", help="(re)write the report of a sweep run folder")
    rp.add_argument("run_dir", help="sweep run folder (with spec.json)")
    margin_option(rp)
    rp.set_defaults(func=Command("cmd_report"))

    db = sub.add_parser(
        "dashboard", help="review a sweep run folder: its report, live, and optuna-dashboard (local web UI)"
    )
    db.add_argument("run_dir", help="sweep run folder (with spec.json)")
    db.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    db.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    db.set_defaults(func=Command("cmd_dashboard"))

    pw = sub.add_parser(
        "power",
        help="seeds each comparison needs to detect its margin and to show equivalence within it, "
        "from a model fitted to a finished study",
    )
    pw.add_argument("run_dir", help="finished sweep run folder (with spec.json)")
    margin_option(pw)
    pw.add_argument(
        "--delta",
        type=float,
        help="effect to detect, in the metric's units: the shift the primary test measures "
        "(default: the margin)",
    )
    pw.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    pw.add_argument(
        "--alpha", type=float, default=0.05, help="family-wise two-sided level, split by Holm (default 0.05)"
    )
    pw.add_argument("--max-seeds", type=int, default=200, help="largest seed count tried (default 200)")
    pw.set_defaults(func=Command("cmd_power"))
    for p in (rp, db, pw):
        storage_option(p, "the run folder's study.db")

    ag = sub.add_parser("aggregate", help="one table across tasks: IQM and P(improve) of normalized scores")
    ag.add_argument("run_dirs", nargs="+", help="finished sweep run folders that share variant names")
    ag.add_argument(
        "--out", default="runs/aggregate", help="output stem: STEM.json and STEM.md (default runs/aggregate)"
    )
    storage_option(ag, "each run folder's study.db")
    ag.set_defaults(func=Command("cmd_aggregate"))


def _add_compare_verify(sub: Subcommands) -> None:
    cp = sub.add_parser("compare", help="put two sweep run folders side by side")
    cp.add_argument("run_a", help="first sweep run folder")
    cp.add_argument("run_b", help="second sweep run folder")
    cp.add_argument("--out", help="output folder (default RUN_A-vs-NAME_B)")
    margin_option(cp, "per variant: is B equivalent to A within ±M?")
    cp.set_defaults(func=Command("cmd_compare"))

    vf = sub.add_parser(
        "verify", help="rerun a few finished cells here and check they give the same numbers, bit for bit"
    )
    vf.add_argument(
        "path",
        nargs="+",
        help="a sweep run folder, or a committed result's prefix (PREFIX.spec.json, PREFIX.results.csv); "
        "with --conclusions, several, or a folder of run folders",
    )
    vf.add_argument("--cells", type=int, default=2, help="cells to rerun, drawn at random (default 2)")
    vf.add_argument("--seed", type=int, default=0, help="seed of that draw (default 0)")
    vf.add_argument(
        "--conclusions",
        action="store_true",
        help="rerun every cell of each study here and say, per comparison, whether its verdict "
        "reproduced (exit 1 when one did not), with the cells' drift per metric",
    )
    vf.add_argument(
        "--seeds",
        help="with --conclusions: rerun these seeds instead of the recorded ones: N (0..N-1), A-B or a "
        "list like 7,8,9 (other seeds test the finding, not the floats)",
    )
    vf.add_argument(
        "--runs",
        default="runs/verify",
        help="with --conclusions: where the reruns go, RUNS/<experiment> (default runs/verify; resumed)",
    )
    vf.add_argument("--workers", type=int, default=1, help="with --conclusions: worker processes (default 1)")
    vf.add_argument("--no-progress", action="store_true", help="no progress bar while a cell trains")
    vf.set_defaults(func=Command("cmd_verify"))


def _add_configs(sub: Subcommands) -> None:
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
    cf.set_defaults(func=Command("cmd_configs"))


def _add_reproduce(sub: Subcommands) -> None:
    rr = sub.add_parser("reproduce", help="run a preset ablation end to end")
    rr.add_argument("name", nargs="?", help="preset name (see --list)")
    rr.add_argument("--list", action="store_true", help="list the presets")
    profile_option(rr, "cpu: minutes on 2 cores; gpu: full size", choices=["cpu", "gpu"])
    sweep_options(rr, default_workers=None)
    launcher_options(rr)
    rr.set_defaults(func=Command("cmd_reproduce"))


def _add_wandb_report(sub: Subcommands) -> None:
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
    wr.set_defaults(func=Command("cmd_wandb_report"))


def _add_completion(sub: Subcommands) -> None:
    co = sub.add_parser(
        "completion",
        help="print the shell completion script (e.g. ablate completion bash > ~/.ablate-complete.bash)",
        description="Print a completion script for SHELL; load it from your shell's startup file, "
        "e.g. `ablate completion bash > ~/.ablate-complete.bash` and "
        "`source ~/.ablate-complete.bash` in ~/.bashrc.",
    )
    co.add_argument("shell", choices=["bash", "zsh", "tcsh"], help="the shell to complete in")
    co.set_defaults(func=cmd_completion)


# The subcommands, in the order of `ablate --help` and of the reference page.
SUBCOMMANDS: tuple[Callable[[Subcommands], None], ...] = (
    _add_train,
    _add_wandb_sweep,
    _add_sweep,
    _add_search,
    _add_lr_check,
    _add_check_component,
    _add_readers,
    _add_compare_verify,
    _add_configs,
    _add_reproduce,
    _add_wandb_report,
    _add_completion,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``ablate`` parser. Builds from constants only (no environment, no heavy import), so
    ``--help``, the docs and completion show the same text everywhere."""
    parser = argparse.ArgumentParser(
        prog="ablate", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action=_VersionOnRequest)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    for action in sub._choices_actions:  # a command's help line is its -h description too
        command = sub.choices[action.dest]
        if command.description is None and action.help:
            command.description = action.help[0].upper() + action.help[1:] + "."
    return parser


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.shell))
    return 0


def completion_script(shell: str) -> str:
    """shtab's script for ``shell``; in bash and zsh a CONFIG or SPEC also completes the shipped
    names beside YAML files, and the overrides the dotted config keys and their values
    (cli/completion.py)."""
    from ablate.cli.completion import script

    return script(build_parser(), shell)


def storage_from_env(args: argparse.Namespace) -> None:
    """``--storage`` not given: $ABLATE_STORAGE, read now that the command runs (the parser never
    reads the environment, so its help and the docs never show a URL)."""
    if hasattr(args, "storage") and args.storage is None:
        args.storage = os.environ.get(STORAGE_ENV)


def main(argv: list[str] | None = None) -> int:
    """Run ``ablate ARGV`` (None: this process's arguments, ``sys.argv[1:]``); return its exit
    code. Reads ``argv`` only and changes neither ``sys.argv`` nor ``os.environ``: W&B, which
    records a process's command line, is shown it with a password masked where it records it
    (wandb_glue.log_summary). Parsing imports no command: a help page or a usage error from
    argparse answers before rich, PyYAML or any library a command needs is imported."""
    parser = build_parser()
    # Overrides may come after options (`--workers 2 model.pe=none`): collect them too.
    argv = sys.argv[1:] if argv is None else list(argv)
    args, extra = parser.parse_known_args(argv)
    args.argv = argv  # what a restart under a pinned CPU ISA reruns (commands.pin_process)
    stray = [x for x in extra if x.startswith("-") or ("=" not in x and not RESET.fullmatch(x))]
    if stray or (extra and not hasattr(args, "overrides")):
        # `ablate train --storage URL` (train has none): the error shows no password.
        unknown = " ".join(shown(x) for x in stray or extra)
        parser.error(f"unrecognized arguments: {unknown}{habit_hint(stray or extra, argv)}")
    if extra:
        args.overrides = [*args.overrides, *extra]
    storage_from_env(args)
    from ablate.cli.tables import shown_warnings  # rich: from here on, the command runs

    with shown_warnings():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ablate.cli import tables

    func: Callable[[argparse.Namespace], int] = args.func
    try:
        check_options(args)
        hydra_overrides(args)
        return func(args)
    except ConfigError as err:
        tables.console.print(f"error: {err}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        tables.console.print("interrupted", markup=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
