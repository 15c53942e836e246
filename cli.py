"""The ``ablate`` command line.

Every user error (bad config key, impossible combination, missing or
malformed data) exits with code 2 and one message naming the problem, and
leaves no output folder behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.markup import escape
from rich.table import Table

from ablate.errors import ConfigError
from ablate.experiments.io import input_file
from ablate.sweeps.cli_checks import check_options, check_preset, check_preset_name, print_outcome
from ablate.sweeps.wandb_report import add_parser as add_wandb_report_parser
from ablate.tables import (
    console,
    out_console,
    print_aggregate,
    print_power,
    print_results,
    print_search,
    print_summary,
)

if TYPE_CHECKING:
    from ablate.experiments.spec import ExperimentSpec
    from ablate.sweeps.launcher import Launcher
    from ablate.sweeps.outcome import Outcome


EXIT_USAGE = 2


def cmd_train(args: argparse.Namespace) -> int:
    if args.spec is not None:
        trained = _train_spec_cell(args)  # None: --print-config
        if trained is not None:
            out, result = trained
            print_results(out, [("value", result)])
        return 0
    from ablate.experiments.config import load_config

    if args.config is None or args.profile is not None:
        raise ConfigError("ablate train needs a train CONFIG.yaml, or --spec EXP.yaml [--profile P]")
    cfg = load_config(input_file(args.config), args.overrides)  # fail fast, before the heavy imports
    if args.print_config:
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return 0
    out = Path(args.out or f"runs/train/{cfg.data.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    from ablate.experiments.io import atomic_dir

    with atomic_dir(out) as tmp:
        from lightning.pytorch.callbacks import ModelCheckpoint
        from lightning.pytorch.loggers import CSVLogger

        from ablate.experiments.run import run_cells

        # trainer.seed_parallel=K trains seed..seed+K-1 (one folder each); K=1 the one seed.
        seeds = list(range(cfg.seed, cfg.seed + cfg.trainer.seed_parallel))
        dirs = [tmp] if len(seeds) == 1 else [tmp / f"seed{s}" for s in seeds]
        loggers = [CSVLogger(d, name="", version="") for d in dirs]
        # The final weights (of the stack with seed_parallel > 1), saved once at max_steps.
        checkpoint = ModelCheckpoint(
            dirpath=tmp, filename="final", every_n_train_steps=cfg.trainer.max_steps, save_top_k=1
        )
        callbacks = [] if args.no_checkpoint else [checkpoint]
        results = run_cells(
            cfg, seeds, dirs, progress=not args.no_progress, loggers=loggers, callbacks=callbacks
        )
        named = (
            [("value", results[0])]
            if len(seeds) == 1
            else [(f"seed{s}", r) for s, r in zip(seeds, results, strict=True)]
        )
    print_results(out, named)
    return 0


def _train_spec_cell(args: argparse.Namespace) -> tuple[Path, Any] | None:
    """``train --spec EXP.yaml variant=NAME [seed=N] [key=value ...]``: what ``wandb agent`` runs."""
    from ablate.sweeps.wandb_sweep import train_cell

    # argparse puts the first key=value into CONFIG; a real CONFIG next to --spec is an error.
    if args.config is not None and "=" not in args.config:
        raise ConfigError(f"give a train CONFIG ({args.config}) or --spec {args.spec}, not both")
    cell_args = [args.config, *args.overrides] if args.config else args.overrides
    if args.print_config:
        from ablate.experiments.spec import load_spec
        from ablate.sweeps.wandb_sweep import cell_from_args

        _, _, cfg = cell_from_args(load_spec(input_file(args.spec), profile=args.profile), cell_args)
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return None
    return train_cell(args.spec, cell_args, profile=args.profile, out=args.out, progress=not args.no_progress)


def cmd_wandb_sweep(args: argparse.Namespace) -> int:
    from ablate.sweeps.wandb_sweep import sweep_yaml

    sys.stdout.write(
        sweep_yaml(args.spec, method=args.method, profile=args.profile, overrides=args.overrides)
    )
    return 0


EXPERIMENTS = Path(__file__).parent / "experiments"
PRESETS = EXPERIMENTS / "presets"


def _sweep_one(
    spec_path: Path, overrides: list[str], args: argparse.Namespace, profile: str | None
) -> Outcome:
    from ablate.experiments.spec import load_spec

    spec = load_spec(input_file(spec_path), overrides, profile=profile)
    return run_grid(spec, Path(args.out or "runs") / spec.name, args)


def run_grid(spec: ExperimentSpec, run_dir: Path, args: argparse.Namespace) -> Outcome:
    """``ablate sweep``'s grid with the command line's worker and W&B options; prints the summary
    and returns the cell counts (the exit code)."""
    import optuna

    from ablate.sweeps.grid import sweep

    launcher = _launcher(args, run_dir)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    console.print(
        f"[bold]{spec.name}[/]: {len(spec.variants)} variants x {len(spec.seeds)} seeds -> {escape(str(run_dir))}"
    )
    summary, outcome = sweep(
        spec,
        run_dir,
        storage=args.storage,
        workers=args.workers,
        use_wandb=not args.no_wandb,
        heartbeat_s=args.heartbeat,
        grace_s=args.grace,
        launcher=launcher,
    )
    print_summary(summary, run_dir)
    return outcome


def _launcher(args: argparse.Namespace, run_dir: Path) -> Launcher:
    """``--launcher``/``--slurm``, checked before anything is written."""
    from ablate.sweeps.launcher import check_launcher
    from ablate.sweeps.study_file import check_storage_url

    storage_file = check_storage_url(args.storage) if args.storage else run_dir / "study.db"
    return check_launcher(args.launcher, args.slurm, run_dir, storage_file)


def cmd_sweep(args: argparse.Namespace) -> int:
    return print_outcome(console, [("", _sweep_one(Path(args.spec), args.overrides, args, args.profile))])


def cmd_search(args: argparse.Namespace) -> int:
    from ablate.experiments.spec import load_spec

    spec = load_spec(input_file(args.spec), args.overrides, profile=args.profile)
    if spec.search is None:
        raise ConfigError(
            f"{args.spec} has no 'search' block (search.space, trials, metric, pruner); see README"
        )
    variants = args.variants.split(",") if args.variants else list(spec.variants)
    unknown = [v for v in variants if v not in spec.variants]
    if unknown or len(set(variants)) != len(variants):
        raise ConfigError(
            f"--variants {args.variants!r}: choose distinct names among {', '.join(spec.variants)}"
        )
    if args.then_evaluate and spec.baseline not in variants:
        raise ConfigError(f"--then-evaluate needs the baseline {spec.baseline!r} among --variants")
    trials = spec.search.trials if args.trials is None else args.trials
    import optuna

    from ablate.sweeps.outcome import search_outcome
    from ablate.sweeps.search import search, tuned_spec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    out = Path(args.out or "runs")
    run_dir = out / f"{spec.name}-search"
    launcher = _launcher(args, run_dir)
    console.print(
        f"[bold]{spec.name}[/]: search {len(variants)} variants x {trials} trials -> {escape(str(run_dir))}"
    )
    summary = search(
        spec,
        run_dir,
        variants=variants,
        trials=trials,
        storage=args.storage,
        workers=args.workers,
        heartbeat_s=args.heartbeat,
        grace_s=args.grace,
        launcher=launcher,
    )
    print_search(summary, run_dir)
    outcomes = [("search" if args.then_evaluate else "", search_outcome(summary))]
    if args.then_evaluate:
        tuned = tuned_spec(spec, summary)
        outcomes.append(("tuned grid", run_grid(tuned, out / tuned.name, args)))
    return print_outcome(console, outcomes)


def cmd_report(args: argparse.Namespace) -> int:
    from ablate.sweeps.grid import open_run, report

    run_dir = Path(args.run_dir)
    spec, store = open_run(run_dir, args.storage)
    print_summary(report(spec, store, run_dir), run_dir)
    return 0


def cmd_power(args: argparse.Namespace) -> int:
    from ablate.experiments.io import write_json
    from ablate.sweeps.grid import open_run
    from ablate.sweeps.power import power_table

    run_dir = Path(args.run_dir)
    spec, store = open_run(run_dir, args.storage)
    table = power_table(
        spec,
        store,
        delta=args.delta,
        target=args.power,
        alpha=args.alpha,
        resamples=args.resamples,
        max_seeds=args.max_seeds,
    )
    if not table["variants"]:
        raise ConfigError(
            f"{run_dir}: no variant has complete cells beside the baseline's; nothing to estimate"
        )
    write_json(run_dir / "power.json", table)
    print_power(table, run_dir)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ablate.sweeps.compare import compare_runs

    out = Path(args.out or f"{args.run_a.rstrip('/')}-vs-{Path(args.run_b).name}")
    paths = compare_runs(Path(args.run_a), Path(args.run_b), out)
    console.print(f"comparison: {paths['html']} and {paths['markdown']}", markup=False)
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from ablate.sweeps.dashboard import serve

    serve(Path(args.run_dir), host=args.host, port=args.port, storage=args.storage)
    return 0


def load_preset(name: str) -> dict:
    from ablate.experiments.config import read_yaml

    path = check_preset_name(name, PRESETS)
    return check_preset(path, read_yaml(path), EXPERIMENTS)


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.list or not args.name:
        table = Table(title="presets (ablate reproduce NAME)")
        table.add_column("name")
        table.add_column("what it reproduces")
        for path in sorted(PRESETS.glob("*.yaml")):
            table.add_row(path.stem, load_preset(path.stem).get("description", ""))
        out_console.print(table)
        return 0
    import torch

    preset = load_preset(args.name)
    profile = args.profile or ("gpu" if torch.cuda.is_available() else "cpu")
    if args.workers is None:
        # One worker per GPU; on a CPU one single-threaded worker per core (up to 8).
        args.workers = torch.cuda.device_count() or min(8, os.cpu_count() or 1)
    specs = [EXPERIMENTS / p for p in preset["experiments"]]
    from ablate.experiments.spec import load_spec

    names = [load_spec(path, args.overrides, profile=profile).name for path in specs]  # validate all first
    outcomes = [
        (name, _sweep_one(path, args.overrides, args, profile))
        for name, path in zip(names, specs, strict=True)
    ]
    if len(specs) > 1 and all(o.ok for _, o in outcomes):  # one table across the preset's tasks
        out = Path(args.out or "runs")
        write_aggregate([out / n for n in names], out / f"{args.name}-aggregate", args.storage)
    elif len(specs) > 1:
        console.print("no table across tasks: not every cell is complete", markup=False)
    return print_outcome(console, outcomes if len(specs) > 1 else [("", outcomes[0][1])])


def write_aggregate(run_dirs: list[Path], stem: Path, storage: str | None) -> None:
    from ablate.experiments.io import atomic_write_bytes, write_json
    from ablate.sweeps.aggregate import from_run_dirs, markdown

    agg = from_run_dirs(run_dirs, storage)
    write_json(stem.with_suffix(".json"), agg)
    atomic_write_bytes(stem.with_suffix(".md"), markdown(agg).encode())
    print_aggregate(agg)
    console.print(f"aggregate: {stem.with_suffix('.md')} and .json", markup=False)


def cmd_aggregate(args: argparse.Namespace) -> int:
    if len(args.run_dirs) < 2:
        raise ConfigError("ablate aggregate needs at least two run folders (one per task)")
    write_aggregate([Path(d) for d in args.run_dirs], Path(args.out), args.storage)
    return 0


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
        help="Optuna storage: a database URL, or journal:PATH (one file on a shared file system, "
        "no server); default sqlite in the run folder",
    )
    p.add_argument("--out", help="parent folder of the run folder (default runs/)")
    p.add_argument("--no-wandb", action="store_true", help="do not log to Weights & Biases")
    p.add_argument("--heartbeat", type=int, default=10, help="seconds between worker heartbeats")
    p.add_argument("--grace", type=int, default=30, help="seconds without heartbeat before a cell is rerun")


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ablate", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"ablate {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train and evaluate one configuration")
    train.add_argument(
        "config", nargs="?", help="train config YAML (sections model, data, optim, trainer, seed)"
    )
    train.add_argument(
        "overrides", nargs="*", help="dotted overrides, e.g. model.n_heads=1 model.pe=none seed=3"
    )
    train.add_argument("--out", help="output folder (default runs/train/<task>-<time>)")
    train.add_argument("--no-progress", action="store_true", help="hide the Lightning progress bar")
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

    sw = sub.add_parser("sweep", help="run every variant x seed of an experiment, then report")
    sw.add_argument("spec", help="experiment spec YAML (name, base, variants, seeds, ...)")
    sw.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    _sweep_options(sw)
    _launcher_options(sw)
    sw.set_defaults(func=cmd_sweep)

    se = sub.add_parser(
        "search", help="tune each variant on validation (TPE + pruning), optionally run the tuned grid"
    )
    se.add_argument("spec", help="experiment spec YAML with a 'search' block")
    se.add_argument("--variants", help="comma-separated variants to tune (default: all)")
    se.add_argument("--trials", type=int, help="trials per variant (default: the spec's search.trials)")
    se.add_argument(
        "--then-evaluate", action="store_true", help="then run every seed with each variant's best"
    )
    se.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    _sweep_options(se)
    _launcher_options(se)
    se.set_defaults(func=cmd_search)

    rp = sub.add_parser("report", help="(re)write the report of a sweep run folder")
    rp.add_argument("run_dir")
    rp.add_argument("--storage", help="Optuna storage URL if not the run folder's study.db")
    rp.set_defaults(func=cmd_report)

    db = sub.add_parser("dashboard", help="review a sweep run folder in optuna-dashboard (local web UI)")
    db.add_argument("run_dir")
    db.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    db.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    db.add_argument("--storage", help="Optuna storage URL if not the run folder's study.db")
    db.set_defaults(func=cmd_dashboard)

    pw = sub.add_parser("power", help="seeds each comparison needs, resampled from a finished study")
    pw.add_argument("run_dir")
    pw.add_argument("--delta", type=float, help="effect to detect (default: the observed one)")
    pw.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    pw.add_argument("--alpha", type=float, default=0.05, help="two-sided level (default 0.05)")
    pw.add_argument("--resamples", type=int, default=400, help="resamples per seed count (default 400)")
    pw.add_argument("--max-seeds", type=int, default=50, help="largest seed count tried (default 50)")
    pw.add_argument("--storage", help="Optuna storage URL if not the run folder's study.db")
    pw.set_defaults(func=cmd_power)

    ag = sub.add_parser("aggregate", help="one table across tasks: IQM and P(improve) of normalized scores")
    ag.add_argument("run_dirs", nargs="+", help="finished sweep run folders that share variant names")
    ag.add_argument("--out", default="runs/aggregate", help="output stem: STEM.json and STEM.md")
    ag.add_argument("--storage", help="Optuna storage URL if not each run folder's study.db")
    ag.set_defaults(func=cmd_aggregate)

    cp = sub.add_parser("compare", help="put two sweep run folders side by side")
    cp.add_argument("run_a")
    cp.add_argument("run_b")
    cp.add_argument("--out", help="output folder (default RUN_A-vs-NAME_B)")
    cp.set_defaults(func=cmd_compare)

    rr = sub.add_parser("reproduce", help="run a preset ablation end to end")
    rr.add_argument("name", nargs="?", help="preset name (see --list)")
    rr.add_argument("--list", action="store_true", help="list the presets")
    rr.add_argument("--profile", choices=["cpu", "gpu"], help="cpu: minutes on 2 cores; gpu: full size")
    _sweep_options(rr, default_workers=None)
    _launcher_options(rr)
    rr.set_defaults(func=cmd_reproduce)
    add_wandb_report_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # Overrides may come after options (`--workers 2 model.pe=none`): collect them too.
    args, extra = parser.parse_known_args(argv)
    stray = [x for x in extra if x.startswith("-") or "=" not in x]
    if stray or (extra and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(stray or extra)}")
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
