"""The primary tests (sweeps/stats/inference.py) against brute-force enumeration and scipy.

The brute force below is written plainly (itertools over every sign vector or every split,
exact Fractions, Walsh averages by a double loop), never with the functions under test.
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from scipy import stats

from ablate.sweeps.stats import inference
from ablate.sweeps.stats.inference import (
    confidence,
    kth,
    mann_whitney,
    min_p,
    mwu_cdf,
    null_cdf,
    seeds_to_reject,
    signed_rank,
    signed_rank_cdf,
    trimmed_mean_ci,
)
from ablate.sweeps.stats.summary import summarize
from tests.helpers.rows import cell_rows

# Hypothesis caches constants it reads from the sources under its home folder: keep the
# checkout clean (as tests/property/test_fuzz.py).
_HOME = tempfile.TemporaryDirectory(prefix="ablate-hypothesis-")
set_hypothesis_home_dir(_HOME.name)
FAST = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow],
)

# ---- brute force, written plainly ---------------------------------------------------------------


def walsh(d: list[float]) -> list[float]:
    return [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]


def pairwise(x: list[float], y: list[float]) -> list[float]:
    return [a - b for a in x for b in y]


def signed_rank_null(n: int) -> list[int]:
    """W+ of every one of the 2^n sign vectors on the ranks 1..n."""
    return [
        sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
        for signs in itertools.product((0, 1), repeat=n)
    ]


def mwu_null(n1: int, n2: int) -> list[int]:
    """U = #{x > y} of every one of the C(n1 + n2, n1) splits of the ranks 1..n1+n2."""
    out = []
    for xs in itertools.combinations(range(n1 + n2), n1):
        ys = [r for r in range(n1 + n2) if r not in xs]
        out.append(sum(a > b for a in xs for b in ys))
    return out


def two_sided(null: list[int], observed: int) -> Fraction:
    """min(1, 2 min(P(T <= t), P(T >= t))) over the enumerated null."""
    low = sum(t <= observed for t in null)
    high = sum(t >= observed for t in null)
    return min(Fraction(1), Fraction(2 * min(low, high), len(null)))


def brute_signed_rank_p(d: list[float]) -> Fraction:
    """Tie-free d: W+ = the sum of the ranks of |d| of the positive d, against every sign vector."""
    order = sorted(range(len(d)), key=lambda i: abs(d[i]))
    rank = {i: r + 1 for r, i in enumerate(order)}
    w_obs = sum(rank[i] for i in range(len(d)) if d[i] > 0)
    return two_sided(signed_rank_null(len(d)), w_obs)


def brute_mwu_p(x: list[float], y: list[float]) -> Fraction:
    """Tie-free samples: U = #{x_i > y_j} against every split of the pooled values."""
    pooled = [*x, *y]
    n1 = len(x)
    u_obs = sum(a > b for a in x for b in y)
    null = []
    for xs in itertools.combinations(range(len(pooled)), n1):
        ys = [i for i in range(len(pooled)) if i not in xs]
        null.append(sum(pooled[i] > pooled[j] for i in xs for j in ys))
    return two_sided(null, u_obs)


def brute_interval(
    values: list[float], null: list[int], alpha: float
) -> tuple[tuple[float, float] | None, float | None]:
    """[V_(k), V_(M+1-k)], k the largest with 2 P(T <= k - 1) <= alpha, and its confidence."""
    values = sorted(values)
    k = 0
    while k < len(values) and 2 * Fraction(sum(t <= k for t in null), len(null)) <= alpha:
        k += 1
    if k == 0:
        return None, None
    conf = 1 - 2 * Fraction(sum(t <= k - 1 for t in null), len(null))
    return (values[k - 1], values[len(values) - k]), float(conf)


def excludes_zero(ci: tuple[float, float] | list[float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def tie_free(rng: np.random.Generator, n: int, shift: float = 0.0) -> list[float]:
    """Continuous draws: no ties, no zero, no zero Walsh average (almost surely)."""
    return [float(v) for v in rng.normal(shift, 1.0, n)]


# ---- null distributions -------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(0, 9))
def test_signed_rank_cdf_counts_every_sign_vector(n: int) -> None:
    null = signed_rank_null(n)
    expected = [sum(t <= w for t in null) / 2**n for w in range(n * (n + 1) // 2 + 1)]
    assert signed_rank_cdf(n) == pytest.approx(expected, abs=1e-15)
    assert signed_rank_cdf(n)[-1] == 1.0


@pytest.mark.parametrize(("n1", "n2"), [(1, 1), (1, 4), (3, 2), (3, 3), (4, 5), (5, 5), (2, 7)])
def test_mwu_cdf_counts_every_split(n1: int, n2: int) -> None:
    null = mwu_null(n1, n2)
    assert len(null) == comb(n1 + n2, n1)
    expected = [sum(t <= u for t in null) / len(null) for u in range(n1 * n2 + 1)]
    assert mwu_cdf(n1, n2) == pytest.approx(expected, abs=1e-15)
    assert mwu_cdf(n1, n2) == mwu_cdf(n2, n1)  # U and n1 n2 - U: the same counts


def test_kth_is_the_largest_order_statistic_within_alpha() -> None:
    cdf = [0.01, 0.02, 0.03, 0.2, 1.0]
    assert kth(cdf, 0.04) == 2  # 2 P(T <= 1) = 0.04 <= 0.04 (equality counts), 2 P(T <= 2) > 0.04
    assert kth(cdf, 0.06) == 3
    assert kth(cdf, 0.019) == 0  # even k = 1 exceeds alpha
    assert kth(cdf, 2.0) == len(cdf)


# ---- the paired test: brute force and scipy -----------------------------------------------------


@pytest.mark.parametrize("n", range(1, 8))
@pytest.mark.parametrize("seed", range(4))
def test_signed_rank_equals_enumeration_of_all_sign_flips(n: int, seed: int) -> None:
    d = tie_free(np.random.default_rng([seed, n]), n, shift=0.4 * seed)
    res = signed_rank(d)
    assert res.test == "signed-rank"
    assert res.p == pytest.approx(float(brute_signed_rank_p(d)), rel=1e-12)
    assert res.estimate == pytest.approx(statistics.median(walsh(d)), rel=1e-12)
    assert res.min_p == pytest.approx(2 / 2**n if n else 1.0)
    null = signed_rank_null(n)
    for alpha in (0.05, 0.1, 0.25):
        ci, conf = brute_interval(walsh(d), null, alpha)
        got = signed_rank(d, alpha=alpha)
        assert got.ci == (None if ci is None else pytest.approx(ci, rel=1e-12))
        assert got.confidence == (None if conf is None else pytest.approx(conf, rel=1e-12))
        assert got.p == res.p and got.alpha == alpha
        # the mirror image: same p, negated estimate and interval
        mirror = signed_rank([-v for v in d], alpha=alpha)
        assert mirror.p == pytest.approx(got.p, rel=1e-12)
        assert mirror.estimate == pytest.approx(-got.estimate, rel=1e-12)
        if ci is not None:
            assert mirror.ci == pytest.approx((-ci[1], -ci[0]), rel=1e-12)


@pytest.mark.parametrize("n", [5, 6, 7])
def test_tukey_interval_is_the_inverted_test(n: int) -> None:
    """theta lies outside the interval exactly when the test rejects d - theta; probe every gap
    between consecutive Walsh averages (and beyond both ends)."""
    d = tie_free(np.random.default_rng(n), n, shift=1.0)
    alpha = 0.1
    ci = signed_rank(d, alpha=alpha).ci
    assert ci is not None
    a = sorted(walsh(d))
    probes = [a[0] - 1, *((lo + hi) / 2 for lo, hi in itertools.pairwise(a)), a[-1] + 1]
    for theta in probes:
        outside = theta < ci[0] or theta > ci[1]
        assert signed_rank([v - theta for v in d], alpha=alpha).rejects == outside


@pytest.mark.parametrize("n", [1, 3, 6, 9, 12, 20, 30])
def test_signed_rank_matches_scipy_exact(n: int) -> None:
    for seed in range(3):
        d = tie_free(np.random.default_rng([n, seed, 1]), n, shift=0.5)
        assert signed_rank(d).p == pytest.approx(stats.wilcoxon(d, method="exact").pvalue, rel=1e-10)


def test_signed_rank_normal_above_the_exact_size(monkeypatch: pytest.MonkeyPatch) -> None:
    d = tie_free(np.random.default_rng(7), 40, shift=0.3)
    exact = signed_rank(d)
    monkeypatch.setattr(inference, "EXACT_WILCOXON_N", 10)
    approx = signed_rank(d)
    assert exact.test == "signed-rank" and approx.test == "signed-rank-normal"
    ref = stats.wilcoxon(d, method="approx", correction=True).pvalue
    assert approx.p == pytest.approx(ref, rel=1e-9)
    assert approx.p == pytest.approx(exact.p, abs=0.005)  # close to the exact one at n = 40
    assert approx.confidence is not None and approx.confidence >= 0.95
    assert approx.estimate == exact.estimate


# ---- the unpaired test: brute force and scipy ---------------------------------------------------


@pytest.mark.parametrize(("n1", "n2"), [(1, 1), (1, 3), (2, 2), (3, 2), (3, 4), (4, 4), (5, 3), (5, 5)])
@pytest.mark.parametrize("seed", range(3))
def test_mann_whitney_equals_enumeration_of_all_splits(n1: int, n2: int, seed: int) -> None:
    rng = np.random.default_rng([seed, n1, n2])
    x, y = tie_free(rng, n1, shift=0.7 * seed), tie_free(rng, n2)
    res = mann_whitney(x, y)
    assert res.test == "mann-whitney"
    assert res.p == pytest.approx(float(brute_mwu_p(x, y)), rel=1e-12)
    assert res.estimate == pytest.approx(statistics.median(pairwise(x, y)), rel=1e-12)
    assert res.min_p == pytest.approx(min(1.0, 2 / comb(n1 + n2, n1)))
    assert res.p == pytest.approx(stats.mannwhitneyu(x, y, method="exact").pvalue, rel=1e-10)
    null = mwu_null(n1, n2)
    for alpha in (0.05, 0.1, 0.25):
        ci, conf = brute_interval(pairwise(x, y), null, alpha)
        got = mann_whitney(x, y, alpha=alpha)
        assert got.ci == (None if ci is None else pytest.approx(ci, rel=1e-12))
        assert got.confidence == (None if conf is None else pytest.approx(conf, rel=1e-12))
    swapped = mann_whitney(y, x)
    assert swapped.p == pytest.approx(res.p, rel=1e-12)
    assert swapped.estimate == pytest.approx(-res.estimate, rel=1e-12)


@pytest.mark.parametrize(("n1", "n2"), [(6, 9), (10, 10), (12, 7)])
def test_mann_whitney_matches_scipy_exact(n1: int, n2: int) -> None:
    rng = np.random.default_rng([n1, n2])
    x, y = tie_free(rng, n1, shift=0.8), tie_free(rng, n2)
    assert mann_whitney(x, y).p == pytest.approx(stats.mannwhitneyu(x, y, method="exact").pvalue, rel=1e-10)


def test_mann_whitney_normal_above_the_exact_size(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    x, y = tie_free(rng, 30, shift=0.5), tie_free(rng, 25)
    exact = mann_whitney(x, y)
    monkeypatch.setattr(inference, "EXACT_MWU_CELLS", 10)
    approx = mann_whitney(x, y)
    assert exact.test == "mann-whitney" and approx.test == "mann-whitney-normal"
    ref = stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=True).pvalue
    assert approx.p == pytest.approx(ref, rel=1e-9)
    assert approx.p == pytest.approx(exact.p, abs=0.005)


# ---- ties count against rejection ---------------------------------------------------------------


def test_zero_differences_count_against_rejection() -> None:
    """d = (0.5, 0, 0.5, 0, 0.5): the two zeros give 3 Walsh averages equal to 0 (i <= j over
    them), all others positive: p = 2 P(W+ <= 3) over the 32 sign vectors of n = 5."""
    d = [0.5, 0.0, 0.5, 0.0, 0.5]
    assert sum(a == 0 for a in walsh(d)) == 3 and min(walsh(d)) == 0
    expected = Fraction(2 * sum(t <= 3 for t in signed_rank_null(5)), 32)
    assert expected == Fraction(10, 32)  # W+ <= 3: {}, {1}, {2}, {3}, {1, 2}
    assert signed_rank(d).p == pytest.approx(float(expected))
    assert signed_rank([0.0] * 4).p == 1.0 and signed_rank([0.0] * 4).estimate == 0.0
    assert signed_rank([0.5] * 5).p == pytest.approx(2 / 32)  # every average positive
    # unpaired, all tied within each side and separated: every difference one sign
    assert mann_whitney([0.5] * 5, [1.0] * 5).p == pytest.approx(2 / 252)
    assert mann_whitney([0.7] * 3, [0.7] * 4).p == 1.0


GRID = st.sampled_from([k / 8 for k in range(-8, 9)])


@FAST
@given(d=st.lists(GRID, min_size=1, max_size=9), data=st.data())
def test_ties_are_conservative_against_any_vanishing_jitter(d: list[float], data: st.DataObject) -> None:
    """Nonzero Walsh averages of multiples of 1/8 are at least 1/16 from 0, so a jitter below
    1e-6 only moves the averages at 0; they then fall on either side, and p can only drop."""
    jitter = data.draw(st.lists(st.floats(-1e-6, 1e-6), min_size=len(d), max_size=len(d)))
    moved = [v + e for v, e in zip(d, jitter, strict=True)]
    assert signed_rank(moved).p <= signed_rank(d).p
    y = data.draw(st.lists(GRID, min_size=1, max_size=6))
    assert mann_whitney(moved, y).p <= mann_whitney(d, y).p


# ---- pinned exact cases --------------------------------------------------------------------------


def brute_min_p(paired: bool, n: int) -> Fraction:
    """The smallest p: every sign agreeing, 2 / 2^n paired, 2 / C(2n, n) unpaired (n per side)."""
    return min(Fraction(1), Fraction(2, 2**n) if paired else Fraction(2, comb(2 * n, n)))


def test_five_pairs_cannot_reach_95_percent() -> None:
    assert confidence(True, 5) == 1 - 2 / 32
    assert confidence(True, 6) == 1 - 2 / 64
    assert confidence(False, 4) == 1 - 2 / 70  # unpaired: n seeds per side
    d = tie_free(np.random.default_rng(0), 5, shift=3.0)
    res = signed_rank(d)
    assert all(v > 0 for v in d)  # every sign agrees: the smallest p these seeds give
    assert res.ci is None and res.confidence is None and not res.rejects
    assert res.min_p == 2 / 32 == res.p
    six = signed_rank([*d, 3.0])
    assert six.ci == (min([*d, 3.0]), max([*d, 3.0])) and six.confidence == 1 - 2 / 64 and six.rejects


@pytest.mark.parametrize(
    ("paired", "alpha", "listed"),
    [
        (True, 0.05, 6),
        (True, 0.025, 7),
        (True, 0.05 / 3, 7),
        (True, 0.0125, 8),
        (True, 0.01, 8),
        (False, 0.05, 4),
        (False, 0.025, 5),  # 2/70 > 0.025 >= 2/252
        (False, 0.01, 5),
    ],
)
def test_seeds_to_reject_from_the_smallest_p(paired: bool, alpha: float, listed: int) -> None:
    computed = next(n for n in range(1, 50) if brute_min_p(paired, n) <= alpha)
    assert computed == listed  # the listed value, checked against the counting
    assert seeds_to_reject(paired, alpha) == computed
    assert min_p(paired, computed, computed) == pytest.approx(float(brute_min_p(paired, computed)))
    assert min_p(paired, computed - 1, computed - 1) > alpha


def test_min_p_and_null_cdf_edges() -> None:
    assert min_p(True, 0) == 1.0 and min_p(False, 3, 0) == 1.0 and min_p(True, 1) == 1.0
    assert min_p(False, 3, 7) == pytest.approx(2 / comb(10, 3))
    cdf, exact = null_cdf(True, 5)
    assert exact and len(cdf) == 16 and cdf[0] == 1 / 32
    cdf, exact = null_cdf(False, 3, 4)
    assert exact and len(cdf) == 13 and cdf[0] == 1 / 35
    assert signed_rank([]).p is None and mann_whitney([], [1.0]).p is None


# ---- Yuen's interval -----------------------------------------------------------------------------


def test_trimmed_mean_ci_is_yuen() -> None:
    x = [0.3, 0.9, 0.5, 0.95, 0.2, 1.0, 0.7, 0.8, 0.85]  # n = 9: g = 2, h = 5
    s = sorted(x)
    w = [min(max(v, s[2]), s[6]) for v in x]  # winsorized at the 3rd and 7th values
    mean_w = sum(w) / 9
    var_w = sum((v - mean_w) ** 2 for v in w) / 8
    se = (8 * var_w / (5 * 4)) ** 0.5
    centre = sum(s[2:7]) / 5
    half = stats.t.ppf(0.975, 4) * se
    assert trimmed_mean_ci(x) == pytest.approx((centre - half, centre + half), rel=1e-12)
    # n < 4: nothing trimmed, Student's t interval
    small = [0.2, 0.5, 0.6]
    ref = stats.t.interval(0.9, 2, loc=np.mean(small), scale=stats.sem(small))
    assert trimmed_mean_ci(small, alpha=0.1) == pytest.approx(ref, rel=1e-12)
    assert trimmed_mean_ci([0.5]) is None


# ---- the interval excludes 0 exactly when p <= alpha --------------------------------------------

TIED = st.sampled_from([0.5, 0.75, 1.0])
VALUE = st.one_of(TIED, st.floats(0.0, 1.0, allow_nan=False), st.sampled_from([k / 8 for k in range(9)]))
ALPHAS = st.sampled_from([0.05, 0.1, 0.2, 0.05 / 3, 0.01, 0.25])


def check_duality(res: inference.Inference, alpha: float) -> None:
    assert res.p is not None
    assert excludes_zero(res.ci) == (res.p <= alpha) == res.rejects
    if res.ci is None:
        assert res.p > alpha and res.min_p > alpha and res.confidence is None
    else:
        assert res.ci[0] <= res.estimate <= res.ci[1]
        assert res.confidence is not None and 1 - alpha <= res.confidence <= 1
    assert res.min_p <= res.p <= 1


@FAST
@given(x=st.lists(VALUE, min_size=1, max_size=12), y=st.data(), alpha=ALPHAS)
def test_paired_interval_excludes_zero_iff_p_within_alpha(
    x: list[float], y: st.DataObject, alpha: float
) -> None:
    base = y.draw(st.lists(VALUE, min_size=len(x), max_size=len(x)))
    check_duality(signed_rank([a - b for a, b in zip(x, base, strict=True)], alpha=alpha), alpha)


@FAST
@given(x=st.lists(VALUE, min_size=1, max_size=10), y=st.lists(VALUE, min_size=1, max_size=10), alpha=ALPHAS)
def test_unpaired_interval_excludes_zero_iff_p_within_alpha(
    x: list[float], y: list[float], alpha: float
) -> None:
    check_duality(mann_whitney(x, y, alpha=alpha), alpha)


@FAST
@given(
    base=st.lists(VALUE, min_size=1, max_size=9),
    v1=st.lists(VALUE, min_size=1, max_size=9),
    v2=st.lists(VALUE, min_size=1, max_size=9),
    own_data=st.booleans(),
    looks=st.sampled_from([1, 3]),
    alpha=st.sampled_from([0.05, 0.1, 0.2]),
)
def test_summary_interval_excludes_zero_iff_deciding_p_within_alpha(
    base: list[float], v1: list[float], v2: list[float], own_data: bool, looks: int, alpha: float
) -> None:
    """Through summarize: v1 (and v2 without its own data seed) is paired on the seeds it shares
    with the baseline (every list starts at seed 0), else unpaired; with looks > 1 the interval
    is at alpha / looks and p_seq decides."""
    rows = cell_rows({"base": base, "v1": v1, "v2": v2})
    s = summarize(
        rows,
        experiment="e",
        metric="test/acc",
        direction="maximize",
        baseline="base",
        variants=["base", "v1", "v2"],
        overrides={"v2": {"data.seed": 1}} if own_data else None,
        alpha=alpha,
        looks=looks,
    )
    for name in ("v1", "v2"):
        v = s["variants"][name]
        assert v["paired"] == (not (own_data and name == "v2"))
        deciding = v["p_seq"] if looks > 1 else v["p_value"]
        if looks > 1:
            assert deciding == min(1.0, looks * v["p_value"])
        else:
            assert v["p_seq"] is None
        assert excludes_zero(v["ci"]) == (deciding <= alpha)
        assert v["p_holm"] >= deciding
        if v["p_holm"] <= alpha:  # a decided comparison always shows an interval without 0
            assert excludes_zero(v["ci"])
        if v["ci"] is not None:
            assert v["ci_confidence"] >= 1 - alpha / looks
