"""``python -m ablate.benchmarks.same_results RUNS_A RUNS_B``: do two runs give the same numbers?

For every sweep run folder in both parent folders (same experiment name), compares what a
change must not move: each variant's statistics in ``summary.json`` (everything but the
provenance, the package versions and the wall times) and every cell's metrics in
``results.csv``. Prints one line per experiment (identical, or the first differences) and exits
0 only when everything is identical. This is how a refactor shows it changed no result.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.sweeps.ledger.run_folder import read_summary
from ablate.trees import flatten

# Fields that describe the run, not its results ("cost" holds wall times; its parameter counts
# are compared through results.csv's n_params).
SUMMARY_SKIP = {"provenance", "versions", "cost"}
CELL_SKIP = {"wall_s", "trial", "wandb_id"}


def summary_numbers(run_dir: Path) -> dict[str, Any]:
    summary = read_summary(run_dir)
    return flatten({k: v for k, v in summary.items() if k not in SUMMARY_SKIP})


def cell_numbers(run_dir: Path) -> dict[str, Any]:
    with (run_dir / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    return {f"{r['variant']}/s{r['seed']}.{k}": v for r in rows for k, v in r.items() if k not in CELL_SKIP}


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def compare(runs_a: Path, runs_b: Path) -> dict[str, list[str]]:
    """Experiment name -> its differences (empty: identical), for run folders present in both."""
    names = sorted(
        p.name
        for p in runs_a.iterdir()
        if (p / "summary.json").is_file() and (runs_b / p.name / "summary.json").is_file()
    )
    out = {}
    for name in names:
        a, b = runs_a / name, runs_b / name
        out[name] = differences(summary_numbers(a), summary_numbers(b)) + differences(
            cell_numbers(a), cell_numbers(b)
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.same_results", description=__doc__.splitlines()[0]
    )
    parser.add_argument("runs_a", type=Path)
    parser.add_argument("runs_b", type=Path)
    args = parser.parse_args(argv)
    try:
        result = compare(args.runs_a, args.runs_b)
    except ConfigError as err:  # a summary.json that is not one (read_summary names it)
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not result:
        print("no run folder with a summary.json in both", file=sys.stderr)
        return 1
    for name, diffs in result.items():
        n = len(summary_numbers(args.runs_a / name)) + len(cell_numbers(args.runs_a / name))
        print(
            f"{name}: "
            + (f"identical ({n} numbers)" if not diffs else f"{len(diffs)} differ: " + "; ".join(diffs[:5]))
        )
    return 0 if not any(result.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
