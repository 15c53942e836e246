"""Per-variant statistics of an ablation study: median, IQR, IQM, the primary test and its
interval, Holm.

Why medians and rank statistics: the seeds of one variant often split into "solved" and
"stuck at chance" (docs/pages/explanations/statistics.md), so a mean describes no actual run and a t-test assumes a
normality that the sample does not have. Ties are the rule (accuracy saturates at 1.000 or
sits at 0.500), so every decision comes from an exact distribution-free test whose ties count
against rejection, and its interval is that test inverted (sweeps/stats/inference.py):

- paired (the variant shares every seed with the baseline, and a seed means the same data
  for both): the Wilcoxon signed-rank test on the per-seed differences, their Hodges-Lehmann
  centre and Tukey's interval;
- unpaired: the Mann-Whitney test, the Hodges-Lehmann shift and its interval.

Beside them, descriptive only: the interquartile mean (IQM, Agarwal et al. 2021) with Yuen's
interval (clipped to the metric's range, and flagged), the difference of medians (not the effect
estimate: delta is), the midrank Mann-Whitney p (``p_mwu``), and Holm's
step-down adjustment (Holm, 1979) over the k comparisons with the baseline, which decides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ablate.sweeps.stats import design
from ablate.sweeps.stats.equivalence import adjust as adjust_equivalence
from ablate.sweeps.stats.equivalence import tost
from ablate.sweeps.stats.exact import EXACT_MWU_MAX, holm, mwu_exact
from ablate.sweeps.stats.inference import (
    ALPHA,
    EXACT_MWU_CELLS,
    EXACT_WILCOXON_N,
    TEST_MWU,
    TEST_WILCOXON,
    mann_whitney,
    seeds_to_reject,
    signed_rank,
    trimmed_mean_ci,
)
from ablate.sweeps.stats.rows import DIFFERENCE_KEYS, INTERVAL_KEYS, VARIANT_KEYS, CellRow

DIRECTIONS = ("maximize", "minimize")
# What variant_stats returns: summary.json's keys of a variant (stats/rows.py) but n_diverged.
STAT_KEYS = tuple(k for k in VARIANT_KEYS if k != "n_diverged")

IQM_TRIM = 0.25
# data.* keys that do not change which examples a run sees, nor in which order: a variant that
# overrides any other data.* key (data.seed, the task, the sizes, the batch size, ...) has seeds
# that no longer index the same data as the baseline's, so it is compared unpaired.
SEED_NEUTRAL_DATA_KEYS = frozenset({"data.num_workers", "data.cache_dir"})


def data_changing_keys(overrides: dict[str, Any] | None) -> list[str]:
    """The data.* keys of ``overrides`` that change which examples a seed's run sees (sorted):
    a variant with any is compared unpaired."""
    return sorted(k for k in overrides or {} if k.startswith("data.") and k not in SEED_NEUTRAL_DATA_KEYS)


Cell = tuple[int, float, bool]  # (seed, metric value, diverged)


def _num(x: Any) -> float | None:
    """A JSON-safe float: NaN/inf/None become None, numpy scalars become Python floats."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def iqm(values: Sequence[float]) -> float | None:
    """Interquartile mean: the mean after dropping floor(n/4) values at each end.

    ``scipy.stats.trim_mean(x, 0.25)``, as rliable: for n < 4 nothing is trimmed (the mean),
    for n = 5 it is the mean of the middle 3, for n = 8 of the middle 4.
    """
    from scipy import stats  # imported where used (a finished sweep's rerun needs none)

    x = np.asarray(values, dtype=float).reshape(-1)
    return _num(stats.trim_mean(x, IQM_TRIM)) if x.size else None


# ---- one variant --------------------------------------------------------------------------------


def variant_stats(
    values: Sequence[float],
    baseline: Sequence[float] | None,
    *,
    direction: str = "maximize",
    paired: bool = False,
    paired_with: Sequence[float] | None = None,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Statistics of one variant's per-seed values, and of its difference to the baseline.

    `values` must be finite (summarize() maps a diverged NaN to a worst-case value first:
    silently dropping it would flatter the variant). `baseline=None` means "no comparison"
    (used for the baseline itself): every comparison field is then None. `paired=True` means
    values[i] and baseline[i] come from the same seed (same length, same order); with
    ``paired_with`` the paired part uses those baseline values instead (one per value, same
    seed), while the unpaired statistics use every baseline value.

    - iqm, iqm_ci: interquartile mean (trim_mean 0.25) and Yuen's 1 - alpha interval.
    - delta, ci, ci_confidence, p_value, test: the primary test of the design
      (inference.signed_rank when paired, inference.mann_whitney otherwise): its
      Hodges-Lehmann estimate (of the per-seed differences' centre, or of the shift), the interval that
      inverts it with its achieved confidence (None when the seeds cannot reach 1 - alpha),
      and its p. The interval excludes 0 exactly when p <= alpha. delta is the effect
      estimate, the one the verdict states and decides by. n_pairs: the pairs it ran on.
    - delta_median = median(values) - median(baseline) and p_mwu (exact Mann-Whitney with
      midranks): descriptive, whatever the design; not the effect estimate.
    - p_improve: P(variant better than baseline) + 0.5 P(tie): over the seeds' differences
      when paired, over all pairs of values (U / (n1 n2)) otherwise; "better" is lower for
      direction "minimize".
    - p_holm, min_seeds, pairing, p_seq and clipped are set by summarize() (they depend on the
      other variants, the seeds, the schedule and the metric).
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
        out["iqm_ci"] = _pair(trimmed_mean_ci(x, trim=IQM_TRIM, alpha=alpha))
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
    out["p_mwu"] = mwu_exact(x, y)[0]
    if paired:
        diff = x - pair
        diff = diff[np.isfinite(diff)]
        out["n_pairs"] = int(diff.size)
    else:
        diff = (x[:, None] - y[None, :]).reshape(-1)
    share = float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))
    out["p_improve"] = share if direction == "maximize" else 1.0 - share
    primary = signed_rank(diff, alpha=alpha) if paired else mann_whitney(x, y, alpha=alpha)
    out.update(
        delta=_num(primary.estimate),
        ci=_pair(primary.ci),
        ci_confidence=primary.confidence,
        p_value=primary.p,
        test=primary.test,
    )
    return out


def _pair(ci: tuple[float, float] | None) -> list[float | None] | None:
    return None if ci is None else [_num(ci[0]), _num(ci[1])]


def metric_range(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take: [0, 1] for a proportion (design.bounded: acc, f1), [0, inf)
    for a loss, else unbounded."""
    if design.bounded(metric):
        return 0.0, 1.0
    if metric.rpartition("/")[2] == "loss":
        return 0.0, math.inf
    return -math.inf, math.inf


def interval_range(key: str, metric: str) -> tuple[float, float]:
    """The range of interval ``key`` (rows.INTERVAL_KEYS) of ``metric``: the metric's own, or for a
    difference of two of its values (rows.DIFFERENCE_KEYS) [low - high, high - low]."""
    low, high = metric_range(metric)
    return (low - high, high - low) if key in DIFFERENCE_KEYS else (low, high)


def clip_intervals(entry: dict[str, Any], metric: str) -> None:
    """Set each interval of ``entry`` (INTERVAL_KEYS) inside its ``interval_range``, in place, and
    list in ``entry["clipped"]`` the keys whose computed bound lay outside it (Yuen's interval of
    an accuracy near 1 can reach above 1): a clipped bound is the range's end, not a computed one.
    The test-inverted ``ci`` is made of observed differences, so it never needs it."""
    entry["clipped"] = []
    for key in INTERVAL_KEYS:
        if entry.get(key) is None:
            continue
        low, high = interval_range(key, metric)
        bounds = [None if b is None else min(max(b, low), high) for b in entry[key]]
        if bounds != entry[key]:
            entry[key] = bounds
            entry["clipped"].append(key)


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
    """(paired?, why) for comparing variant ``name`` with ``base_name`` (the baseline, or the
    second variant of a between-variant comparison).

    Paired when the variant overrides no data.* key that changes which examples a seed's run
    sees or in which order (any data key but SEED_NEUTRAL_DATA_KEYS; for two variants, any such
    key where they differ) and the two share a seed: then seed k of both shares the
    data set, the data order and every other seed-derived stream the variant does not change,
    and the per-seed difference is the unit. The test runs on the shared seeds; a seed only one
    side has (a cell still running or failed, adaptive seeds that grew the baseline) enters the
    descriptive statistics only, and the reason names it. Otherwise unpaired, and the reason
    says why.
    """
    mine, base = {s for s, _, _ in cells}, {s for s, _, _ in base_cells}
    if not mine or not base:
        return False, "no comparison: no complete cell on one side"
    data_keys = data_changing_keys(overrides)
    if data_keys:
        return False, (
            f"unpaired: {name} overrides {', '.join(data_keys)}, so a seed does not index the same data"
        )
    shared = mine & base
    if not shared:
        return False, f"unpaired: {name} and {base_name} share no seed"
    why = f"paired on seeds {seeds_text(shared)}"
    alone = [
        f"{who}'s seed(s) {seeds_text(s)}" for who, s in ((name, mine - base), (base_name, base - mine)) if s
    ]
    if alone:
        why += f" ({' and '.join(alone)} enter the descriptive statistics only)"
    return True, why


PAIRED_TEST = {
    "name": TEST_WILCOXON,
    "estimate": "Hodges-Lehmann: median of the Walsh averages (d_i + d_j) / 2, i <= j, of d = variant - baseline",
    "p": "2 min(P(T <= #{A <= 0}), P(T <= #{A >= 0})), T the signed-rank statistic without ties, "
    f"capped at 1; exact up to {EXACT_WILCOXON_N} pairs, normal with continuity correction above",
    "ci": "[A_(k), A_(M+1-k)] of the M = n(n+1)/2 sorted Walsh averages, k the largest with 2 P(T <= k - 1) <= alpha",
}
UNPAIRED_TEST = {
    "name": TEST_MWU,
    "estimate": "Hodges-Lehmann shift: median of all n1 n2 differences x_i - y_j",
    "p": "as the signed-rank test, with the n1 n2 differences for the Walsh averages and U for T; exact up to "
    f"n1 n2 = {EXACT_MWU_CELLS}, normal with continuity correction above",
    "ci": "[D_(k), D_(n1 n2 + 1 - k)] of the sorted pairwise differences",
}
EFFECT = (
    "delta is the effect estimate, the one the verdict uses: the primary test's Hodges-Lehmann "
    "estimate, whose sign makes a decided comparison (p_holm <= alpha) better or worse, and which "
    "ci brackets. delta_median, the difference of medians, is descriptive: with few seeds it can "
    "differ from delta (0 beside a nonzero delta when the medians tie)"
)


def clipped_text(metric: str | None) -> str:
    """methods' ``clipped``: what a variant's ``clipped`` lists, and the metric's range."""
    low, high = metric_range(metric or "")
    keys = f"per variant: the interval keys ({', '.join(INTERVAL_KEYS)})"
    if (low, high) == (-math.inf, math.inf):
        return f"{keys} set to the metric's range; this metric has no fixed range, so none is"
    return (
        f"{keys} with a computed bound outside the metric's range [{low:g}, {high:g}] (of a "
        f"difference, ci: [{low - high:g}, {high - low:g}]), set to the range's end: that bound is "
        "the end, not a computed one"
    )


def methods(
    seeds: Sequence[int], k: int, alpha: float = ALPHA, looks: int = 1, metric: str | None = None
) -> dict[str, Any]:
    """The summary's "methods": what every number was computed with (``metric``: its range)."""
    level = alpha / looks  # the intervals' alpha
    return {
        "seeds": list(seeds),
        "alpha": alpha,
        "looks": looks,
        "p_value": (
            "the primary test of the design, named per variant in 'test': the Wilcoxon signed-rank "
            "test on the per-seed differences when the variant is paired with the baseline, "
            "Mann-Whitney otherwise; ties count against rejection"
        ),
        "effect": EFFECT,
        "paired_test": PAIRED_TEST,
        "unpaired_test": UNPAIRED_TEST,
        "ci": (
            f"the inversion of the primary test: it excludes 0 exactly when p <= {level:g}; "
            f"ci_confidence is its achieved confidence (>= {1 - level:g}); None when the seeds cannot "
            f"reach {1 - level:g} (a paired comparison needs {seeds_to_reject(True, level)} pairs, an "
            f"unpaired one {seeds_to_reject(False, level)} seeds per side)"
        ),
        "clipped": clipped_text(metric),
        "pairing": (
            "per variant: paired when the variant and the baseline have a complete value for the same "
            "seeds and the variant overrides no data key that changes a seed's data "
            f"(all data.* keys but {', '.join(sorted(SEED_NEUTRAL_DATA_KEYS))}); else unpaired"
        ),
        "iqm": "scipy.stats.trim_mean(x, 0.25): floor(n/4) values dropped at each end (none for n < 4)",
        "iqm_ci": (
            "Yuen's interval for the trimmed mean at nominal 1 - alpha (winsorized standard error, t with "
            "h - 1 df), clipped to the metric's range (see clipped); descriptive, not printed in the "
            "reports: it covered 92-95 % on normal, skewed and ceiling data and far less on bimodal data "
            "(python -m ablate.benchmarks.stats_calibration)"
        ),
        "descriptive": {
            "delta_median": "median(variant) - median(baseline); not the effect estimate (see effect)",
            "p_mwu": f"exact Mann-Whitney U with midranks (up to {EXACT_MWU_MAX} pooled values); not a decision",
        },
        "multiple_comparisons": {
            "method": "holm",
            "adjusts": "p_seq (adaptive seeds) else p_value",
            "family": "the variants' comparisons with the baseline and the spec's compare: pairs, per metric",
            "k": k,
            "decides": "p_holm <= alpha",
        },
        "sequential": (
            f"p_seq = min(1, {looks} p): Bonferroni over the {looks} looks of the adaptive schedule; "
            f"intervals at 1 - alpha / {looks}"
            if looks > 1
            else None
        ),
        "min_seeds": "the fewest seeds per variant at which p_holm can reach alpha (p <= alpha / (k looks))",
        "p_improve": (
            "P(variant better) + 0.5 P(tie): over the per-seed differences when paired, "
            "over all pairs of values (U / (n1 n2)) otherwise"
        ),
        "diverged": "included with the metric reached; a non-finite metric counts as the worst value",
        "equivalence": (
            "with a margin m: the two one-sided tests by interval inclusion, equivalent within ±m when the "
            "primary test's exact interval at 1 - 2 alpha (1 - 2 alpha / looks) lies inside (-m, +m); p = the "
            "larger one-sided p (times the looks); Holm over the comparisons with a margin "
            "(sweeps/stats/equivalence.py)"
        ),
        "design": design.RULES,
    }


def variance_components(
    cells: Sequence[Cell], n_init: int, n_order: int, n_numerics: int = 1
) -> dict[str, Any]:
    """Split one variant's seed variance into init, data order[, numerics, their interactions]
    and residual, each with its share's and sd's interval (sweeps/stats/variance.py).

    Seed s ran with init seed s // (n_order x n_numerics), numerics level (s // n_order) %
    n_numerics and data-order seed s % n_order (seed_factors; without numerics: s // n_order and
    s % n_order), so the values form an n_init x n_order (x n_numerics) table with one run per
    cell. ``var``, ``share`` and ``sd_total`` are the random-effects ANOVA estimates with negative
    components set to 0 (Dodge et al. 2020 and Bouthillier et al. 2021 split seed variance the
    same way); ``ci``, ``clipped`` and ``method`` say how sure they are.
    """
    from ablate.sweeps.stats.variance import FACTORS, decompose, grid_table

    sizes = (n_init, n_order, n_numerics) if n_numerics > 1 else (n_init, n_order)
    y = grid_table(cells, sizes)
    return {"complete": False} if y is None else decompose(y, FACTORS[: len(sizes)])


def adjust(
    variants: dict[str, dict[str, Any]], baseline: str, *, alpha: float = ALPHA, looks: int = 1
) -> int:
    """What depends on the family of comparisons, set in place on each non-baseline entry:
    p_seq = min(1, looks p) under adaptive seeds, p_holm (Holm over p_seq, else p_value) and
    min_seeds (the fewest seeds at which p_holm can reach alpha). Returns k, the comparisons."""
    others = [n for n in variants if n != baseline]
    if looks > 1:
        for name in others:
            if (p := variants[name]["p_value"]) is not None:
                variants[name]["p_seq"] = min(1.0, looks * p)
    deciding = "p_seq" if looks > 1 else "p_value"
    for name, p in zip(others, holm([variants[n].get(deciding) for n in others]), strict=True):
        variants[name]["p_holm"] = p
    k = sum(variants[n]["p_value"] is not None for n in others)
    for name in others:
        if variants[name]["test"] is not None:
            paired = bool(variants[name]["paired"])
            variants[name]["min_seeds"] = seeds_to_reject(paired, alpha / (max(k, 1) * looks))
    return k


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
    alpha: float = ALPHA,
    looks: int = 1,
    compare: Sequence[tuple[str, str]] = (),
    margins: Mapping[str, float] | None = None,
    chance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary.json document (JSON-safe: no NaN, only None) of one study.

    ``seeds``: the study's seed list (methods.seeds; default: the seeds of the rows);
    ``overrides``: each variant's dotted overrides (spec.variants), used to decide pairing;
    ``looks``: the looks an adaptive schedule allows (sweeps/drivers/adaptive.py). With L > 1 looks
    each comparison's p is adjusted to p_seq = min(1, L p) (Bonferroni over the looks: valid
    whichever look stopped it), Holm runs over p_seq, and the interval is the test's at level
    1 - alpha / L, so it excludes 0 exactly when p_seq <= alpha. ``compare``: pairs (a, b) of
    variants compared with each other as well ("a vs b", Δ = a − b), in the same Holm family as
    the comparisons with the baseline; ``margins``: comparison name -> equivalence margin
    (sweeps/stats/equivalence.py); ``chance``: the evaluated split's majority-class rate for the
    design check (sweeps/stats/design.py ``chance_of``).
    """
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not one of the variants {variants}")
    cells, missing, counts = collect(rows, metric=metric, direction=direction, variants=variants)
    ov = overrides or {}
    out_variants: dict[str, dict[str, Any]] = {}
    for name in variants:
        if name == baseline:
            st = variant_stats([v for _, v, _ in cells[name]], None, direction=direction, alpha=alpha)
            if st["median"] is not None:
                st["delta"] = st["delta_median"] = 0.0  # against itself; CI/p/P(improve) stay None
        else:
            st = compared(name, baseline, cells, ov.get(name), direction, alpha / looks)
        st["n_diverged"] = sum(d for _, _, d in cells[name])
        out_variants[name] = {k: st[k] for k in VARIANT_KEYS}
    between = {
        f"{a} vs {b}": compared(a, b, cells, differing(ov.get(a), ov.get(b)), direction, alpha / looks)
        for a, b in compare
    }
    k = adjust({**out_variants, **between}, baseline, alpha=alpha, looks=looks)
    if seeds is None:
        seeds = sorted({int(r.seed) for r in rows if r.variant in variants})
    sides = {n: (n, baseline) for n in variants if n != baseline} | {
        f"{a} vs {b}": (a, b) for a, b in compare
    }
    entries = {**out_variants, **between}
    for entry in entries.values():
        clip_intervals(entry, metric)
    out = {
        "experiment": experiment,
        "metric": metric,
        "direction": direction,
        "baseline": baseline,
        "cells": {**counts, "missing": missing},
        "variants": out_variants,
    }
    if between:
        out["comparisons"] = between
    if margins:
        out["equivalence"] = equivalences(cells, sides, entries, margins, alpha, looks)
    out["design"] = design.check(
        cells, {n: (a, b, bool(entries[n]["paired"])) for n, (a, b) in sides.items()}, metric, chance
    )
    out["methods"] = methods(seeds, k, alpha, looks, metric)
    return out


def differing(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """The overrides in which two variants differ (what pairing looks at for "a vs b")."""
    a, b = a or {}, b or {}
    return {k: b.get(k, a.get(k)) for k in {*a, *b} if a.get(k) != b.get(k)}


def compared(
    name: str,
    ref: str,
    cells: Mapping[str, Sequence[Cell]],
    overrides: dict[str, Any] | None,
    direction: str,
    alpha: float,
) -> dict[str, Any]:
    """``variant_stats`` of variant ``name`` measured against ``ref``, paired as ``pairing`` says,
    with the pairing's reason."""
    paired, why = pairing(name, cells[name], ref, cells[ref], overrides)
    ref_by_seed = {s: v for s, v, _ in cells[ref]}
    values = [v for _, v, _ in cells[name]]  # sorted by seed (collect)
    pairs = [ref_by_seed.get(s, math.nan) for s, _, _ in cells[name]] if paired else None
    st = variant_stats(
        values, list(ref_by_seed.values()), direction=direction, paired=paired, paired_with=pairs, alpha=alpha
    )
    st["pairing"] = why
    return st


def equivalences(
    cells: Mapping[str, Sequence[Cell]],
    sides: Mapping[str, tuple[str, str]],
    entries: Mapping[str, dict[str, Any]],
    margins: Mapping[str, float],
    alpha: float,
    looks: int,
) -> dict[str, dict[str, Any]]:
    """summary.json's ``equivalence``: the two one-sided tests of each comparison with a margin
    (paired on the shared seeds when the comparison is paired), Holm over them."""
    out = {}
    for name, (a, b) in sides.items():
        if margins.get(name) is None or entries[name]["test"] is None:
            continue
        ref = {s: v for s, v, _ in cells[b]}
        if entries[name]["paired"]:
            diffs = [v - ref[s] for s, v, _ in cells[a] if s in ref]
            test = tost(diffs, None, margins[name], alpha=alpha / looks)
        else:
            test = tost([v for _, v, _ in cells[a]], list(ref.values()), margins[name], alpha=alpha / looks)
        if looks > 1 and test["p"] is not None:  # Bonferroni over the looks, as p_seq
            test["p"] = min(1.0, looks * test["p"])
        out[name] = test
    adjust_equivalence(out, alpha)
    return out
