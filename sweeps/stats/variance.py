"""Where a variant's seed variance comes from: crossed seed factors, one run per cell.

``seed_factors: {init: a, data_order: b[, numerics: c]}`` crosses 2 or 3 factors with one run
per cell, so the values of a variant form an a x b (x c) table. The random-effects model

    y = mu + sum over effects T of u_T,   u_T ~ N(0, var_T) independent,

has one effect per proper subset of the factors (each main effect and, with 3 factors, each
two-way interaction); the full interaction cannot be told apart from noise with one run per
cell, so it is the residual: with 2 factors init x data_order is pooled into the residual, with 3
factors the three two-way interactions are components of their own and init x data_order x
numerics is pooled into the residual. In a balanced design the mean squares are independent,
MS_T ~ theta_T chi2(df_T) / df_T, with the expected mean squares
theta_T = sum over T' >= T of (N / cells of T') var_T' (Searle, Casella & McCulloch 1992,
ch. 4), so var_T is a signed sum of mean squares (Moebius inversion), set to 0 when negative
(the ANOVA estimator Dodge et al. 2020 and Bouthillier et al. 2021 used).

Intervals: generalized pivotal quantities (GCI; Weerahandi 1993, Burdick, Borror & Montgomery
2005 for shares of total variance in crossed gauge studies): draw U_T ~ chi2(df_T), put
theta_T = SS_T / U_T, solve for each var_T (negatives truncated to 0) and take percentiles of
every share and sd. A parametric bootstrap (``method="bootstrap"``: mean squares drawn from the
fitted, clipped model and re-estimated with the same clipped estimator) is kept for comparison:
benchmarks/variance_calibration.py measures both, and the bootstrap undercovers where the
estimate is clipped, so the report uses the GCI.

Pure numpy: the functions take tables with any leading batch axes (the calibration simulation
passes thousands at once) and ``decompose`` one table.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

FACTORS = ("init", "data_order", "numerics")
LEVEL = 0.95
DRAWS = 2000
SEED = 0
METHODS = ("gci", "bootstrap")
# A component of an exact table (no interaction at all) comes out as -1e-33, not 0: below this
# fraction of the largest mean square a negative estimate is rounding, not "clipped".
ROUNDING = 1e-12
Effect = tuple[int, ...]  # the factor axes an effect varies over: (0,) = init, (0, 2) = init x numerics
# The lowest coverage of the 95 % GCI share intervals that benchmarks/variance_calibration.py
# measured (1000 tables per grid and scenario; 2 factors: 3x3, 4x4, 5x5; 3 factors: 3x3x2, 3x3x3,
# 4x4x3; results/variance_calibration.json, kept equal by a test), by factor count and kind of
# component. The report names the measured coverage where it is below the level.
MEASURED_COVERAGE = {
    2: {"main": 0.957, "residual": 0.944},
    3: {"main": 0.951, "interaction": 0.941, "residual": 0.91},
}


def effects(k: int) -> list[Effect]:
    """Every effect of a k-factor crossed design: main effects, then interactions by order, the
    full interaction (the residual) last."""
    return [e for size in range(1, k + 1) for e in combinations(range(k), size)]


def effect_names(names: Sequence[str]) -> list[str]:
    """``init``, ``data_order``, ``init:data_order``, ...; the full interaction is ``residual``."""
    k = len(names)
    return [":".join(names[i] for i in e) if len(e) < k else "residual" for e in effects(k)]


def kind(name: str) -> str:
    """main, interaction or residual: the kinds of component MEASURED_COVERAGE is kept by."""
    return "residual" if name == "residual" else "interaction" if ":" in name else "main"


def grid_index(seed: int, sizes: Sequence[int]) -> tuple[int, ...]:
    """The (init, data order[, numerics]) cell of run seed ``seed``: TrainConfig.seed_streams'
    mapping (experiments/schema/config.py; stats imports nothing from it, a test keeps the two equal).

    s = (init x c + numerics) x b + order, so that without numerics (c = 1) seed s is init s // b
    and order s % b, as before the numerics factor existed."""
    b = sizes[1]
    c = sizes[2] if len(sizes) > 2 else 1
    cell, order = divmod(seed, b)
    init, level = divmod(cell, c)
    return (init, order, level) if len(sizes) > 2 else (init, order)


def grid_table(cells: Sequence[tuple[int, float, bool]], sizes: Sequence[int]) -> np.ndarray | None:
    """The table y[init, order(, numerics)] of a variant's (seed, value, diverged) cells; None
    while a cell is missing. Seeds beyond the grid (extra seeds) are left out."""
    y = np.full(tuple(sizes), np.nan)
    for seed, value, _ in cells:
        if seed < int(np.prod(sizes)):
            y[grid_index(seed, sizes)] = value
    return None if np.isnan(y).any() else y


def sums_of_squares(y: np.ndarray, k: int) -> dict[Effect, np.ndarray]:
    """SS of every effect over the last k axes of ``y`` (leading axes are a batch).

    The effect of T is the inclusion-exclusion of the marginal means over T's subsets (for a
    2-way table: rows - grand, and y - rows - cols + grand for the residual); its SS is the sum
    of its squares times the runs per level of T."""
    axes = tuple(range(y.ndim - k, y.ndim))
    sizes = y.shape[y.ndim - k :]
    means = {}
    for size in range(k, -1, -1):  # the table itself, then the margins, the grand mean last
        for keep in combinations(range(k), size):
            drop = tuple(axes[i] for i in range(k) if i not in keep)
            means[keep] = y.mean(axis=drop, keepdims=True) if drop else y
    out = {}
    for e in effects(k):
        effect = means[e]
        for size in range(len(e) - 1, -1, -1):
            for sub in combinations(e, size):
                sign = (-1) ** (len(e) - size)
                effect = effect + means[sub] if sign > 0 else effect - means[sub]
        per_level = int(np.prod(sizes)) // int(np.prod([sizes[i] for i in e]))
        out[e] = per_level * (effect**2).sum(axis=axes)
    return out


def degrees_of_freedom(sizes: Sequence[int]) -> dict[Effect, int]:
    return {e: int(np.prod([sizes[i] - 1 for i in e])) for e in effects(len(sizes))}


def raw_components(ms: dict[Effect, np.ndarray], sizes: Sequence[int]) -> dict[Effect, np.ndarray]:
    """Unclipped var_T from the mean squares (or their pivots): (1 / runs per level of T) x the
    sum over T' >= T of (-1)^|T' - T| MS_T'. The residual's is its MS."""
    k, n = len(sizes), int(np.prod(sizes))
    out = {}
    for e in effects(k):
        total = ms[e]
        for t in effects(k):
            if len(t) > len(e) and set(e) <= set(t):
                total = total + ms[t] if (len(t) - len(e)) % 2 == 0 else total - ms[t]
        out[e] = total / (n // int(np.prod([sizes[i] for i in e]))) if len(e) < k else total
    return out


def fitted_mean_squares(var: dict[Effect, np.ndarray], sizes: Sequence[int]) -> dict[Effect, np.ndarray]:
    """theta_T = E[MS_T] of the model with components ``var``."""
    k, n = len(sizes), int(np.prod(sizes))
    return {
        e: sum((n // int(np.prod([sizes[i] for i in t]))) * var[t] for t in effects(k) if set(e) <= set(t))
        for e in effects(k)
    }


def shares(var: dict[Effect, np.ndarray]) -> dict[Effect, np.ndarray]:
    """Each component over their sum (NaN where the total is 0)."""
    total = sum(var.values())
    with np.errstate(invalid="ignore", divide="ignore"):
        return {e: np.where(total > 0, v / np.where(total > 0, total, 1.0), np.nan) for e, v in var.items()}


def draw_components(
    ss: dict[Effect, np.ndarray], sizes: Sequence[int], method: str, draws: int, rng: np.random.Generator
) -> dict[Effect, np.ndarray]:
    """``draws`` values of every var_T, batch shape + (draws,), not yet truncated at 0.

    gci: the generalized pivots theta_T = SS_T / chi2(df_T), solved for var_T. bootstrap: MS*_T =
    fitted theta_T x chi2(df_T) / df_T, the distribution of the mean squares of tables drawn with
    normal effects of the fitted (clipped) variances, solved for var_T as the estimator does."""
    df = degrees_of_freedom(sizes)
    chi = {e: rng.chisquare(df[e], size=(*np.shape(ss[e]), draws)) for e in ss}
    if method == "gci":
        theta = {e: np.asarray(ss[e])[..., None] / chi[e] for e in ss}
    elif method == "bootstrap":
        fitted = {e: np.maximum(v, 0.0) for e, v in raw_components(mean_squares(ss, sizes), sizes).items()}
        mean = fitted_mean_squares(fitted, sizes)
        theta = {e: np.asarray(mean[e])[..., None] * chi[e] / df[e] for e in ss}
    else:
        raise ValueError(f"method={method!r}; choose one of {', '.join(METHODS)}")
    return raw_components(theta, sizes)


def drawn_shares(raw: dict[Effect, np.ndarray], method: str) -> dict[Effect, np.ndarray]:
    """Each draw's shares. The bootstrap repeats the estimator (clipped parts over their sum);
    the GCI truncates each part at 0 but divides by the untruncated total, the pivot of the total
    variance: truncating the denominator's parts too inflates it and pushes the residual's share
    down (3x3x3: 0.89 coverage instead of 0.91). A share above 1 (the other parts' draws
    negative) is 1."""
    clipped = {e: np.maximum(v, 0.0) for e, v in raw.items()}
    if method == "bootstrap":
        return shares(clipped)
    total = sum(raw.values())
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            e: np.where(total > 0, np.minimum(v / np.where(total > 0, total, 1.0), 1.0), np.nan)
            for e, v in clipped.items()
        }


def mean_squares(ss: dict[Effect, np.ndarray], sizes: Sequence[int]) -> dict[Effect, np.ndarray]:
    df = degrees_of_freedom(sizes)
    return {e: ss[e] / df[e] for e in ss}


def intervals(
    raw: dict[Effect, np.ndarray], level: float, method: str = "gci"
) -> tuple[dict[Effect, np.ndarray], dict[Effect, np.ndarray]]:
    """Percentile intervals (batch shape + (2,)) of every share and every component's sd, from
    ``draw_components``' draws."""
    q = [(1 - level) / 2, (1 + level) / 2]
    share_ci = {e: np.moveaxis(_quantile(s, q), 0, -1) for e, s in drawn_shares(raw, method).items()}
    sd_ci = {
        e: np.sqrt(np.moveaxis(np.quantile(np.maximum(v, 0.0), q, axis=-1), 0, -1)) for e, v in raw.items()
    }
    return share_ci, sd_ci


def decompose(
    y: np.ndarray,
    names: Sequence[str],
    *,
    level: float = LEVEL,
    draws: int = DRAWS,
    seed: int = SEED,
    method: str = "gci",
) -> dict[str, Any]:
    """One variant's table -> summary.json's ``variance`` entry (JSON-safe).

    ``var``, ``share``, ``sd_total`` as before the intervals existed (the same estimator), and
    ``sd``, ``ci`` (per component ``share`` and ``sd`` intervals at ``level``), ``clipped`` (the
    ANOVA estimate was negative and is reported as 0), ``df``, ``coverage`` (the lowest coverage
    of such a share interval in simulation, MEASURED_COVERAGE) and ``method``."""
    k = len(names)
    sizes = y.shape
    ss = sums_of_squares(y, k)
    ms = mean_squares(ss, sizes)
    raw = raw_components(ms, sizes)
    scale = max(float(v) for v in ms.values())
    var = {e: max(0.0, float(v)) for e, v in raw.items()}
    total = sum(var.values())
    labels = dict(zip(effects(k), effect_names(names), strict=True))
    drawn = draw_components(ss, sizes, method, draws, np.random.default_rng(seed))
    share_ci, sd_ci = intervals(drawn, level, method)
    df = degrees_of_freedom(sizes)
    return {
        "complete": True,
        "var": {labels[e]: var[e] for e in labels},
        "share": {labels[e]: (float(var[e] / total) if total > 0 else None) for e in labels},
        "sd_total": float(np.sqrt(total)),
        "sd": {labels[e]: float(np.sqrt(var[e])) for e in labels},
        "ci": {labels[e]: {"share": _pair(share_ci[e]), "sd": _pair(sd_ci[e])} for e in labels},
        "clipped": {labels[e]: bool(raw[e] < -ROUNDING * scale) for e in labels},
        "df": {labels[e]: df[e] for e in labels},
        "level": level,
        "coverage": {n: MEASURED_COVERAGE[k][kind(n)] for n in labels.values()} if method == "gci" else None,
        "method": describe(names, method, level, draws),
    }


def describe(names: Sequence[str], method: str, level: float, draws: int) -> str:
    pooled = " x ".join(names) + " interaction pooled into the residual"
    interval = {
        "gci": "generalized pivotal quantities (Weerahandi 1993)",
        "bootstrap": "parametric bootstrap of the fitted, clipped model",
    }[method]
    return (
        f"{len(names)}-way random-effects ANOVA, one run per cell ({pooled}); components from the "
        f"expected mean squares, negative estimates set to 0; {level:.0%} intervals of each share "
        f"and sd: {interval}, {draws} seeded draws, coverage measured by "
        "python -m ablate.benchmarks.variance_calibration"
    )


def _quantile(x: np.ndarray, q: list[float]) -> np.ndarray:
    """Quantiles over the draws; a draw whose components are all 0 has no share (NaN) and is
    left out (nanquantile is slow, so only where there is one)."""
    if not np.isnan(x).any():
        return np.quantile(x, q, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a table without variance: no share at all
        return np.nanquantile(x, q, axis=-1)


def _pair(ci: np.ndarray) -> list[float] | None:
    lo, hi = (float(x) for x in ci)
    return None if not (np.isfinite(lo) and np.isfinite(hi)) else [lo, hi]
