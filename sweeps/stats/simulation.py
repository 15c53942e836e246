"""The primary test's claims on simulated studies under the normal model: the power that
``ablate power`` (sweeps/stats/power.py) sizes seeds with.

Two claims, each the primary test's own rule (inference.py) applied to ``DRAWS`` simulated
studies of n seeds per side with σ = 1:

- **difference**: the test rejects at α when the true Δ is the effect (``power``);
- **equivalence**: the test's exact interval at 1 - 2α lies strictly inside (-m, +m) when the
  true Δ is 0 (``equivalence_power``; the two one-sided tests by interval inclusion, the rule of
  sweeps/stats/equivalence.py).

Study r of n seeds is the first n seeds of row r of one fixed set of normal draws (common random
numbers), so the power changes smoothly with n (up to the test's own steps). A study decides by counting its averages (the Walsh
averages, paired, or the pairwise differences) on each side of a cut from its sorted values in
O(n log n) (``at_most``), not by forming all n² of them: at cut 0 the comparisons are exactly
the test's. The power at an effect is a count of the studies whose threshold lies below it, so
``crossing``, the effect at which n seeds reach a target, is one study's threshold, found
exactly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from ablate.sweeps.stats.inference import EXACT_MWU_CELLS, EXACT_WILCOXON_N, kth, null_cdf

DRAWS = 4000
BLOCK = 25  # seeds per block of simulated draws: any n is the first n seeds of the same rows
MERGE_SEEDS = 120  # _ranks: above this, a binary search per row beats the merge
WALSH_SEEDS = 40  # at_most, paired: above this, a search per row over the pairs that count beats the merge
EXACT_ROWS = 256  # crossing: the studies near the crossing whose thresholds are computed exactly

Claim = Literal["difference", "equivalence"]


@functools.lru_cache(maxsize=512)
def _block(seed: int, stream: int, block: int, draws: int) -> np.ndarray:
    """Standard normals (draws, BLOCK) of seeds block * BLOCK onwards of every study; stream 0:
    the paired differences, 1 and 2: the unpaired variant's and baseline's values."""
    out = np.random.default_rng([seed, stream, block]).standard_normal((draws, BLOCK))
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=16)
def studies(
    paired: bool, n: int, *, draws: int = DRAWS, seed: int = 0
) -> tuple[np.ndarray, np.ndarray | None]:
    """The simulated studies with n seeds per side, noise only, each row sorted: the paired
    differences and None, or the variant's and the baseline's values."""

    def take(stream: int) -> np.ndarray:
        cols = np.concatenate([_block(seed, stream, b, draws) for b in range(-(-n // BLOCK))], axis=1)
        out = np.sort(cols[:, :n], axis=1)
        out.flags.writeable = False
        return out

    return (take(0), None) if paired else (take(1), take(2))


def _ranks(a: np.ndarray, q: np.ndarray) -> np.ndarray:
    """#{i: a_i <= q_t} for every row and t (a, q sorted along axis 1): a merge, in which a stable
    sort keeps an a before an equal q; row by row above MERGE_SEEDS, where that is faster."""
    if a.shape[1] > MERGE_SEEDS:
        out = np.empty(q.shape, dtype=np.int64)
        for r in range(a.shape[0]):
            out[r] = np.searchsorted(a[r], q[r], side="right")
        return out
    order = np.argsort(np.concatenate([a, q], axis=1), axis=1, kind="stable")
    is_a = order < a.shape[1]
    return np.cumsum(is_a, axis=1)[~is_a].reshape(q.shape)


def at_most(x: np.ndarray, y: np.ndarray | None, cut: float) -> np.ndarray:
    """Per row, how many of the primary test's averages are <= cut: the Walsh averages
    (x_i + x_j) / 2, i <= j, of the differences x (y None), or the differences x_i - y_j.
    Rows sorted. At cut 0 the comparisons are exactly the test's (x_j <= -x_i iff x_i + x_j <= 0)."""
    if y is None:
        n = x.shape[1]
        if n > WALSH_SEEDS:
            return _walsh_at_most(x, cut)
        r = _ranks(x, (2 * cut - x)[:, ::-1])[:, ::-1]  # r_i = #{j: x_j <= 2 cut - x_i}
        return np.maximum(0, r - np.arange(n)).sum(axis=1)  # the pairs i <= j
    return _ranks(x, y + cut).sum(axis=1)  # sum over j of #{i: x_i <= y_j + cut}


def _walsh_at_most(x: np.ndarray, cut: float) -> np.ndarray:
    """at_most's count for the differences x (rows sorted), sum_i max(0, r_i - i) with
    r_i = #{j: x_j <= 2 cut - x_i} in the same floats, searching only the pairs that are not
    known: with m = #{x_j <= cut}, an i >= m has 2 cut - x_i <= cut < x_i (rounding keeps that
    order), so r_i <= i and it adds nothing; an i < m has 2 cut - x_i >= cut, so r_i counts
    every j < m and adds m - i plus #{j >= m: x_j <= 2 cut - x_i}. About half the search, row by
    row (the same count to the pair: tests/unit)."""
    rows, n = x.shape
    q = (2 * cut - x)[:, ::-1]  # ascending; q[:, n - 1 - i] = 2 cut - x_i
    m = np.count_nonzero(x <= cut, axis=1)
    rest = np.empty(rows, dtype=np.int64)
    for r, (xr, qr, k) in enumerate(zip(x, q, m.tolist(), strict=True)):
        rest[r] = xr[k:].searchsorted(qr[n - k :], "right").sum()
    return m * (m + 1) // 2 + rest


def at_least(x: np.ndarray, y: np.ndarray | None, cut: float) -> np.ndarray:
    """Per row, how many averages are >= cut: those of -x (or of y - x) that are <= -cut."""
    return at_most(-x[:, ::-1], None, -cut) if y is None else at_most(y, x, -cut)


def _rejects(x: np.ndarray, y: np.ndarray | None, effect: float, k: int) -> np.ndarray:
    """The difference test on studies shifted by effect: at most k - 1 averages on one side of 0.
    The draws are continuous, so no average is 0: #{>= 0} is M - #{<= 0}."""
    x = x + effect
    low = at_most(x, y, 0.0)
    total = x.shape[1] * (x.shape[1] + 1) // 2 if y is None else x.shape[1] * y.shape[1]
    return (low <= k - 1) | (total - low <= k - 1)


def _equivalent(x: np.ndarray, y: np.ndarray | None, margin: float, k: int) -> np.ndarray:
    """The equivalence claim on studies with no shift: at most k - 1 averages <= -m and at most
    k - 1 >= +m (the interval at 1 - 2α strictly inside (-m, +m))."""
    return (at_most(x, y, -margin) <= k - 1) & (at_least(x, y, margin) <= k - 1)


def _difference_limits(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A study with k-th smallest average low and k-th largest high rejects at a shift t exactly
    when t > -low or t < -high."""
    return -low, -high


def _equivalence_limits(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """... and claims equivalence at a margin t exactly when t > max(-low, high)."""
    return np.maximum(-low, high), np.full(low.shape, -np.inf)


@dataclass(frozen=True)
class Rule:
    """A claim's rule on simulated studies."""

    level: float  # the test's level as a multiple of alpha (the equivalence interval: 1 - 2α)
    decide: Callable[[np.ndarray, np.ndarray | None, float, int], np.ndarray]
    limits: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]  # decide iff t > lo or t < hi
    z: Callable[[float, float], float]  # normal theory's z_alpha + z_beta (the search's first guess)


CLAIMS: dict[str, Rule] = {
    "difference": Rule(
        1.0,
        _rejects,
        _difference_limits,
        lambda a, p: float(stats.norm.ppf(1 - a / 2) + stats.norm.ppf(p)),
    ),
    "equivalence": Rule(
        2.0,
        _equivalent,
        _equivalence_limits,
        lambda a, p: float(stats.norm.ppf(1 - a) + stats.norm.ppf((1 + p) / 2)),
    ),
}


@functools.lru_cache(maxsize=4096)
def claim_k(claim: Claim, paired: bool, n: int, alpha: float) -> int:
    """inference.kth(null_cdf(paired, n, n)[0], level) for the claim's level: where that null
    distribution is exact, counted here with floats in numpy (inference counts it with integers in
    Python, 0.2 s at 200 pairs: the search visits many n; tests/unit: the same k)."""
    level = CLAIMS[claim].level * alpha
    if (n <= EXACT_WILCOXON_N) if paired else (n * n <= EXACT_MWU_CELLS):
        return int(np.count_nonzero(2 * _null_cdf(paired, n) <= level))  # the cdf rises: kth's k
    return kth(null_cdf(paired, n, n)[0], level)


@functools.lru_cache(maxsize=512)
def _null_cdf(paired: bool, n: int) -> np.ndarray:
    """The no-ties null cdf of the count statistic with n pairs (W+) or n seeds per side (U)."""
    if paired:  # subsets of {1..n} by their sum
        counts = np.zeros(n * (n + 1) // 2 + 1)
        counts[0] = 1.0
        for r in range(1, n + 1):
            top = r * (r + 1) // 2
            counts[r : top + 1] = counts[r : top + 1] + counts[: top + 1 - r]
        return np.cumsum(counts) / 2.0**n
    # arrangements of a x's and b y's by U: c(a, b) = c(a - 1, b) shifted by b, plus c(a, b - 1)
    table = [[np.ones(1) for _ in range(n + 1)] for _ in range(n + 1)]
    for a in range(1, n + 1):
        for b in range(1, n + 1):
            c = np.zeros(a * b + 1)
            c[b:] += table[a - 1][b]
            c[: (a - 0) * (b - 1) + 1] += table[a][b - 1]
            table[a][b] = c
    return np.cumsum(table[n][n]) / float(math.comb(2 * n, n))


def decisions(
    claim: Claim, paired: bool, n: int, value: float, alpha: float, *, draws: int = DRAWS, seed: int = 0
) -> np.ndarray:
    """Per simulated study of n seeds per side (σ = 1): does the claim hold? ``value``: the true
    Δ (difference) or the margin at Δ = 0 (equivalence), in σ units."""
    k = claim_k(claim, paired, n, alpha)
    if k == 0 or (claim == "equivalence" and value <= 0):
        return np.zeros(draws, dtype=bool)
    if math.isinf(value):
        return np.ones(draws, dtype=bool)
    x, y = studies(paired, n, draws=draws, seed=seed)
    return CLAIMS[claim].decide(x, y, value, k)


@functools.lru_cache(maxsize=8192)
def claim_power(
    claim: Claim, paired: bool, n: int, value: float, alpha: float, *, draws: int = DRAWS, seed: int = 0
) -> float:
    """The share of the simulated studies in which the claim holds."""
    return float(np.count_nonzero(decisions(claim, paired, n, value, alpha, draws=draws, seed=seed))) / draws


def power(paired: bool, n: int, effect: float, alpha: float, *, draws: int = DRAWS, seed: int = 0) -> float:
    """P(the primary test rejects at alpha) with n seeds per side when the shift is effect = Δ / σ
    and the noise normal: the share of ``draws`` simulated studies in which at most k - 1 Walsh
    averages (paired) or pairwise differences (unpaired) fall on one side of 0, the test's own
    rule (inference.py)."""
    return claim_power("difference", paired, n, effect, alpha, draws=draws, seed=seed)


def equivalence_power(
    paired: bool, n: int, margin: float, alpha: float, *, draws: int = DRAWS, seed: int = 0
) -> float:
    """P(the equivalence claim holds at alpha) with n seeds per side, the true Δ 0 and the margin
    in σ units: the test's interval at 1 - 2 alpha strictly inside (-margin, +margin)."""
    return claim_power("equivalence", paired, n, margin, alpha, draws=draws, seed=seed)


def clear_caches() -> None:
    """Forget every simulated study, null distribution, power and crossing (a cold start)."""
    for f in (_block, studies, _null_cdf, claim_k, claim_power, crossing):
        f.cache_clear()


def guess(claim: Claim, paired: bool, value: float, alpha: float, target: float) -> int:
    """Normal theory's seeds per side for the claim (the search starts there): (z_α + z_β)² / value²,
    times pi / 3 (the rank tests' efficiency on normal data), twice that unpaired."""
    z = CLAIMS[claim].z(alpha, target)
    n = (1 if paired else 2) * math.pi / 3 * (z / max(abs(value), 1e-6)) ** 2
    return int(min(n, 10**6)) + 1


def _need(draws: int, target: float) -> int:
    """The fewest studies h with h / draws >= target (the float comparison power makes)."""
    h = max(0, math.ceil(target * draws) - 1)
    while h / draws < target:
        h += 1
    return h


@functools.lru_cache(maxsize=2048)
def crossing(
    claim: Claim,
    paired: bool,
    n: int,
    alpha: float,
    target: float,
    *,
    draws: int = DRAWS,
    near: float | None = None,
) -> float:
    """inf{t > 0: the claim's power at t >= target} with n seeds per side (inf when it cannot
    reach it): the power is a count of studies whose threshold lies below t, so the answer is
    one study's threshold, found exactly: a bracket (from ``near``, else normal theory) narrowed
    until at most EXACT_ROWS studies change their decision inside it, whose thresholds are then
    computed from their averages."""
    if claim_k(claim, paired, n, alpha) == 0:
        return math.inf
    need = _need(draws, target)

    def at(t: float) -> np.ndarray:
        return decisions(claim, paired, n, t, alpha, draws=draws)

    b = near * 1.02 if near else math.sqrt(guess(claim, paired, 1.0, alpha, target) / n)
    a = b / 1.04 if near else 0.0
    da, db = at(a), at(b)
    while np.count_nonzero(da) >= need:  # a from a hint can reach already
        b, db, a = a, da, a / 2
        da = at(a)
    while np.count_nonzero(db) < need:
        a, da, b = b, db, 2 * b
        db = at(b)
    for _ in range(60):  # each step keeps at most 90 % of the bracket
        if np.count_nonzero(da != db) <= EXACT_ROWS:
            break
        ha, hb = np.count_nonzero(da), np.count_nonzero(db)
        w = min(0.9, max(0.1, (need - ha) / max(1, hb - ha)))  # interpolated, kept inside
        t = a + w * (b - a)
        dt = at(t)
        a, da, b, db = (a, da, t, dt) if np.count_nonzero(dt) >= need else (t, dt, b, db)
    return _exact_crossing(claim, paired, n, alpha, need, da, db, draws)


def _exact_crossing(
    claim: Claim, paired: bool, n: int, alpha: float, need: int, da: np.ndarray, db: np.ndarray, draws: int
) -> float:
    """The crossing inside a bracket whose decisions are da and db: the thresholds of the studies
    that change, from their k-th smallest and k-th largest averages."""
    rows = np.flatnonzero(da != db)
    x, y = studies(paired, n, draws=draws)
    x = x[rows]
    if y is None:
        i, j = np.triu_indices(n)
        averages = (x[:, i] + x[:, j]) / 2
    else:
        averages = (x[:, :, None] - y[rows][:, None, :]).reshape(rows.size, -1)
    k, m = claim_k(claim, paired, n, alpha), averages.shape[1]
    part = np.partition(averages, [k - 1, m - k], axis=1)
    lo, hi = CLAIMS[claim].limits(part[:, k - 1], part[:, m - k])
    fixed = np.count_nonzero(da & db)  # the studies that decide all through the bracket
    for t in np.sort(lo):
        above = np.nextafter(t, math.inf)
        if fixed + np.count_nonzero((above > lo) | (above < hi)) >= need:
            return float(t)
    return float(np.nextafter(np.max(lo), math.inf))  # not reached: rounding at the bracket's end
