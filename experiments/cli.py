"""The ``ablate`` command line.

Every user error (bad config key, impossible combination, missing or
malformed data) exits with code 2 and one message naming the problem, and
leaves no output folder behind.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lit_modules.config import ConfigError

console = Console(stderr=True)
EXIT_USAGE = 2


def cmd_train(args: argparse.Namespace) -> int:
    from experiments.config import load_config
    from experiments.io import atomic_dir
    from experiments.run import run_trial

    cfg = load_config(args.config, args.overrides)
    out = Path(args.out or f"runs/train/{cfg.data.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    from lightning.pytorch.loggers import CSVLogger

    with atomic_dir(out) as tmp:
        logger = CSVLogger(tmp, name="", version="")
        result = run_trial(cfg, tmp, progress=not args.no_progress, logger=logger)
    table = Table(title=f"{cfg.data.task}: {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.to_dict().items():
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    Console().print(table)
    if result.diverged:
        console.print(f"[yellow]run diverged (non-finite loss) at step {result.steps}; recorded in metrics.json")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ablate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train and evaluate one configuration")
    train.add_argument("config", help="train config YAML (sections model, data, optim, trainer, seed)")
    train.add_argument("overrides", nargs="*", help="dotted overrides, e.g. model.n_heads=1 model.pe=none seed=3")
    train.add_argument("--out", help="output folder (default runs/train/<task>-<time>)")
    train.add_argument("--no-progress", action="store_true", help="hide the Lightning progress bar")
    train.set_defaults(func=cmd_train)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except ConfigError as err:
        console.print(f"error: {err}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
