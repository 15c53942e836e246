"""Calibration of the seed-factor intervals: ``python -m ablate.benchmarks.variance_calibration
[--quick] [--replicates N] [--out FILE]``.

The report prints each variance share with an interval (sweeps/stats/variance.py). An interval
is only worth its label if it covers the true share that often, so this draws tables from the
random-effects model with known components (normal effects, one run per cell, as the estimator
assumes), computes every interval the report would, and counts how often it holds the truth:

- coverage of the share and of the sd interval of every component, for both methods (gci, the
  report's, and the parametric bootstrap), at 3x3, 4x4, 5x5 (shares 1/3 each and 0.6/0.2/0.2)
  and 3x3x3 with numerics (two scenarios with interactions and zero components);
- how often each estimate is clipped to 0, and the median width of each share's interval by
  grid size (3x3 to 10x10, and with numerics), from which docs/pages/explanations/statistics.md
  recommends grid sizes.

Writes benchmarks/results/variance_calibration.json (not with ``--quick``, whose few replicates
are smoke, not data, unless ``--out`` is given) and prints the tables as Markdown.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ablate.files import write_json
from ablate.sweeps.stats.variance import (
    FACTORS,
    LEVEL,
    METHODS,
    draw_components,
    effect_names,
    effects,
    intervals,
    kind,
    mean_squares,
    raw_components,
    sums_of_squares,
)

RESULTS = Path(__file__).resolve().parent / "results" / "variance_calibration.json"
# True shares of every component (effect_names order), by scenario name.
TWO_WAY = {"equal": (1 / 3, 1 / 3, 1 / 3), "init-heavy": (0.6, 0.2, 0.2)}
# init, data_order, numerics, init:data_order, init:numerics, data_order:numerics, residual.
THREE_WAY = {
    "mains": (0.25, 0.25, 0.25, 0.0, 0.0, 0.0, 0.25),
    "chaos": (0.4, 0.1, 0.0, 0.1, 0.1, 0.1, 0.2),
}
COVERAGE_GRIDS = [
    ((3, 3), TWO_WAY),
    ((4, 4), TWO_WAY),
    ((5, 5), TWO_WAY),
    ((3, 3, 2), THREE_WAY),
    ((3, 3, 3), THREE_WAY),
    ((4, 4, 3), THREE_WAY),
]
WIDTH_GRIDS = [(3, 3), (4, 4), (5, 5), (6, 6), (8, 8), (10, 10), (20, 20), (10, 3), (3, 10), (20, 5)]
WIDTH_GRIDS_3 = [(3, 3, 2), (3, 3, 3), (4, 4, 3), (5, 5, 3), (6, 6, 3)]
CHUNK = 100  # replicates per batch: keeps (replicates, draws) arrays to tens of MB


def draw_tables(sizes: Sequence[int], share: Sequence[float], n: int, rng: np.random.Generator) -> np.ndarray:
    """n tables (n, *sizes) of the model with total variance 1 and these component shares."""
    k = len(sizes)
    y = np.zeros((n, *sizes))
    for e, s in zip(effects(k), share, strict=True):
        shape = (n, *(sizes[i] if i in e else 1 for i in range(k)))
        y = y + rng.normal(scale=np.sqrt(s), size=shape)
    return y


def simulate(
    sizes: Sequence[int],
    share: Sequence[float],
    *,
    replicates: int,
    draws: int,
    seed: int,
    level: float = LEVEL,
) -> dict[str, Any]:
    """Coverage, clip rate and median interval width of every component, per method."""
    k = len(sizes)
    names = effect_names(FACTORS[:k])
    truth = np.asarray(share)
    rng = np.random.default_rng(seed)
    hits = {m: {"share": np.zeros(len(names)), "sd": np.zeros(len(names))} for m in METHODS}
    widths: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
    clipped = np.zeros(len(names))
    for start in range(0, replicates, CHUNK):
        n = min(CHUNK, replicates - start)
        ss = sums_of_squares(draw_tables(sizes, share, n, rng), k)
        raw = raw_components(mean_squares(ss, sizes), sizes)
        clipped += np.array([(raw[e] < 0).sum() for e in effects(k)])
        for method in METHODS:
            share_ci, sd_ci = intervals(draw_components(ss, sizes, method, draws, rng), level, method)
            for j, e in enumerate(effects(k)):
                lo, hi = share_ci[e][..., 0], share_ci[e][..., 1]
                hits[method]["share"][j] += ((lo <= truth[j]) & (truth[j] <= hi)).sum()
                sd = np.sqrt(truth[j])
                hits[method]["sd"][j] += ((sd_ci[e][..., 0] <= sd) & (sd <= sd_ci[e][..., 1])).sum()
            widths[method].append(np.stack([share_ci[e][..., 1] - share_ci[e][..., 0] for e in effects(k)]))
    return {
        "grid": "x".join(map(str, sizes)),
        "true_share": dict(zip(names, (round(s, 4) for s in share), strict=True)),
        "clip_rate": dict(zip(names, (clipped / replicates).round(4).tolist(), strict=True)),
        **{
            method: {
                "share_coverage": dict(
                    zip(names, (hits[method]["share"] / replicates).round(4).tolist(), strict=True)
                ),
                "sd_coverage": dict(
                    zip(names, (hits[method]["sd"] / replicates).round(4).tolist(), strict=True)
                ),
                "median_share_width": dict(
                    zip(
                        names,
                        np.nanmedian(np.concatenate(widths[method], axis=1), axis=1).round(3).tolist(),
                        strict=True,
                    )
                ),
            }
            for method in METHODS
        },
    }


def run(replicates: int, draws: int, seed: int = 0) -> dict[str, Any]:
    coverage = [
        simulate(sizes, share, replicates=replicates, draws=draws, seed=seed) | {"scenario": name}
        for sizes, scenarios in COVERAGE_GRIDS
        for name, share in scenarios.items()
    ]
    widths = [
        simulate(sizes, TWO_WAY["equal"], replicates=replicates, draws=draws, seed=seed)
        | {"scenario": "equal"}
        for sizes in WIDTH_GRIDS
    ] + [
        simulate(sizes, THREE_WAY["chaos"], replicates=replicates, draws=draws, seed=seed)
        | {"scenario": "chaos"}
        for sizes in WIDTH_GRIDS_3
    ]
    return {"coverage": coverage, "widths": widths, "min_share_coverage": min_coverage(coverage)}


def min_coverage(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The lowest gci share coverage of each kind of component, by factor count ("2", "3")."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        k = str(r["grid"].count("x") + 1)
        for name, cov in r["gci"]["share_coverage"].items():
            low = out.setdefault(k, {})
            low[kind(name)] = min(low.get(kind(name), 1.0), cov)
    return out


def coverage_table(rows: list[dict[str, Any]], level: float = LEVEL) -> str:
    """One line per grid, scenario and component: its coverage per method and its clip rate."""
    lines = [
        "| grid | scenario | component | true share | gci share | gci sd | bootstrap share | bootstrap sd | clipped |"
        "\n|---|---|---|---:|---:|---:|---:|---:|---:|"
    ]
    for r in rows:
        for name, truth in r["true_share"].items():
            g, b = r["gci"], r["bootstrap"]
            lines.append(
                f"| {r['grid']} | {r['scenario']} | {name} | {truth:.2f} | {g['share_coverage'][name]:.3f} "
                f"| {g['sd_coverage'][name]:.3f} | {b['share_coverage'][name]:.3f} "
                f"| {b['sd_coverage'][name]:.3f} | {r['clip_rate'][name]:.1%} |"
            )
    return f"Coverage of the {level:.0%} intervals:\n" + "\n".join(lines)


def width_table(rows: list[dict[str, Any]]) -> str:
    """Median width of each share's gci interval, by grid."""
    lines = ["| grid | scenario | median width of the share's interval (gci) |", "|---|---|---|"]
    for r in rows:
        parts = ", ".join(f"{n} {w:.2f}" for n, w in r["gci"]["median_share_width"].items())
        lines.append(f"| {r['grid']} | {r['scenario']} | {parts} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.variance_calibration", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="100 replicates, 500 draws: smoke, not data")
    parser.add_argument(
        "--replicates", type=int, default=1000, help="simulated tables per grid (default 1000)"
    )
    parser.add_argument(
        "--draws", type=int, default=2000, help="draws per interval (default 2000, the report's)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"results JSON (default {RESULTS}; none with --quick)"
    )
    args = parser.parse_args(argv)
    replicates, draws = (100, 500) if args.quick else (args.replicates, args.draws)
    if not 10 <= replicates <= 100_000 or not 100 <= draws <= 100_000:
        parser.error("--replicates in [10, 100000], --draws in [100, 100000]")
    start = time.perf_counter()
    results = run(replicates, draws)
    meta = {
        "replicates": replicates,
        "draws": draws,
        "level": LEVEL,
        "machine": platform.processor() or platform.machine(),
        "seconds": round(time.perf_counter() - start, 1),
    }
    out = args.out or (None if args.quick else RESULTS)
    if out is not None:
        write_json(out, meta | results)
    print(f"{replicates} replicates, {draws} draws, {meta['seconds']} s\n")
    print(coverage_table(results["coverage"]) + "\n")
    print(width_table(results["widths"]) + "\n")
    print(f"lowest gci share coverage by kind: {results['min_share_coverage']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
