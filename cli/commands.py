"""What each ``ablate`` subcommand does (cli.py parses the command line and calls one of
these with its namespace; a ``ConfigError`` becomes exit code 2 there)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.markup import escape
from rich.table import Table

from ablate.cli.checks import check_preset, check_preset_name, print_outcome
from ablate.cli.tables import (
    console,
    out_console,
    print_aggregate,
    print_folder,
    print_power,
    print_results,
    print_search,
    print_summary,
)
from ablate.errors import ConfigError
from ablate.experiments.io import input_file

if TYPE_CHECKING:
    from ablate.experiments.spec import ExperimentSpec
    from ablate.sweeps.run.launcher import Launcher
    from ablate.sweeps.run.outcome import Outcome


def cmd_train(args: argparse.Namespace) -> int:
    if args.spec is not None:
        trained = _train_spec_cell(args)  # None: --print-config
        if trained is not None:
            out, result = trained
            print_results(out, [("value", result)])
        return 0
    from ablate.experiments.loading import load_config

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
    from ablate.sweeps.integrations.wandb_sweep import train_cell

    # argparse puts the first key=value into CONFIG; a real CONFIG next to --spec is an error.
    if args.config is not None and "=" not in args.config:
        raise ConfigError(f"give a train CONFIG ({args.config}) or --spec {args.spec}, not both")
    cell_args = [args.config, *args.overrides] if args.config else args.overrides
    if args.print_config:
        from ablate.experiments.spec import cell_from_args, load_spec

        _, _, cfg = cell_from_args(load_spec(input_file(args.spec), profile=args.profile), cell_args)
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return None
    return train_cell(args.spec, cell_args, profile=args.profile, out=args.out, progress=not args.no_progress)


def cmd_wandb_sweep(args: argparse.Namespace) -> int:
    from ablate.sweeps.integrations.wandb_sweep import sweep_yaml

    sys.stdout.write(
        sweep_yaml(args.spec, method=args.method, profile=args.profile, overrides=args.overrides)
    )
    return 0


EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
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

    from ablate.sweeps.run.grid import sweep

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
    from ablate.sweeps.ledger.study_file import check_storage_url
    from ablate.sweeps.run.launcher import check_launcher

    storage_file = check_storage_url(args.storage) if args.storage else run_dir / "study.db"
    return check_launcher(args.launcher, args.slurm, run_dir, storage_file)


def cmd_sweep(args: argparse.Namespace) -> int:
    return print_outcome(console, [("", _sweep_one(Path(args.spec), args.overrides, args, args.profile))])


def _lr_grid(spec: ExperimentSpec, out: Path, args: argparse.Namespace) -> Outcome:
    console.print(f"lr check: {spec.name} at optim.lr={spec.base.optim.lr:g}", markup=False)
    return run_grid(spec, out / spec.name, args)


def cmd_lr_check(args: argparse.Namespace) -> int:
    from ablate.sweeps.run.lr_check import lr_check, parse_factors

    factors = parse_factors(args.factors)
    out = Path(args.out or "runs")
    runs = lr_check(
        Path(args.spec),
        args.overrides,
        profile=args.profile,
        factors=factors,
        run_grid=lambda spec: _lr_grid(spec, out, args),
    )
    console.print(f"next: python -m docs._gen.readme_tables --preset <preset> --collect {out}", markup=False)
    return print_outcome(console, [(spec.name, outcome) for spec, outcome in runs])


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

    from ablate.sweeps.run.outcome import search_outcome
    from ablate.sweeps.run.search import search, tuned_spec

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
    from ablate.sweeps.ledger.run_folder import open_run
    from ablate.sweeps.report.build import report

    run_dir = Path(args.run_dir)
    spec, store = open_run(run_dir, args.storage)
    print_summary(report(spec, store, run_dir), run_dir)
    return 0


def cmd_power(args: argparse.Namespace) -> int:
    from ablate.experiments.io import write_json
    from ablate.sweeps.ledger.run_folder import open_run
    from ablate.sweeps.report.power_table import power_table

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
    from ablate.sweeps.report.compare import compare_runs

    out = Path(args.out or f"{args.run_a.rstrip('/')}-vs-{Path(args.run_b).name}")
    paths = compare_runs(Path(args.run_a), Path(args.run_b), out)
    console.print(f"comparison: {paths['html']} and {paths['markdown']}", markup=False)
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from ablate.sweeps.integrations.dashboard import serve

    serve(Path(args.run_dir), host=args.host, port=args.port, storage=args.storage)
    return 0


def load_preset(name: str) -> dict:
    from ablate.experiments.loading import read_yaml

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
    from ablate.sweeps.report.across_tasks import from_run_dirs, markdown

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


def cmd_wandb_report(args: argparse.Namespace) -> int:
    from ablate.sweeps.integrations.wandb_report import create_from_spec, write_review

    run_dir = Path(args.run_dir)
    if args.from_spec:
        print(create_from_spec(run_dir))
        return 0
    path, url = write_review(run_dir)
    if url is not None:
        print(url)
        return 0
    console.print(
        f"W&B is offline: wrote the report's spec. After `wandb sync {run_dir}/wandb/offline-run-*`, "
        f"create it with `ablate wandb-report {run_dir} --from-spec`.",
        markup=False,
    )
    print_folder(path)
    return 0
