"""Power by resampling: how many seeds would a comparison need? (``ablate power``)

From a finished (pilot) study, for every variant against the baseline: resample the observed
per-seed values (with replacement) at n seeds per side, run the test the report uses (the
exact paired sign-flip test when the variant is paired with the baseline, exact Mann-Whitney U
otherwise) and count how often p < alpha. The smallest n with power >= the target is the
answer. ``--delta`` asks for another effect than the observed one: the variant's values (or
the paired differences) are shifted so that their Δ equals it, keeping their spread.

The test is the report's own, with one economy: above 12 seeds the paired test draws
``MC_SIGN_VECTORS`` random sign vectors instead of enumerating all 2^n (a Monte Carlo p-value
whose error, about 0.005 at p = 0.05, is far below the resampling error of the power itself).
Powers are per comparison at ``alpha``; the report's Holm adjustment over k comparisons is
stricter (its smallest p is compared with alpha / k), so ``--alpha 0.025`` with two variants
gives the Holm-safe count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ablate.sweeps.stats.exact import mwu_exact, sign_flip

EXACT_SIGN_MAX = 12
MC_SIGN_VECTORS = 4000
SEED_GRID = (3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50)


@dataclass(frozen=True)
class Comparison:
    variant: str
    paired: bool
    delta: float  # the effect asked for (median of paired differences, or difference of medians)
    x: np.ndarray  # the variant's values (unpaired) or the paired differences, shifted to `delta`
    y: np.ndarray  # the baseline's values (unpaired only)


def _p_value(c: Comparison, x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> float:
    if not c.paired:
        return mwu_exact(x, y)[0]
    if x.size <= EXACT_SIGN_MAX:
        return sign_flip(x)[0]
    d = x[x != 0]
    if d.size == 0:
        return 1.0
    signs = rng.choice(np.array([-1.0, 1.0]), size=(MC_SIGN_VECTORS, d.size))
    extreme = np.abs(signs @ d) >= abs(d.sum()) - 1e-9 * np.abs(d).sum()
    return (int(extreme.sum()) + 1) / (MC_SIGN_VECTORS + 1)


def power_at(c: Comparison, n: int, *, alpha: float, resamples: int, seed: int = 0) -> float:
    """P(p < alpha) when each side has n seeds drawn from the observed values (seeded)."""
    rng = np.random.default_rng([seed, n])
    hits = 0
    for _ in range(resamples):
        x = rng.choice(c.x, size=n, replace=True)
        y = rng.choice(c.y, size=n, replace=True) if not c.paired else c.y
        hits += _p_value(c, x, y, rng) < alpha
    return hits / resamples


def seeds_needed(
    c: Comparison, *, target: float, alpha: float, resamples: int, max_seeds: int
) -> tuple[int | None, list[tuple[int, float]]]:
    """The smallest n on SEED_GRID (up to max_seeds) with power >= target, and the curve."""
    curve = []
    for n in (n for n in SEED_GRID if n <= max_seeds):
        curve.append((n, power_at(c, n, alpha=alpha, resamples=resamples)))
        if curve[-1][1] >= target:
            return n, curve
    return None, curve
