"""Per-variant statistics of an ablation study: median, IQR, bootstrap CI of Δ median, rank test.

Why medians and rank statistics: the seeds of one variant often split into "solved" and
"stuck at chance" (DESIGN.md), so a mean describes no actual run and a t-test assumes a
normality that the sample does not have. The Mann-Whitney U test (Mann & Whitney, 1947)
and the percentile bootstrap (Efron, 1979) assume neither; both come from scipy.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

DIRECTIONS = ("maximize", "minimize")
STAT_KEYS = (
    "n",
    "median",
    "q1",
    "q3",
    "min",
    "max",
    "mean",
    "std",
    "delta_median",
    "ci95",
    "p_value",
    "p_improve",
)
# The order of a variant's entry in summary.json (the schema others read).
VARIANT_KEYS = ("n", "n_diverged", *STAT_KEYS[1:])

Cell = tuple[int, float, bool]  # (seed, metric value, diverged)


def _num(x: Any) -> float | None:
    """A JSON-safe float: NaN/inf/None become None, numpy scalars become Python floats."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _median_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    # Vectorised over bootstrap resamples (scipy passes a batch along `axis`).
    return np.median(x, axis=axis) - np.median(y, axis=axis)


def variant_stats(
    values: Sequence[float],
    baseline: Sequence[float] | None,
    *,
    direction: str = "maximize",
    n_boot: int = 10000,
    seed: int = 0,
) -> dict[str, Any]:
    """Statistics of one variant's per-seed values, and of its difference to the baseline.

    `values` must be finite (summarize() maps a diverged NaN to a worst-case value first:
    silently dropping it would flatter the variant). `baseline=None` means "no comparison"
    (used for the baseline itself): delta_median, ci95, p_value and p_improve are then None.

    - delta_median = median(values) - median(baseline), whatever the direction.
    - ci95: percentile bootstrap of the difference of medians, the two samples resampled
      independently (paired=False: seed k of two variants shares nothing but the seed
      number); None when either side has fewer than 2 values.
    - p_value: two-sided Mann-Whitney U (exact for small samples without ties).
    - p_improve: P(variant better than baseline) + 0.5 P(tie) = U / (n1 n2), the common
      language effect size; "better" is lower for direction "minimize".
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    x = np.asarray(values, dtype=float).reshape(-1)
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite; map diverged NaN values first (see summarize)")
    out: dict[str, Any] = dict.fromkeys(STAT_KEYS)
    out["n"] = int(x.size)
    if x.size:
        q1, median, q3 = np.percentile(x, [25, 50, 75])  # method "linear", numpy's default
        out.update(median=_num(median), q1=_num(q1), q3=_num(q3), min=_num(x.min()), max=_num(x.max()))
        out["mean"] = _num(x.mean())
        out["std"] = _num(x.std(ddof=1)) if x.size >= 2 else None
    if baseline is None:
        return out
    y = np.asarray(baseline, dtype=float).reshape(-1)
    if not np.all(np.isfinite(y)):
        raise ValueError("baseline values must be finite")
    if x.size == 0 or y.size == 0:
        return out
    out["delta_median"] = _num(np.median(x) - np.median(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-tied samples: p is NaN -> None
        res = stats.mannwhitneyu(x, y, alternative="two-sided")
    out["p_value"] = _num(res.pvalue)
    share = float(res.statistic) / (x.size * y.size)  # U of `values`: P(x > y) + 0.5 P(x == y)
    out["p_improve"] = share if direction == "maximize" else 1.0 - share
    if x.size >= 2 and y.size >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate (all equal) resamples are a valid answer here
            boot = stats.bootstrap(
                (x, y),
                _median_diff,
                n_resamples=n_boot,
                paired=False,
                vectorized=True,
                confidence_level=0.95,
                method="percentile",
                rng=np.random.default_rng(seed),
            )
        out["ci95"] = [_num(boot.confidence_interval.low), _num(boot.confidence_interval.high)]
    return out


def _metric(row: dict[str, Any], metric: str) -> float | None:
    value = row.get(metric)
    try:
        return _num(value)
    except (TypeError, ValueError):
        return None


def worst_value(direction: str, observed: Sequence[float] | None = None) -> float | None:
    """The one rule for the metric of a diverged run (NaN/inf or missing): the worst value.

    For statistics (``observed`` given: the study's finite values) it must be finite:
    min(0, observed) for "maximize" (0 is chance-or-worse for accuracy/F1), max(observed) for
    "minimize" (a loss has no natural worst, so it ties with the worst seen; None if nothing
    was observed). For a single trial's objective (no ``observed``; Optuna stores no NaN) it
    is -inf / +inf, which sorts after every finite value.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if observed is None:
        return -math.inf if direction == "maximize" else math.inf
    if direction == "maximize":
        return min([0.0, *observed])
    return max(observed) if observed else None


def objective(metrics: dict[str, float], metric: str, direction: str) -> float:
    """A finished trial's value for Optuna: ``metrics[metric]``, or the worst value if not finite."""
    value = metrics.get(metric, math.nan)
    return value if math.isfinite(value) else worst_value(direction)  # type: ignore[return-value]


def collect(
    rows: Sequence[dict[str, Any]], *, metric: str, direction: str, variants: Sequence[str]
) -> tuple[dict[str, list[Cell]], list[str], dict[str, int]]:
    """Per-variant (seed, value, diverged) of the complete cells, the missing cells, the counts.

    Only complete cells count. A complete cell that diverged keeps its metric value; if that
    value is NaN/inf it becomes ``worst_value`` of the study's observed values. A complete,
    non-diverged cell without the metric is listed as missing, not guessed.
    """
    order = {v: i for i, v in enumerate(variants)}
    mine = sorted(
        (r for r in rows if r.get("variant") in order), key=lambda r: (order[r["variant"]], r["seed"])
    )
    complete = [r for r in mine if r.get("state") == "complete"]
    observed = [v for r in complete if (v := _metric(r, metric)) is not None]
    worst = worst_value(direction, observed)
    cells: dict[str, list[Cell]] = {v: [] for v in variants}
    missing: list[str] = []
    for r in mine:
        name = f"{r['variant']}/s{r['seed']}"
        if r.get("state") != "complete":
            missing.append(f"{name} ({r.get('state', 'missing')})")
            continue
        value, diverged = _metric(r, metric), bool(r.get("diverged"))
        if value is None and diverged:
            value = worst
        if value is None:
            missing.append(f"{name} (complete, no {metric})")
            continue
        cells[r["variant"]].append((int(r["seed"]), value, diverged))
    return cells, missing, {"total": len(mine), "complete": len(complete)}


def summarize(
    rows: Sequence[dict[str, Any]],
    *,
    experiment: str,
    metric: str,
    direction: str,
    baseline: str,
    variants: list[str],
) -> dict[str, Any]:
    """The summary.json document (JSON-safe: no NaN, only None) of one study."""
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not one of the variants {variants}")
    cells, missing, counts = collect(rows, metric=metric, direction=direction, variants=variants)
    base_values = [v for _, v, _ in cells[baseline]]
    out_variants: dict[str, dict[str, Any]] = {}
    for name in variants:
        values = [v for _, v, _ in cells[name]]
        is_base = name == baseline
        st = variant_stats(values, None if is_base else base_values, direction=direction)
        if is_base and st["median"] is not None:
            st["delta_median"] = 0.0  # the baseline against itself; CI/p/P(improve) stay None
        st["n_diverged"] = sum(d for _, _, d in cells[name])
        out_variants[name] = {k: st[k] for k in VARIANT_KEYS}
    return {
        "experiment": experiment,
        "metric": metric,
        "direction": direction,
        "baseline": baseline,
        "cells": {**counts, "missing": missing},
        "variants": out_variants,
    }
