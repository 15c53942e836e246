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

from rich.console import Console
from rich.table import Table

from lit_modules.config import ConfigError

console = Console(stderr=True)
# Tables stay readable when stdout is a file or a pipe (rich would assume 80 columns).
out_console = Console() if Console().is_terminal else Console(width=160)
EXIT_USAGE = 2


def cmd_train(args: argparse.Namespace) -> int:
    from experiments.config import load_config

    cfg = load_config(args.config, args.overrides)  # fail fast, before the heavy imports
    out = Path(args.out or f"runs/train/{cfg.data.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    from experiments.io import atomic_dir

    with atomic_dir(out) as tmp:
        from lightning.pytorch.loggers import CSVLogger

        from experiments.run import run_trial

        logger = CSVLogger(tmp, name="", version="")
        result = run_trial(cfg, tmp, progress=not args.no_progress, logger=logger)
    table = Table(title=f"{cfg.data.task}: {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.to_dict().items():
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    out_console.print(table)
    if result.diverged:
        console.print(
            f"[yellow]run diverged (non-finite loss) at step {result.steps}; recorded in metrics.json"
        )
    return 0


PRESETS = Path(__file__).parent / "presets"


def _sweep_one(spec_path: Path, overrides: list[str], args: argparse.Namespace, profile: str | None) -> dict:
    from experiments.spec import load_spec

    spec = load_spec(spec_path, overrides, profile=profile)
    import optuna

    from sweeps.grid import sweep

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    run_dir = Path(args.out or "runs") / spec.name
    console.print(
        f"[bold]{spec.name}[/]: {len(spec.variants)} variants x {len(spec.seeds)} seeds -> {run_dir}"
    )
    summary = sweep(
        spec,
        run_dir,
        storage=args.storage,
        workers=args.workers,
        use_wandb=not args.no_wandb,
        heartbeat_s=args.heartbeat,
        grace_s=args.grace,
    )
    print_summary(summary, run_dir)
    return summary


def print_summary(summary: dict, run_dir: Path) -> None:
    metric = summary["metric"]
    table = Table(title=f"{summary['experiment']}: {metric} over seeds ({run_dir})")
    for col in (
        "variant",
        "n",
        "div",
        "median",
        "IQR",
        "min-max",
        "Δ median [95% CI]",
        "p (MWU)",
        "P(improve)",
    ):
        table.add_column(col, justify="left" if col == "variant" else "right")

    def f(x: float | None, spec: str = ".3f") -> str:
        return "-" if x is None else format(x, spec)

    for name, v in summary["variants"].items():
        ci = v["ci95"]
        delta = f(v["delta_median"], "+.3f") + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
        table.add_row(
            name + (" (baseline)" if name == summary["baseline"] else ""),
            str(v["n"]),
            str(v["n_diverged"]),
            f(v["median"]),
            f"{f(v['q1'])}-{f(v['q3'])}",
            f"{f(v['min'])}-{f(v['max'])}",
            delta,
            f(v["p_value"], ".3g"),
            f(v["p_improve"], ".2f"),
        )
    out_console.print(table)
    cells = summary["cells"]
    if cells["complete"] < cells["total"]:
        console.print(
            f"[yellow]partial: {cells['complete']}/{cells['total']} cells complete; missing: "
            + ", ".join(cells["missing"]),
            markup=False,
        )
    console.print(f"report: {run_dir / 'report.html'}", markup=False)


def cmd_sweep(args: argparse.Namespace) -> int:
    _sweep_one(Path(args.spec), args.overrides, args, args.profile)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from sweeps.grid import open_run, report

    run_dir = Path(args.run_dir)
    spec, store = open_run(run_dir, args.storage)
    print_summary(report(spec, store, run_dir), run_dir)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from sweeps.compare import compare_runs

    out = Path(args.out or f"{args.run_a.rstrip('/')}-vs-{Path(args.run_b).name}")
    try:
        paths = compare_runs(Path(args.run_a), Path(args.run_b), out)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    console.print(f"comparison: {paths['html']} and {paths['markdown']}", markup=False)
    return 0


def load_preset(name: str) -> dict:
    from experiments.config import read_yaml

    path = PRESETS / f"{name}.yaml"
    if not path.is_file():
        names = sorted(p.stem for p in PRESETS.glob("*.yaml"))
        raise ConfigError(f"no preset {name!r}; choose one of {', '.join(names)} (ablate reproduce --list)")
    return read_yaml(path)


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
    specs = [Path(__file__).parent / p for p in preset["experiments"]]
    from experiments.spec import load_spec

    for path in specs:  # validate all before running any
        load_spec(path, args.overrides, profile=profile)
    for path in specs:
        _sweep_one(path, args.overrides, args, profile)
    return 0


def _sweep_options(p: argparse.ArgumentParser, default_workers: int | None = 1) -> None:
    p.add_argument("overrides", nargs="*", help="dotted overrides applied to every variant's base")
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers,
        help=f"worker processes on this machine (default {default_workers or 'one per GPU or CPU core'})",
    )
    p.add_argument("--storage", help="Optuna storage URL (default sqlite in the run folder)")
    p.add_argument("--out", help="parent folder of the run folder (default runs/)")
    p.add_argument("--no-wandb", action="store_true", help="do not log to Weights & Biases")
    p.add_argument("--heartbeat", type=int, default=10, help="seconds between worker heartbeats")
    p.add_argument("--grace", type=int, default=30, help="seconds without heartbeat before a cell is rerun")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ablate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train and evaluate one configuration")
    train.add_argument("config", help="train config YAML (sections model, data, optim, trainer, seed)")
    train.add_argument(
        "overrides", nargs="*", help="dotted overrides, e.g. model.n_heads=1 model.pe=none seed=3"
    )
    train.add_argument("--out", help="output folder (default runs/train/<task>-<time>)")
    train.add_argument("--no-progress", action="store_true", help="hide the Lightning progress bar")
    train.set_defaults(func=cmd_train)

    sw = sub.add_parser("sweep", help="run every variant x seed of an experiment, then report")
    sw.add_argument("spec", help="experiment spec YAML (name, base, variants, seeds, ...)")
    sw.add_argument("--profile", help="apply the spec's named profile (e.g. cpu, gpu) to the base")
    _sweep_options(sw)
    sw.set_defaults(func=cmd_sweep)

    rp = sub.add_parser("report", help="(re)write the report of a sweep run folder")
    rp.add_argument("run_dir")
    rp.add_argument("--storage", help="Optuna storage URL if not the run folder's study.db")
    rp.set_defaults(func=cmd_report)

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
    rr.set_defaults(func=cmd_reproduce)
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
        return func(args)
    except ConfigError as err:
        console.print(f"error: {err}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.print("interrupted", markup=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
