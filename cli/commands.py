"""What each ``ablate`` subcommand does: a thin call into the function that ``api.py`` reaches
too, and the tables it prints (cli/parser.py parses the command line and calls one of these
with its namespace; a ``ConfigError`` becomes exit code 2 there)."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.markup import escape
from rich.table import Table

from ablate.cli.checks import print_outcome
from ablate.cli.tables import (
    console,
    out_console,
    print_aggregate,
    print_folder,
    print_plan,
    print_power,
    print_results,
    print_search,
    print_summary,
)
from ablate.errors import ConfigError

if TYPE_CHECKING:
    from ablate.experiments.specs.spec import ExperimentSpec
    from ablate.sweeps.drivers.launcher import Launcher
    from ablate.sweeps.drivers.options import RunOptions
    from ablate.sweeps.drivers.outcome import Outcome


Command = Callable[[argparse.Namespace], int]


def reads_results(command: Command) -> Command:
    """A command that reads a study's results runs inside registry.reading(): the spec.json it
    reads imports none of the study's plugins (only training and ``verify`` import them)."""

    @functools.wraps(command)
    def reading_command(args: argparse.Namespace) -> int:
        from ablate.lit_modules.model.registry import reading

        with reading():
            return command(args)

    return reading_command


def cmd_train(args: argparse.Namespace) -> int:
    if args.spec is not None:
        trained = _train_spec_cell(args)  # None: --print-config
        if trained is not None:
            out, result = trained
            print_results(out, [("value", result)])
        return 0
    from ablate.experiments.specs.loading import load_config

    if args.config is None or args.profile is not None:
        raise ConfigError("ablate train needs a train CONFIG.yaml, or --spec EXP.yaml [--profile P]")
    from ablate.experiments.specs.quick_grid import check_list_values, split_overrides
    from ablate.experiments.specs.shipped import resolve

    if lists := split_overrides(args.overrides)[1]:
        key = next(iter(lists))
        given = f"{key}={','.join(lists[key])}"
        raise ConfigError(
            f"{given}: train runs one config; a comma list makes a grid with ablate sweep {args.config} {given}"
        )
    check_list_values(args.overrides, f" with ablate sweep {args.config}")
    # Fail fast, before the heavy imports.
    cfg = load_config(resolve(args.config, ("config",), "train config"), args.overrides)
    if args.print_config:
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return 0
    pin_process(cfg.trainer.cpu_isa, args.argv)
    from ablate.experiments.runner.train import default_out, train

    out = Path(args.out) if args.out else default_out(cfg)
    print_results(out, train(cfg, out, progress=show_progress(args), checkpoint=not args.no_checkpoint))
    return 0


def show_progress(args: argparse.Namespace) -> bool:
    """A progress bar only where someone watches it: not with --no-progress, and not when stderr
    is a file or a pipe (a log would fill with redrawn bars)."""
    return not args.no_progress and sys.stderr.isatty()


def _train_spec_cell(args: argparse.Namespace) -> tuple[Path, Any] | None:
    """``train --spec EXP.yaml variant=NAME [seed=N] [key=value ...]``: what ``wandb agent`` runs."""
    from ablate.sweeps.integrations.wandb_sweep import train_cell

    # argparse puts the first key=value into CONFIG; a real CONFIG next to --spec is an error.
    if args.config is not None and "=" not in args.config:
        raise ConfigError(f"give a train CONFIG ({args.config}) or --spec {args.spec}, not both")
    cell_args = [args.config, *args.overrides] if args.config else args.overrides
    if args.print_config:
        from ablate.experiments.specs.spec import cell_from_args
        from ablate.experiments.specs.spec_file import load_spec

        _, _, cfg = cell_from_args(load_spec(spec_file(args.spec), profile=args.profile), cell_args)
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return None
    return train_cell(
        str(spec_file(args.spec)), cell_args, profile=args.profile, out=args.out, progress=show_progress(args)
    )


def cmd_wandb_sweep(args: argparse.Namespace) -> int:
    from ablate.sweeps.integrations.wandb_sweep import sweep_yaml

    sys.stdout.write(
        sweep_yaml(
            str(spec_file(args.spec)), method=args.method, profile=args.profile, overrides=args.overrides
        )
    )
    return 0


def run_grid(spec: ExperimentSpec, run_dir: Path, args: argparse.Namespace) -> Outcome:
    """``ablate sweep``'s grid with the command line's worker and W&B options; prints the summary
    and returns the cell counts (the exit code)."""
    import optuna

    from ablate.sweeps.drivers.grid import sweep

    options = run_options(args, run_dir)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    console.print(
        f"[bold]{spec.name}[/]: {len(spec.variants)} variants x {len(spec.seeds)} seeds -> {escape(str(run_dir))}"
    )
    summary, outcome = sweep(spec, run_dir, options)
    print_summary(summary, run_dir)
    return outcome


def run_options(args: argparse.Namespace, run_dir: Path) -> RunOptions:
    """The command line's run options (cli/parser.py ``_sweep_options``, ``_launcher_options``),
    the launcher checked before anything is written."""
    from ablate.sweeps.drivers.options import RunOptions

    return RunOptions(
        workers=args.workers,
        storage=args.storage,
        use_wandb=not args.no_wandb,
        heartbeat_s=args.heartbeat,
        grace_s=args.grace,
        retry_failed=getattr(args, "retry_failed", False),
        launcher=_launcher(args, run_dir),
    )


def _launcher(args: argparse.Namespace, run_dir: Path) -> Launcher:
    """``--launcher``/``--slurm``, checked before anything is written."""
    from ablate.sweeps.drivers.launcher import check_launcher
    from ablate.sweeps.ledger.study_file import check_storage_url

    storage_file = check_storage_url(args.storage) if args.storage else run_dir / "study.db"
    return check_launcher(args.launcher, args.slurm, run_dir, storage_file)


def cmd_sweep(args: argparse.Namespace) -> int:
    from ablate.experiments.specs.quick_grid import load_sweep

    spec = load_sweep(
        args.spec,
        args.overrides,
        profile=args.profile,
        seeds=args.seeds,
        confirmed=getattr(args, "yes", False),
    )
    run_dir = Path(args.runs) / spec.name
    if args.print_config or args.dry_run:
        return _plan(spec, run_dir, args, f"{len(spec.cells())} cells")
    return print_outcome(console, [("", run_grid(spec, run_dir, args))])


def _plan(spec: ExperimentSpec, run_dir: Path, args: argparse.Namespace, runs: str) -> int:
    """``--print-config`` (the resolved experiment as YAML on stdout) or ``--dry-run`` (the plan
    table); either way nothing is run or written."""
    if args.print_config:
        print(yaml.safe_dump(spec.to_dict(), sort_keys=False), end="")
        console.print(f"{runs} would run in {run_dir}; nothing was run or written", markup=False)
    else:
        print_plan(spec, run_dir, runs)
    return 0


def spec_file(given: str) -> Path:
    """An experiment spec named on the command line: a file, else a shipped spec of that name."""
    from ablate.experiments.specs.shipped import resolve

    return resolve(given, ("spec",), "experiment spec")


def _lr_grid(spec: ExperimentSpec, out: Path, args: argparse.Namespace) -> Outcome:
    console.print(f"lr check: {spec.name} at optim.lr={spec.base.optim.lr:g}", markup=False)
    return run_grid(spec, out / spec.name, args)


def cmd_lr_check(args: argparse.Namespace) -> int:
    from ablate.sweeps.drivers.lr_check import lr_check, parse_factors

    factors = parse_factors(args.factors)
    out = Path(args.runs)
    runs = lr_check(
        spec_file(args.spec),
        args.overrides,
        profile=args.profile,
        factors=factors,
        run_grid=lambda spec: _lr_grid(spec, out, args),
    )
    console.print(f"next: python -m docs._gen.readme_tables --preset <preset> --collect {out}", markup=False)
    return print_outcome(console, [(spec.name, outcome) for spec, outcome in runs])


def cmd_search(args: argparse.Namespace) -> int:
    from ablate.experiments.specs.spec_file import load_spec

    spec = load_spec(spec_file(args.spec), args.overrides, profile=args.profile)
    from ablate.sweeps.drivers.search import check_search

    given = args.variants.split(",") if args.variants else None
    variants, trials = check_search(spec, given, args.trials, then_evaluate=args.then_evaluate)
    out = Path(args.runs)
    run_dir = out / f"{spec.name}-search"
    if args.print_config or args.dry_run:
        then = (
            f", then {len(spec.cells())} cells in {out / (spec.name + '-tuned')}"
            if args.then_evaluate
            else ""
        )
        plural = "s" * (len(variants) != 1)
        return _plan(spec, run_dir, args, f"{len(variants)} variant{plural} x {trials} trials{then}")
    import optuna

    from ablate.sweeps.drivers.outcome import search_outcome
    from ablate.sweeps.drivers.search import search, tuned_spec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    options = run_options(args, run_dir)
    console.print(
        f"[bold]{spec.name}[/]: search {len(variants)} variants x {trials} trials -> {escape(str(run_dir))}"
    )
    summary = search(spec, run_dir, options, variants=variants, trials=trials)
    print_search(summary, run_dir)
    outcomes = [("search" if args.then_evaluate else "", search_outcome(summary))]
    if args.then_evaluate:
        tuned = tuned_spec(spec, summary)
        outcomes.append(("tuned grid", run_grid(tuned, out / tuned.name, args)))
    return print_outcome(console, outcomes)


def cmd_check_component(args: argparse.Namespace) -> int:
    from ablate.lit_modules.components.plugins import absolute
    from ablate.testing import check_component

    plugins = [absolute(p, Path.cwd()) for p in args.plugins]
    results = check_component(args.kind, args.name, plugins)
    for r in results:
        out_console.print(r.line(), markup=False, highlight=False, soft_wrap=True)
    broken = [r for r in results if r.ok is False]
    verdict = f"{len(broken)} contract(s) broken" if broken else "every contract holds"
    console.print(f"{args.kind} {args.name}: {verdict}: exit {1 if broken else 0}", markup=False)
    return 1 if broken else 0


@reads_results
def cmd_report(args: argparse.Namespace) -> int:
    from ablate.sweeps.report.build import rewrite_report

    run_dir = Path(args.run_dir)
    print_summary(rewrite_report(run_dir, args.storage, margin=args.margin), run_dir)
    return 0


@reads_results
def cmd_power(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ablate.sweeps.report.power_table import write_power

    run_dir = Path(args.run_dir)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:  # drawn on a terminal only
        task = bar.add_task("power", total=None)

        def progress(name: str, done: int, total: int) -> None:
            bar.update(task, description=f"power: {name}", completed=done, total=total)

        table = write_power(
            run_dir,
            storage=args.storage,
            delta=args.delta,
            margin=args.margin,
            target=args.power,
            alpha=args.alpha,
            max_seeds=args.max_seeds,
            progress=progress,
        )
    print_power(table, run_dir)
    return 0


@reads_results
def cmd_compare(args: argparse.Namespace) -> int:
    from ablate.sweeps.report.compare import compare_runs

    out = Path(args.out or f"{args.run_a.rstrip('/')}-vs-{Path(args.run_b).name}")
    paths = compare_runs(Path(args.run_a), Path(args.run_b), out, margin=args.margin)
    console.print(f"comparison: {paths['html']} and {paths['markdown']}", markup=False)
    return 0


def pin_process(cpu_isa: str, argv: list[str]) -> None:
    """Restart this command (``ablate ARGV``, as ``main`` was given it) with a pinned CPU ISA's
    environment when it was started without it: ATen, oneDNN and MKL read those variables only
    when torch loads (experiments/schema/machine.py)."""
    from ablate.experiments.schema.machine import check_isa, isa_env

    want = isa_env(cpu_isa)
    if all(os.environ.get(k) == v for k, v in want.items()):
        return  # native, or started pinned (the cell checks that the pin took: require_pinned)
    check_isa(cpu_isa)
    console.print(f"restarting with {' '.join(f'{k}={v}' for k, v in want.items())} (cpu_isa={cpu_isa})")
    os.execve(sys.executable, [sys.executable, "-m", "ablate", *argv], {**os.environ, **want})


def cmd_verify(args: argparse.Namespace) -> int:
    from ablate.sweeps.drivers.verify import exit_code, format_checks, locate, read_spec, verify

    if args.conclusions:
        return _verify_conclusions(args)
    if len(args.path) > 1 or args.seeds is not None:
        raise ConfigError(
            "verify takes one PATH and no --seeds unless --conclusions: "
            f"verify {args.path[0]} reruns --cells {args.cells} of its cells"
        )
    (path,) = args.path
    pin_process(read_spec(locate(path)[0]).base.trainer.cpu_isa, args.argv)  # rerun as the cells ran
    checks = verify(path, cells=args.cells, seed=args.seed, progress=show_progress(args))
    for line in format_checks(checks):
        out_console.print(line, markup=False)
    return exit_code(checks)


def _verify_conclusions(args: argparse.Namespace) -> int:
    import optuna

    from ablate.sweeps.drivers import verify_conclusions as vc

    if args.workers < 1:
        raise ConfigError(f"--workers {args.workers}: give 1 or more")
    seeds = vc.parse_seeds(args.seeds) if args.seeds is not None else None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    checks = vc.verify_conclusions(args.path, runs=args.runs, seeds=seeds, workers=args.workers)
    for line in vc.format_studies(checks):
        out_console.print(line, markup=False)
    return vc.exit_code(checks)


@reads_results
def cmd_dashboard(args: argparse.Namespace) -> int:
    from ablate.sweeps.integrations.dashboard import serve

    serve(Path(args.run_dir), host=args.host, port=args.port, storage=args.storage)
    return 0


def cmd_configs(args: argparse.Namespace) -> int:
    from ablate.experiments.specs.shipped import KINDS, copy, shipped

    if args.configs_action == "copy":
        path = copy(args.name, args.dest, force=args.force)
        item = shipped()[args.name]
        use = "ablate train" if item.kind == "config" else "ablate sweep"
        console.print(f"wrote {path}: edit it, then {use} {path}", markup=False, soft_wrap=True)
        if base := item.base():
            console.print(
                f"its base config (the shipped {base}) is written inline under base:, so the file "
                "works wherever it is moved",
                markup=False,
                soft_wrap=True,
            )
        return 0
    table = Table(title="shipped configs (ablate train NAME) and experiments (ablate sweep NAME)")
    for col in ("name", "kind", "what it is"):
        table.add_column(col, overflow="fold")
    for item in shipped().values():
        table.add_row(item.name, KINDS[item.kind], item.description())
    out_console.print(table)
    console.print(
        "ablate configs copy NAME [DEST] writes one to edit; presets: ablate reproduce --list",
        markup=False,
        soft_wrap=True,
    )
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from ablate.experiments.specs.presets import load_preset, preset_names, preset_specs

    if args.list or not args.name:
        table = Table(title="presets (ablate reproduce NAME)")
        table.add_column("name")
        table.add_column("what it reproduces")
        for name in preset_names():
            table.add_row(name, load_preset(name).get("description", ""))
        out_console.print(table)
        return 0
    from ablate.sweeps.drivers.reproduce import default_profile, default_workers, reproduce

    specs = preset_specs(args.name, args.overrides, args.profile or default_profile())  # validate all first
    if args.workers is None:
        args.workers = default_workers()
    out = Path(args.runs)
    outcomes, agg = reproduce(
        args.name, specs, out, lambda s: _run_preset(args.name, s, out, args), args.storage
    )
    if agg is not None:  # one table across the preset's tasks
        print_aggregate(agg)
        console.print(f"aggregate: {out / f'{args.name}-aggregate.md'} and .json", markup=False)
    elif len(specs) > 1:
        console.print("no table across tasks: not every cell is complete", markup=False)
    return print_outcome(console, outcomes if len(specs) > 1 else [("", outcomes[0][1])])


def _run_preset(name: str, specs: list[ExperimentSpec], out: Path, args: argparse.Namespace) -> list[Outcome]:
    """A preset's sweeps: one pool of workers for all of them (grid.sweep_pool)."""
    import optuna

    from ablate.sweeps.drivers.grid import sweep_pool

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    options = run_options(args, out / specs[0].name)
    cells = sum(len(s.cells()) for s in specs)
    console.print(f"[bold]{name}[/]: {len(specs)} experiments, {cells} cells -> {escape(str(out))}")
    results = sweep_pool([(s, out / s.name) for s in specs], title=name, options=options)
    for spec, (summary, _) in zip(specs, results, strict=True):
        print_summary(summary, out / spec.name)
    return [outcome for _, outcome in results]


@reads_results
def cmd_aggregate(args: argparse.Namespace) -> int:
    from ablate.sweeps.report.across_tasks import write_aggregate

    stem = Path(args.out)
    print_aggregate(write_aggregate([Path(d) for d in args.run_dirs], stem, args.storage))
    console.print(f"aggregate: {stem.with_suffix('.md')} and .json", markup=False)
    return 0


@reads_results
def cmd_wandb_report(args: argparse.Namespace) -> int:
    from ablate.sweeps.integrations.wandb_review import create_from_spec, write_review

    run_dir = Path(args.run_dir)
    if args.from_spec:
        print(*create_from_spec(run_dir), sep="\n")  # the report's URL, then the workspace's
        return 0
    review = write_review(run_dir)
    if review.urls is not None:
        print(*review.urls, sep="\n")
        return 0
    console.print(
        f"W&B is offline: wrote the report's and the workspace's specs. After `wandb sync "
        f"{run_dir}/wandb/offline-run-*`, create both with `ablate wandb-report {run_dir} --from-spec`.",
        markup=False,
    )
    print_folder(review.report)
    print_folder(review.workspace)
    return 0
