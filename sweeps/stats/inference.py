"""The primary test of a comparison and its confidence interval, one the inversion of the other.

Paired design (the variant shares every seed with the baseline): the **Wilcoxon signed-rank
test** on the per-seed differences d. Its estimate is the **Hodges-Lehmann** one, the median of
the n(n+1)/2 Walsh averages (d_i + d_j) / 2, i <= j (the centre of symmetry of d: its median
when d is symmetric), and its interval is [A_(k), A_(M+1-k)] of those M sorted averages
(Tukey's interval, the inversion of the signed-rank test). Unpaired: the **Mann-Whitney test**
with the Hodges-Lehmann shift (the median of the n1 n2 differences x_i - y_j) and the interval
[D_(k), D_(M+1-k)] of those differences (the inversion of the Mann-Whitney test). Both use the
same statistic: the count T of averages (or differences) above 0 is the signed-rank statistic
W+ (or U) when no value ties.

Both intervals are distribution-free and exact: k is the largest integer with
2 P(T <= k - 1) <= alpha under the null, and the **achieved confidence** 1 - 2 P(T <= k - 1)
is reported with the interval. With 5 paired seeds the widest interval, [min d, max d], has
confidence 1 - 2/32 = 93.75 %, below 95 %, so none is shown: 6 seeds are the fewest.

Ties (saturated accuracies give many) count against rejection on both sides: the p-value is
2 min(P(T <= #{A <= 0}), P(T <= #{A >= 0})), capped at 1, with T's no-ties null distribution
(valid: breaking the ties by a vanishing symmetric jitter can only lower those counts). So for
every data set the interval excludes 0 exactly when p <= alpha: 0 < A_(k) says at most k - 1
averages are <= 0, which is what p <= alpha says about the lower side.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
TEST_WILCOXON = "signed-rank"
TEST_MWU = "mann-whitney"
NORMAL_SUFFIX = "-normal"  # the test's null taken normal (above the exact sizes)
EXACT_WILCOXON_N = 200  # pairs up to which W+'s null distribution is counted
EXACT_MWU_CELLS = 2500  # n1 n2 up to which U's null distribution is counted


@dataclass(frozen=True)
class Inference:
    """A comparison's primary test: its p-value, estimate and the interval that inverts it."""

    test: str
    estimate: float | None  # the Hodges-Lehmann estimate (paired: of the differences' centre)
    p: float | None
    ci: tuple[float, float] | None  # None: these seeds cannot reach 1 - alpha
    confidence: float | None  # the achieved confidence of ci
    min_p: float  # the smallest p these seeds can give (every sign agreeing)
    alpha: float = ALPHA

    @property
    def rejects(self) -> bool:
        """p <= alpha, which holds exactly when the interval excludes 0."""
        return self.p is not None and self.p <= self.alpha


# ---- null distributions (no ties) --------------------------------------------------------------


def _cdf(counts: Sequence[int], total: int) -> tuple[float, ...]:
    return tuple(float(c) / total for c in itertools.accumulate(counts))


@functools.cache
def signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(W+ <= w), w = 0..n(n+1)/2, W+ the sum of the ranks of the positive differences of n
    (every sign equally likely): subsets of {1..n} counted by their sum."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for r in range(1, n + 1):
        for s in range(r * (r + 1) // 2, r - 1, -1):
            counts[s] += counts[s - r]
    return _cdf(counts, 2**n)


@functools.cache
def _mwu_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Arrangements of n1 x's and n2 y's with U = u (pairs with x above y), u = 0..n1 n2.

    The largest value is an x (above all n2 y's: U gains n2) or a y (U gains nothing):
    c(u; n1, n2) = c(u - n2; n1 - 1, n2) + c(u; n1, n2 - 1)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(_mwu_counts(n1 - 1, n2)):
        out[u + n2] += c
    for u, c in enumerate(_mwu_counts(n1, n2 - 1)):
        out[u] += c
    return tuple(out)


@functools.cache
def mwu_cdf(n1: int, n2: int) -> tuple[float, ...]:
    """P(U <= u), u = 0..n1 n2, U = #{(i, j): x_i > y_j}, every arrangement equally likely."""
    return _cdf(_mwu_counts(n1, n2), math.comb(n1 + n2, n1))


@functools.cache
def normal_cdf(mean: float, var: float, top: int) -> tuple[float, ...]:
    """A count statistic's null cdf, normal with a continuity correction (large samples)."""
    from scipy import stats  # imported where used (a finished sweep's rerun needs none)

    sd = math.sqrt(var)
    return tuple(float(c) for c in stats.norm.cdf((np.arange(top + 1) + 0.5 - mean) / sd))


def null_cdf(paired: bool, n1: int, n2: int = 0) -> tuple[tuple[float, ...], bool]:
    """(the null cdf of the primary test's count, exact?) for n1 pairs, or n1 and n2 seeds."""
    if paired:
        if n1 <= EXACT_WILCOXON_N:
            return signed_rank_cdf(n1), True
        m = n1 * (n1 + 1) // 2
        return normal_cdf(m / 2, n1 * (n1 + 1) * (2 * n1 + 1) / 24, m), False
    if n1 * n2 <= EXACT_MWU_CELLS:
        return mwu_cdf(n1, n2), True
    return normal_cdf(n1 * n2 / 2, n1 * n2 * (n1 + n2 + 1) / 12, n1 * n2), False


def kth(cdf: Sequence[float], alpha: float) -> int:
    """The largest k with 2 P(T <= k - 1) <= alpha (the interval's order statistic); 0 when
    even k = 1 exceeds it (these seeds cannot reach 1 - alpha)."""
    k = 0
    while k < len(cdf) and 2 * cdf[k] <= alpha:
        k += 1
    return k


def confidence(paired: bool, n: int, k: int = 1) -> float:
    """The confidence of the k-th interval with n pairs (or n seeds per side): 1 - 2 P(T <= k - 1).
    Paired, n = 5, k = 1: 1 - 2/32."""
    return 1 - 2 * null_cdf(paired, n, n)[0][k - 1]


def min_p(paired: bool, n1: int, n2: int = 0) -> float:
    """The smallest p the test can give with these seeds (every average or difference on one side)."""
    if n1 == 0 or (not paired and n2 == 0):
        return 1.0
    return min(1.0, 2 * null_cdf(paired, n1, n2)[0][0])


def widest_confidence(paired: bool, n1: int, n2: int = 0) -> float:
    """The confidence of the widest interval these seeds give (k = 1: [min, max] of the averages
    or differences), 1 - the smallest p: the most they allow. Paired, n pairs: 1 - 2 / 2^n."""
    return 1.0 - min_p(paired, n1, n2)


def seeds_to_reject(paired: bool, alpha: float) -> int:
    """The fewest seeds per variant at which the test can give p <= alpha; with Holm over k
    comparisons pass alpha / k (the smallest p is held to it)."""
    n = 1
    while min_p(paired, n, n) > alpha:
        n += 1
    return n


# ---- the two tests ------------------------------------------------------------------------------


def _invert(
    test: str, values: np.ndarray, cdf: Sequence[float], exact: bool, alpha: float, least: float
) -> Inference:
    """p, estimate and interval from the sorted averages / differences and T's null cdf."""
    m = values.size
    p = min(1.0, 2 * min(cdf[int(np.count_nonzero(values <= 0))], cdf[int(np.count_nonzero(values >= 0))]))
    k = kth(cdf, alpha)
    ci = (float(values[k - 1]), float(values[m - k])) if k else None
    conf = 1 - 2 * cdf[k - 1] if k else None
    name = test if exact else test + NORMAL_SUFFIX
    return Inference(name, float(np.median(values)), p, ci, conf, least, alpha)


def signed_rank(d: Sequence[float], *, alpha: float = ALPHA) -> Inference:
    """The Wilcoxon signed-rank test of per-seed differences ``d`` (variant - baseline), the
    Hodges-Lehmann estimate and Tukey's interval."""
    d = np.asarray(d, dtype=float).reshape(-1)
    n = d.size
    if n == 0:
        return Inference(TEST_WILCOXON, None, None, None, None, 1.0, alpha)
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    cdf, exact = null_cdf(True, n)
    return _invert(TEST_WILCOXON, walsh, cdf, exact, alpha, min_p(True, n))


def mann_whitney(x: Sequence[float], y: Sequence[float], *, alpha: float = ALPHA) -> Inference:
    """The Mann-Whitney test of ``x`` (variant) against ``y`` (baseline), the Hodges-Lehmann
    shift and its interval."""
    x = np.asarray(x, dtype=float).reshape(-1)
    y = np.asarray(y, dtype=float).reshape(-1)
    if x.size == 0 or y.size == 0:
        return Inference(TEST_MWU, None, None, None, None, 1.0, alpha)
    diffs = np.sort((x[:, None] - y[None, :]).reshape(-1))
    cdf, exact = null_cdf(False, x.size, y.size)
    return _invert(TEST_MWU, diffs, cdf, exact, alpha, min_p(False, x.size, y.size))


def trimmed_mean_ci(
    values: Sequence[float], *, trim: float = 0.25, alpha: float = ALPHA
) -> tuple[float, float] | None:
    """Yuen's (1974) interval for the trimmed mean (trim 0.25: the IQM): the trimmed mean
    +- t(h - 1) times its winsorized standard error, h = n - 2 floor(trim n) values kept.
    None below 2 kept values. For n < 4 nothing is trimmed and it is Student's t interval."""
    x = np.sort(np.asarray(values, dtype=float).reshape(-1))
    n = x.size
    g = int(trim * n)
    h = n - 2 * g
    if h < 2:
        return None
    w = np.clip(x, x[g], x[n - g - 1])
    se = math.sqrt((n - 1) * float(np.var(w, ddof=1)) / (h * (h - 1)))
    from scipy import stats  # imported where used (a finished sweep's rerun needs none)

    centre = float(stats.trim_mean(x, trim))
    half = float(stats.t.ppf(1 - alpha / 2, h - 1)) * se
    return centre - half, centre + half
