"""Power from a fitted model of the pilot: how many seeds would a comparison need? (``ablate power``)

A pilot study of n seeds per variant gives, per comparison, the spread the primary test sees:
the standard deviation s of the per-seed differences (paired) or the pooled standard deviation
of the two samples (unpaired), with df = n - 1 (or n1 + n2 - 2) degrees of freedom. The model
is a location shift with normal noise: d = Δ + σ ε (paired), or x - μ - Δ and y - μ both σ ε
(unpaired). Two claims, each the primary test's own rule applied to simulated studies
(sweeps/stats/simulation.py):

- **difference** (``seeds_to_detect``): the test rejects at α when the true Δ is the effect
  (the margin m, the smallest effect that matters, or ``--delta``);
- **equivalence** (``seeds_to_show_equivalence``): the test's exact interval at 1 - 2α lies
  strictly inside (-m, +m) when the true Δ is 0 (the two one-sided tests by interval
  inclusion, the rule of sweeps/stats/equivalence.py).

**The answer** is the fewest seeds per side whose power reaches the target at σ's 60 %
confidence limit, σ̂ = s sqrt(df / χ²_df(0.4)) (5 values understate the spread: resampling them
answers too few seeds). **Its share** is the probability, under the normal model fitted to the
pilot (σ at its median-unbiased value σ̃ = s sqrt(df / χ²_df(0.5))), that a pilot like this one
gets an answer that is enough: true power >= target, an answer "more than max_seeds" counting
(it says more are needed). Power rises with the effect, so an answer is enough exactly when it is
at least n*, the answer at the true σ, that is when the pilot's σ̂ exceeds m / E, E the smallest
effect (in σ units) at which fewer than n* seeds reach the target. As σ̂² is σ² χ²_df / χ²_df(0.4),
with e = m / σ̃ and g = χ²_df(0.4):

    share = P(χ²_df > g (e / E)²)

It is 60 % when whole seeds fit exactly and more the more the answer rounds up (small answers).
The calibration benchmark (python -m ablate.benchmarks.stats_calibration) compares it with the
share of simulated pilots whose answer truly reaches the target, on normal, skewed,
ceiling-bounded, bimodal and heavy-tailed data. It is a property of the answers of pilots like
this one, not a promise about the one answer printed: among the pilots that get a number close
to max_seeds, fewer are enough (the others were told "more than max_seeds").

**The search.** The power is not monotone in n for a discrete test (it dips when k stays put
as n grows; with common random numbers the dips are small), so ``first_reaching`` looks at every
n up to ``LINEAR``, then brackets from normal theory's guess and bisects, then checks seed by
seed below the answer until the power is ``DIP`` under the target: the first n reaching it, as a
seed-by-seed search finds it (tests/unit check both agree), in about 10 to 25 powers instead of
up to 200. ``alpha`` is per comparison: the report's Holm adjustment holds the smallest p of k
comparisons to alpha / k, so power_table passes alpha / k (Holm-safe).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ablate.sweeps.stats.inference import mann_whitney, signed_rank
from ablate.sweeps.stats.simulation import Claim, claim_power, crossing, guess

MAX_SEEDS = 200
# σ's confidence limit the answer is taken at: above the median-unbiased 0.5, so that the answer
# is enough in more than half the pilots (the share says how often exactly).
ANSWER_QUANTILE = 0.6
PLUG_IN = 0.5  # σ's confidence limit the share is computed at: the median-unbiased σ
LINEAR = 20  # seeds searched one by one before the search brackets
DIP = 0.01  # below the bisected answer, seeds are checked until the power is this far under the target


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


# ---- the search ----------------------------------------------------------------------------------


def first_reaching(
    power_at: Callable[[int], float], target: float, max_seeds: int, start: int | None = None
) -> int | None:
    """The first n in 2..max_seeds with power_at(n) >= target, None if there is none: a bracket
    from ``start`` (the search's guess), bisection, then seed by seed below the bisected n until
    the power is DIP under the target (it dips far less than that as n grows); every n up to
    LINEAR is looked at, where the dips are largest."""
    lo, hi = _bracket(power_at, target, max_seeds, start or 2)
    if lo <= LINEAR:
        found = (n for n in range(2, min(hi, max_seeds + 1)) if power_at(n) >= target)
        return next(found, hi if hi <= max_seeds else None)
    while hi - lo > 1:  # power_at(lo) < target <= power_at(hi); hi = max_seeds + 1: none so far
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= target else (mid, hi)
    best = hi if hi <= max_seeds else None
    for m in range(hi - 1, 1, -1):
        p = power_at(m)
        if p >= target:
            best = m
        elif p < target - DIP:
            break
    return best


def _bracket(power_at: Callable[[int], float], target: float, max_seeds: int, start: int) -> tuple[int, int]:
    """(lo, hi) with power_at(lo) < target <= power_at(hi), hi = max_seeds + 1 when max_seeds
    does not reach it, or lo <= LINEAR (look at every n below hi); steps from ``start`` that grow
    from 5 % and double."""
    n, step = min(max(start, 2), max_seeds), 0.05
    if power_at(n) >= target:
        hi = n
        while hi > LINEAR + 1:
            lo = max(LINEAR, min(hi - 1, int(hi / (1 + step))))
            if lo == LINEAR or power_at(lo) < target:
                return lo, hi
            hi, step = lo, 2 * step
        return min(hi - 1, LINEAR), hi
    lo = n
    while lo < max_seeds:
        n = min(max_seeds, max(lo + 1, math.ceil(lo * (1 + step))))
        if power_at(n) >= target:
            return lo, n
        lo, step = n, 2 * step
    return lo, max_seeds + 1


def needed(
    paired: bool,
    effect: float,
    *,
    target: float,
    alpha: float,
    max_seeds: int = MAX_SEEDS,
    claim: Claim = "difference",
    start: int | None = None,
) -> int | None:
    """The fewest seeds per side at which the claim has power >= target at ``effect`` (σ units:
    the Δ of a difference, the margin of equivalence); None above max_seeds. ``start``: where
    the search brackets from (default: normal theory's guess)."""

    def power_at(n: int) -> float:
        return claim_power(claim, paired, n, effect, alpha)

    first = start if start is not None else guess(claim, paired, effect, alpha, target)
    return first_reaching(power_at, target, max_seeds, first)


# ---- the answers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Detect:
    """Seeds per side for a claim, and how often they are enough."""

    seeds: int | None  # None: more than max_seeds
    share: float | None  # simulated share of pilots like this one in which `seeds` is enough
    # (power >= target; an answer above max_seeds counts: it says more); None when seeds is None
    effect: float  # the effect in metric units it detects (the margin)
    target: float


def share(claim: Claim, pilot: Pilot, value: float, seeds: int, *, alpha: float, target: float) -> float:
    """P(a pilot like this one gets an answer that is enough) under the normal model with σ at
    its median-unbiased value (the module's docstring): ``seeds`` is this pilot's answer, at σ's
    ANSWER_QUANTILE limit, for ``value`` (metric units)."""
    sigma = pilot.sigma(PLUG_IN)
    e = value / sigma
    start = max(2, int(seeds * (sigma / pilot.sigma()) ** 2))
    truly = needed(pilot.paired, e, target=target, alpha=alpha, max_seeds=seeds, claim=claim, start=start)
    # E, the smallest effect at which fewer than n* seeds reach the target, is the min over those
    # m of their crossings: taken at n* - 1, as the crossings fall as n grows up to small dips
    # (the benchmark's exact_share, the min over every m, differs by under 0.01 pt)
    return stated_share(e, pilot.df, crossing(claim, pilot.paired, (truly or seeds) - 1, alpha, target))


def stated_share(e: float, df: int, short: float) -> float:
    """P(χ²_df > g (e / E)²), g = χ²_df(1 - ANSWER_QUANTILE): the probability that a pilot's σ̂
    exceeds value / E, so that its answer is at least n*; e the effect in units of the plug-in σ,
    E = ``short`` the smallest effect at which fewer than n* seeds reach the target (inf: none)."""
    return float(stats.chi2.sf(_g(df) * (e / short) ** 2, df)) if short > 0 else 0.0


@functools.lru_cache(maxsize=256)
def _g(df: int) -> float:
    return float(stats.chi2.ppf(1 - ANSWER_QUANTILE, df))


def _detect(
    claim: Claim, pilot: Pilot, value: float, *, alpha: float, target: float, max_seeds: int
) -> Detect:
    value = abs(float(value))  # the model is symmetric in the sign of Δ
    if value == 0:
        return Detect(None, None, 0.0, target)
    if pilot.sd == 0:  # no spread: the fewest seeds at which the claim can hold, in every pilot
        n = needed(pilot.paired, math.inf, target=target, alpha=alpha, max_seeds=max_seeds, claim=claim)
        return Detect(n, None if n is None else 1.0, value, target)
    n = needed(
        pilot.paired, value / pilot.sigma(), target=target, alpha=alpha, max_seeds=max_seeds, claim=claim
    )
    if n is None:
        return Detect(None, None, value, target)
    got = share(claim, pilot, value, n, alpha=alpha, target=target)
    return Detect(n, got, value, target)


def seeds_to_detect(
    pilot: Pilot, *, effect: float, alpha: float, target: float = 0.8, max_seeds: int = 50
) -> Detect:
    """The seeds per side at which the primary test detects Δ = effect (metric units: the
    margin) with power >= target at σ's ANSWER_QUANTILE limit, and the share of pilots like
    this one in which they are enough; seeds None when Δ = 0 or more than ``max_seeds``."""
    return _detect("difference", pilot, effect, alpha=alpha, target=target, max_seeds=max_seeds)


def seeds_to_show_equivalence(
    pilot: Pilot, *, margin: float, alpha: float, target: float = 0.8, max_seeds: int = 50
) -> Detect:
    """The seeds per side at which the equivalence claim within ±margin (the interval at 1 - 2α
    inside it) holds with power >= target when the true Δ is 0, and its share likewise."""
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    return _detect("equivalence", pilot, margin, alpha=alpha, target=target, max_seeds=max_seeds)


@dataclass(frozen=True)
class Answer:
    """``ablate power``'s answer for one comparison."""

    sigma: float  # at ANSWER_QUANTILE
    detect: Detect | None  # None: no effect to detect (no margin, no --delta)
    equivalence: Detect | None  # None: no margin
    note: str | None = None


def answer(
    pilot: Pilot,
    *,
    effect: float | None,
    margin: float | None,
    target: float,
    alpha: float,
    equivalence_alpha: float | None = None,
    max_seeds: int = MAX_SEEDS,
) -> Answer:
    """The seeds the comparison needs to detect Δ = effect and to show equivalence within
    ±margin (``equivalence_alpha``: its own family's level, default alpha), each with its share."""
    detect = (
        None
        if effect is None
        else seeds_to_detect(pilot, effect=effect, alpha=alpha, target=target, max_seeds=max_seeds)
    )
    equivalence = (
        None
        if margin is None
        else seeds_to_show_equivalence(
            pilot, margin=margin, alpha=equivalence_alpha or alpha, target=target, max_seeds=max_seeds
        )
    )
    note = None
    if pilot.sd == 0:
        note = "the pilot has no spread: the answer is the fewest seeds at which the claim can hold (a lower bound)"
    elif pilot.tied:
        note = (
            "the pilot's values tie (a saturated or solved/stuck metric): the normal model does not "
            "hold and can answer far too few seeds (docs: statistics, calibration, bimodal)"
        )
    return Answer(pilot.sigma(), detect, equivalence, note)
