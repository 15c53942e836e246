"""Power from a fitted model of the pilot: how many seeds would a comparison need? (``ablate power``)

A pilot study of n seeds per variant gives, per comparison, the spread the primary test sees:
the standard deviation s of the per-seed differences (paired) or the pooled standard deviation
of the two samples (unpaired), with df = n - 1 (or n1 + n2 - 2) degrees of freedom. The model
is a location shift with normal noise: d = Δ + σ ε (paired), or x - μ - Δ and y - μ both
σ ε (unpaired). Δ is what the primary test measures and the report prints: the centre of the
per-seed differences (paired) or the shift (unpaired), estimated by Hodges-Lehmann; ``--delta``
sets it, else the pilot's estimate is used.

Why not resample the pilot: 5 values understate the spread (their range is narrower than the
population's), so resampling answers too few seeds most of the time. Here σ is taken at its
60 % confidence limit, σ̂ = s sqrt(df / χ²_df(0.4)): under the model the recommended n is at
least the n truly needed in 60 % of pilots, and the n at σ's 10 % and 90 % confidence limits,
s sqrt(df / χ²_df(0.9)) and s sqrt(df / χ²_df(0.1)), is the 80 % range printed beside it. The
calibration benchmark (python -m ablate.benchmarks.stats_calibration) measures how this holds
on normal, skewed, ceiling-bounded and bimodal data; with ties (ceiling, bimodal) the answer
carries a note, as the normal model then understates what the test needs.

The power is the primary test's own rule, applied to ``DRAWS`` seeded simulated studies. ``alpha`` is per comparison: the report's Holm adjustment holds the
smallest p of k comparisons to alpha / k, so power_table passes alpha / k (Holm-safe).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ablate.sweeps.stats.inference import kth, mann_whitney, null_cdf, signed_rank

DRAWS = 4000
MAX_SEEDS = 200
RANGE = (0.1, 0.9)  # σ's confidence limits behind the 80 % range of the needed n
# σ's confidence limit the answer is taken at: above the median-unbiased 0.5, so that the answer
# is enough in more than half the pilots, with a margin for the discreteness and the ties that
# the normal model does not see (the calibration's ceiling model sat at 49.5 % with 0.5).
ANSWER_QUANTILE = 0.6


@dataclass(frozen=True)
class Pilot:
    """What the model keeps of a pilot comparison."""

    variant: str
    paired: bool
    estimate: float  # the primary test's estimate on the pilot
    sd: float  # of the differences (paired) or pooled (unpaired)
    df: int
    n: int  # pilot seeds (pairs, or the smaller side)
    tied: bool = False  # some pilot differences (paired) or values (unpaired) are equal

    def sigma(self, quantile: float = ANSWER_QUANTILE) -> float:
        """σ at the given quantile of its confidence distribution (0.5: median-unbiased; the
        answer's ANSWER_QUANTILE: an upper limit that is exceeded in 40 % of pilots)."""
        return self.sd * math.sqrt(self.df / float(stats.chi2.ppf(1 - quantile, self.df)))


def fit(variant: str, values: Sequence[float], baseline: Sequence[float], paired: bool) -> Pilot | None:
    """The pilot of one comparison (``baseline`` aligned by seed when paired); None below 2 seeds."""
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline, dtype=float)
    if paired:
        d = x - y
        if d.size < 2:
            return None
        estimate = signed_rank(d).estimate  # what the report's Δ is: the Hodges-Lehmann estimate
        tied = bool(np.unique(d).size < d.size)
        return Pilot(variant, True, float(estimate), float(d.std(ddof=1)), d.size - 1, d.size, tied)
    if x.size < 2 or y.size < 2:
        return None
    pooled = ((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (x.size + y.size - 2)
    shift = float(mann_whitney(x, y).estimate)
    tied = bool(np.unique(x).size < x.size or np.unique(y).size < y.size)
    sd = float(math.sqrt(pooled))
    return Pilot(variant, False, shift, sd, x.size + y.size - 2, min(x.size, y.size), tied)


@functools.lru_cache(maxsize=4096)
def power(paired: bool, n: int, effect: float, alpha: float, *, draws: int = DRAWS, seed: int = 0) -> float:
    """P(the primary test rejects at alpha) with n seeds per side when the shift is effect = Δ / σ
    and the noise normal: the share of ``draws`` seeded simulated studies in which at most
    k - 1 Walsh averages (paired) or pairwise differences (unpaired) fall on one side of 0,
    which is the test's own rule (inference.py)."""
    k = kth(null_cdf(paired, n, n)[0], alpha)
    if k == 0:
        return 0.0
    if math.isinf(effect):
        return 1.0
    rng = np.random.default_rng([seed, n, int(paired)])
    hits = 0
    for start in range(0, draws, 500):
        b = min(500, draws - start)
        if paired:
            d = rng.standard_normal((b, n)) + effect
            i, j = np.triu_indices(n)
            values = d[:, i] + d[:, j]  # twice the Walsh averages: the same signs
        else:
            x = rng.standard_normal((b, n, 1)) + effect
            values = (x - rng.standard_normal((b, 1, n))).reshape(b, -1)
        low, high = (values <= 0).sum(axis=1), (values >= 0).sum(axis=1)
        hits += int(np.count_nonzero((low <= k - 1) | (high <= k - 1)))
    return hits / draws


def needed(
    paired: bool, effect: float, *, target: float, alpha: float, max_seeds: int = MAX_SEEDS
) -> int | None:
    """The fewest seeds per side with power >= target at this effect, None above max_seeds.

    Power is not monotone in n for a discrete test (it dips when k stays put as n grows), so
    this is the first n that reaches the target, searched upward one seed at a time."""
    for n in range(2, max_seeds + 1):
        if power(paired, n, effect, alpha) >= target:
            return n
    return None


@dataclass(frozen=True)
class Answer:
    """``ablate power``'s answer for one comparison."""

    delta: float
    sigma: float
    seeds: int | None  # at σ's ANSWER_QUANTILE limit; None: more than max_seeds
    seeds_range: tuple[int | None, int | None]  # at σ's 10 % and 90 % confidence limits
    curve: list[tuple[int, float]]  # power by seeds at that σ
    note: str | None = None


def answer(
    pilot: Pilot, *, delta: float | None, target: float, alpha: float, max_seeds: int = MAX_SEEDS
) -> Answer:
    """The seeds the comparison needs for power ``target`` at Δ = delta (default: the pilot's
    estimate), with the 80 % range and the power curve up to the answer."""
    delta = pilot.estimate if delta is None else float(delta)
    sigma = pilot.sigma()
    if delta == 0:
        return Answer(0.0, sigma, None, (None, None), [], "Δ = 0: nothing to detect")
    if pilot.sd == 0:  # every pilot difference equal: the model has no spread to scale by
        n = needed(
            pilot.paired, math.copysign(math.inf, delta), target=target, alpha=alpha, max_seeds=max_seeds
        )
        note = "the pilot has no spread: the answer is the fewest seeds at which the test can reject (a lower bound)"
        return Answer(delta, 0.0, n, (n, n), [], note)

    def n_at(s: float) -> int | None:
        return needed(pilot.paired, delta / s, target=target, alpha=alpha, max_seeds=max_seeds)

    n = n_at(sigma)
    grid = [m for m in (3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 50, 100) if m <= (n or max_seeds)]
    curve = [(m, power(pilot.paired, m, delta / sigma, alpha)) for m in grid]
    low, high = (n_at(pilot.sigma(q)) for q in RANGE)
    note = (
        "the pilot's values tie (a saturated or solved/stuck metric): the normal model does not "
        "hold and can answer far too few seeds (docs: statistics, calibration, bimodal)"
        if pilot.tied
        else None
    )
    return Answer(delta, sigma, n, (low, high), curve, note)


def seeds_to_detect(pilot: Pilot, *, alpha: float, target: float = 0.8, max_seeds: int = 50) -> int | None:
    """The report's "about M seeds would detect Δ": ``needed`` at the pilot's own estimate and
    σ as ``answer`` takes it (no range: ``ablate power`` prints that); None when Δ = 0 or more
    than ``max_seeds`` would be needed."""
    if pilot.estimate == 0:
        return None
    sigma = pilot.sigma()
    effect = math.copysign(math.inf, pilot.estimate) if sigma == 0 else pilot.estimate / sigma
    return needed(pilot.paired, effect, target=target, alpha=alpha, max_seeds=max_seeds)
