"""Per-variant statistics of an ablation study: median, IQR, IQM, exact permutation tests, Holm.

Why medians and rank statistics: the seeds of one variant often split into "solved" and
"stuck at chance" (docs/pages/explanations/statistics.md), so a mean describes no actual run and a t-test assumes a
normality that the sample does not have. Ties are the rule (accuracy saturates at 1.000 or
sits at 0.500), so every p-value here comes from an exact permutation distribution that
counts ties correctly, not from a normal approximation:

- unpaired: the Mann-Whitney U test (Mann & Whitney, 1947) with midranks, its null
  distribution enumerated over all C(n1 + n2, n1) splits of the pooled values;
- paired (the variant shares every seed with the baseline, and a seed means the same data
  for both): the sign-flip permutation test on the per-seed differences, enumerated over
  all 2^n sign vectors.

Beside them: percentile bootstrap CIs (Efron, 1979), the interquartile mean (IQM, Agarwal et
al. 2021) and Holm's step-down adjustment (Holm, 1979) over the k comparisons with the baseline.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ablate.sweeps.stats.exact import (
    BOOT_SEED,
    EXACT_MWU_MAX,
    EXACT_PAIRED_MAX,
    MC_RESAMPLES,
    TEST_MWU,
    TEST_MWU_MC,
    TEST_PAIRED,
    TEST_PAIRED_MC,
    holm,
    mwu_exact,
    sign_flip,
)
from ablate.sweeps.stats.rows import VARIANT_KEYS, CellRow

DIRECTIONS = ("maximize", "minimize")
# What variant_stats returns: summary.json's keys of a variant (stats/rows.py) but n_diverged.
STAT_KEYS = tuple(k for k in VARIANT_KEYS if k != "n_diverged")

N_BOOT = 10_000
IQM_TRIM = 0.25
# data.* keys that do not change which examples a run sees, nor in which order: a variant that
# overrides any other data.* key (data.seed, the task, the sizes, the batch size, ...) has seeds
# that no longer index the same data as the baseline's, so it is compared unpaired.
SEED_NEUTRAL_DATA_KEYS = frozenset({"data.num_workers", "data.cache_dir"})

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


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.trim_mean(x, IQM_TRIM, axis=axis)


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def _bootstrap(
    data: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], n_boot: int, seed: int
) -> list[float | None]:
    """Percentile bootstrap 95 % CI; samples resampled independently, seeded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate (all equal) resamples are a valid answer here
        boot = stats.bootstrap(
            data,
            statistic,
            n_resamples=n_boot,
            paired=False,
            vectorized=True,
            confidence_level=0.95,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    return [_num(boot.confidence_interval.low), _num(boot.confidence_interval.high)]


def iqm(values: Sequence[float]) -> float | None:
    """Interquartile mean: the mean after dropping floor(n/4) values at each end.

    ``scipy.stats.trim_mean(x, 0.25)``, as rliable: for n < 4 nothing is trimmed (the mean),
    for n = 5 it is the mean of the middle 3, for n = 8 of the middle 4.
    """
    x = np.asarray(values, dtype=float).reshape(-1)
    return _num(_iqm(x)) if x.size else None


# ---- one variant --------------------------------------------------------------------------------


def variant_stats(
    values: Sequence[float],
    baseline: Sequence[float] | None,
    *,
    direction: str = "maximize",
    n_boot: int = N_BOOT,
    seed: int = BOOT_SEED,
    paired: bool = False,
    paired_with: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Statistics of one variant's per-seed values, and of its difference to the baseline.

    `values` must be finite (summarize() maps a diverged NaN to a worst-case value first:
    silently dropping it would flatter the variant). `baseline=None` means "no comparison"
    (used for the baseline itself): every comparison field is then None. `paired=True` means
    values[i] and baseline[i] come from the same seed (same length, same order); with
    ``paired_with`` the paired part uses those baseline values instead (one per value, same
    seed), while the unpaired statistics use every baseline value.

    - iqm, iqm_ci95: interquartile mean (trim_mean 0.25) and its percentile bootstrap CI.
    - delta_median = median(values) - median(baseline), whatever the direction; ci95: its
      percentile bootstrap, the two samples resampled independently.
    - p_mwu: exact two-sided Mann-Whitney U (ties by midranks), always computed.
    - paired only: delta_paired_median = median of the per-seed differences, ci95_paired its
      bootstrap over seeds, p_paired the exact sign-flip test.
    - p_value: the test of the design, named in `test`: p_paired when paired, else p_mwu.
    - p_improve: P(variant better than baseline) + 0.5 P(tie) = U / (n1 n2), the common
      language effect size; "better" is lower for direction "minimize".
    - p_holm and pairing are set by summarize() (they depend on the other variants / seeds).
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
        out["iqm"] = iqm(x)
        if x.size >= 2:
            out["iqm_ci95"] = _bootstrap((x,), _iqm, n_boot, seed)
    if baseline is None:
        return out
    y = np.asarray(baseline, dtype=float).reshape(-1)
    if not np.all(np.isfinite(y)):
        raise ValueError("baseline values must be finite")
    pair = np.asarray(baseline if paired_with is None else paired_with, dtype=float).reshape(-1)
    if paired and x.size != pair.size:
        raise ValueError(f"paired samples need the same length, got {x.size} and {pair.size}")
    out["paired"] = bool(paired and x.size > 0)
    if x.size == 0 or y.size == 0:
        return out
    out["delta_median"] = _num(np.median(x) - np.median(y))
    out["p_mwu"], mwu_test = mwu_exact(x, y, seed=seed)
    diff = x[:, None] - y[None, :]
    share = float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))  # U of x / (n1 n2)
    out["p_improve"] = share if direction == "maximize" else 1.0 - share
    if x.size >= 2 and y.size >= 2:
        out["ci95"] = _bootstrap((x, y), _median_diff, n_boot, seed)
    if paired:
        d = x - pair
        out["delta_paired_median"] = _num(np.median(d))
        out["p_paired"], out["test"] = sign_flip(d, seed=seed)
        out["p_value"] = out["p_paired"]
        if d.size >= 2:
            out["ci95_paired"] = _bootstrap((d,), _median, n_boot, seed)
    else:
        out["p_value"], out["test"] = out["p_mwu"], mwu_test
    return out


# ---- a study ----------------------------------------------------------------------------------


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
    rows: Sequence[CellRow], *, metric: str, direction: str, variants: Sequence[str]
) -> tuple[dict[str, list[Cell]], list[str], dict[str, int]]:
    """Per-variant (seed, value, diverged) of the complete cells, the missing cells, the counts.

    Only complete cells count. A complete cell that diverged keeps its metric value; if that
    value is NaN/inf it becomes ``worst_value`` of the study's observed values. A complete,
    non-diverged cell without the metric is listed as missing, not guessed.
    """
    order = {v: i for i, v in enumerate(variants)}
    mine = sorted((r for r in rows if r.variant in order), key=lambda r: (order[r.variant], r.seed))
    complete = [r for r in mine if r.state == "complete"]
    observed = [v for r in complete if (v := r.metric(metric)) is not None]
    worst = worst_value(direction, observed)
    cells: dict[str, list[Cell]] = {v: [] for v in variants}
    missing: list[str] = []
    for r in mine:
        if r.state != "complete":
            missing.append(f"{r.name} ({r.state})")
            continue
        value, diverged = r.metric(metric), bool(r.diverged)
        if value is None and diverged:
            value = worst
        if value is None:
            missing.append(f"{r.name} (complete, no {metric})")
            continue
        cells[r.variant].append((int(r.seed), value, diverged))
    return cells, missing, {"total": len(mine), "complete": len(complete)}


def seeds_text(seeds: Sequence[int]) -> str:
    """``0–4`` for a run of consecutive seeds, else ``0, 2, 5``."""
    s = sorted(seeds)
    if len(s) >= 3 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}–{s[-1]}"
    return ", ".join(map(str, s)) or "none"


def pairing(
    name: str,
    cells: Sequence[Cell],
    base_name: str,
    base_cells: Sequence[Cell],
    overrides: dict[str, Any] | None = None,
) -> tuple[bool, str]:
    """(paired?, why) for comparing variant ``name`` with the baseline.

    Paired when the baseline has a complete value for every seed the variant has (it may have
    more: adaptive seeds grow the baseline with the undecided variants, and a variant's failed
    cell leaves its other pairs intact), and the variant overrides no data.* key that changes
    which examples a seed's run sees or in which order (any data key but
    SEED_NEUTRAL_DATA_KEYS): then seed k of both shares the data set, the data order and every
    other seed-derived stream the variant does not change, and the per-seed difference is the
    unit. Otherwise unpaired, and the reason says why.
    """
    mine, base = {s for s, _, _ in cells}, {s for s, _, _ in base_cells}
    if not mine or not base:
        return False, "no comparison: no complete cell on one side"
    data_keys = sorted(
        k for k in overrides or {} if k.startswith("data.") and k not in SEED_NEUTRAL_DATA_KEYS
    )
    if data_keys:
        return False, (
            f"unpaired: {name} overrides {', '.join(data_keys)}, so a seed does not index the same data"
        )
    if mine - base:
        return False, f"unpaired: {base_name} lacks seed(s) {seeds_text(mine - base)} of {name}"
    why = f"paired on seeds {seeds_text(mine)}"
    if base - mine:
        why += f" ({base_name}'s seed(s) {seeds_text(base - mine)} enter the unpaired test only)"
    return True, why


def methods(seeds: Sequence[int], k: int, n_boot: int = N_BOOT) -> dict[str, Any]:
    """The summary's "methods": what every number was computed with."""
    return {
        "seeds": list(seeds),
        "p_value": (
            "the exact two-sided permutation test of the design (named per variant in 'test'): "
            "paired sign-flip on per-seed differences when the variant is paired with the baseline, "
            "Mann-Whitney U otherwise; p_mwu (unpaired) is always reported too"
        ),
        "paired_test": {
            "name": TEST_PAIRED,
            "statistic": "sum of per-seed differences (variant - baseline); zeros contribute nothing",
            "exact_up_to_n": EXACT_PAIRED_MAX,
            "monte_carlo": {"name": TEST_PAIRED_MC, "resamples": MC_RESAMPLES, "rng_seed": BOOT_SEED},
        },
        "unpaired_test": {
            "name": TEST_MWU,
            "statistic": "Mann-Whitney U with midranks for ties; P(|U - n1 n2/2| >= |U_obs - n1 n2/2|)",
            "exact_up_to_n1_plus_n2": EXACT_MWU_MAX,
            "monte_carlo": {"name": TEST_MWU_MC, "resamples": MC_RESAMPLES, "rng_seed": BOOT_SEED},
        },
        "pairing": (
            "per variant: paired when the variant and the baseline have a complete value for the same "
            "seeds and the variant overrides no data key that changes a seed's data "
            f"(all data.* keys but {', '.join(sorted(SEED_NEUTRAL_DATA_KEYS))}); else unpaired"
        ),
        "ci": {
            "method": "percentile bootstrap (scipy.stats.bootstrap)",
            "confidence": 0.95,
            "resamples": n_boot,
            "rng_seed": BOOT_SEED,
            "ci95": "difference of medians, the two samples resampled independently",
            "ci95_paired": "median of per-seed differences, seeds resampled",
            "iqm_ci95": "interquartile mean, seeds resampled",
        },
        "iqm": "scipy.stats.trim_mean(x, 0.25): floor(n/4) values dropped at each end (none for n < 4)",
        "multiple_comparisons": {
            "method": "holm",
            "adjusts": "p_value",
            "family": "the variants' comparisons with the baseline, per metric",
            "k": k,
        },
        "p_improve": "U / (n1 n2) = P(variant better) + 0.5 P(tie), from the unpaired values",
        "diverged": "included with the metric reached; a non-finite metric counts as the worst value",
    }


def variance_components(cells: Sequence[Cell], n_init: int, n_order: int) -> dict[str, Any]:
    """Split one variant's seed variance into init, data order and residual.

    Seed s ran with init seed s // n_order and data-order seed s % n_order (seed_factors), so the
    values form an n_init x n_order table with one run per cell. The two-way random-effects
    model without replication, y_ij = mu + a_i + b_j + e_ij, gives from the ANOVA mean squares
    var(init) = (MS_init - MS_res) / n_order, var(order) = (MS_order - MS_res) / n_init,
    var(residual) = MS_res (dropout, numerics and the init x order interaction, which one run
    per cell cannot separate); negative estimates are set to 0 (Dodge et al. 2020 and
    Bouthillier et al. 2021 split seed variance the same way).
    """
    y = np.full((n_init, n_order), np.nan)
    for seed, value, _ in cells:
        if seed < n_init * n_order:
            y[seed // n_order, seed % n_order] = value
    if np.isnan(y).any():
        return {"complete": False}
    grand = y.mean()
    rows, cols = y.mean(axis=1), y.mean(axis=0)
    ms_init = n_order * ((rows - grand) ** 2).sum() / (n_init - 1)
    ms_order = n_init * ((cols - grand) ** 2).sum() / (n_order - 1)
    resid = y - rows[:, None] - cols[None, :] + grand
    ms_res = (resid**2).sum() / ((n_init - 1) * (n_order - 1))
    parts = {
        "init": max(0.0, (ms_init - ms_res) / n_order),
        "data_order": max(0.0, (ms_order - ms_res) / n_init),
        "residual": float(ms_res),
    }
    total = sum(parts.values())
    return {
        "complete": True,
        "var": {k: float(v) for k, v in parts.items()},
        "share": {k: (float(v / total) if total > 0 else None) for k, v in parts.items()},
        "sd_total": float(np.sqrt(total)),
    }


def summarize(
    rows: Sequence[CellRow],
    *,
    experiment: str,
    metric: str,
    direction: str,
    baseline: str,
    variants: list[str],
    seeds: Sequence[int] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    n_boot: int = N_BOOT,
) -> dict[str, Any]:
    """The summary.json document (JSON-safe: no NaN, only None) of one study.

    ``seeds``: the study's seed list (methods.seeds; default: the seeds of the rows);
    ``overrides``: each variant's dotted overrides (spec.variants), used to decide pairing.
    """
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not one of the variants {variants}")
    cells, missing, counts = collect(rows, metric=metric, direction=direction, variants=variants)
    base_by_seed = {s: v for s, v, _ in cells[baseline]}
    out_variants: dict[str, dict[str, Any]] = {}
    for name in variants:
        is_base = name == baseline
        if is_base:
            st = variant_stats([v for _, v, _ in cells[name]], None, direction=direction, n_boot=n_boot)
            if st["median"] is not None:
                st["delta_median"] = 0.0  # the baseline against itself; CI/p/P(improve) stay None
        else:
            paired, why = pairing(name, cells[name], baseline, cells[baseline], (overrides or {}).get(name))
            values = [v for _, v, _ in cells[name]]  # sorted by seed (collect)
            pairs = [base_by_seed[s] for s, _, _ in cells[name]] if paired else None
            st = variant_stats(
                values,
                list(base_by_seed.values()),
                direction=direction,
                n_boot=n_boot,
                paired=paired,
                paired_with=pairs,
            )
            st["pairing"] = why
        st["n_diverged"] = sum(d for _, _, d in cells[name])
        out_variants[name] = {k: st[k] for k in VARIANT_KEYS}
    others = [n for n in variants if n != baseline]
    for name, p in zip(others, holm([out_variants[n]["p_value"] for n in others]), strict=True):
        out_variants[name]["p_holm"] = p
    k = sum(out_variants[n]["p_value"] is not None for n in others)
    if seeds is None:
        seeds = sorted({int(r.seed) for r in rows if r.variant in variants})
    return {
        "experiment": experiment,
        "metric": metric,
        "direction": direction,
        "baseline": baseline,
        "cells": {**counts, "missing": missing},
        "variants": out_variants,
        "methods": methods(seeds, k, n_boot),
    }
