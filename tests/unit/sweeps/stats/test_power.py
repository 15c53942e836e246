"""``ablate power``: seeds for a claim (detect Δ, show equivalence) from a normal model fitted to
a pilot, and the share of pilots in which they are enough.

The power is checked against what it must equal: the test's exact size at Δ = 0 (counted over
every sign vector or split), an independent simulation that runs the test itself, the
brute-force count of every average on the same draws, and, with no spread, the fewest seeds at
which the test can reject at all. The search is checked against a seed-by-seed search, the
crossing against the power on both sides of it, and the share against a simulation of pilots.
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from scipy import stats

from ablate.sweeps.stats import power as pw
from ablate.sweeps.stats import simulation as sim
from ablate.sweeps.stats.equivalence import tost
from ablate.sweeps.stats.inference import kth, mann_whitney, null_cdf, seeds_to_reject, signed_rank
from ablate.sweeps.stats.power import Pilot, answer, fit, needed, seeds_to_detect, seeds_to_show_equivalence
from ablate.sweeps.stats.simulation import DRAWS, claim_power, crossing, equivalence_power, power


def exact_size(paired: bool, n: int, alpha: float) -> float:
    """The test's size on continuous data: 2 P(T <= k - 1), k the largest with that <= alpha,
    T counted over every sign vector of the ranks (paired) or every split (unpaired)."""
    if paired:
        null = [
            sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
            for signs in itertools.product((0, 1), repeat=n)
        ]
    else:
        null = []
        for xs in itertools.combinations(range(2 * n), n):
            null.append(sum(a > b for a in xs for b in range(2 * n) if b not in xs))
    size = 0.0
    for k in itertools.count(1):
        s = 2 * sum(t <= k - 1 for t in null) / len(null)
        if s > alpha:
            return size
        size = s


def averages(paired: bool, x: np.ndarray, y: np.ndarray | None) -> np.ndarray:
    """Every Walsh average (x_i + x_j) / 2, i <= j, or difference x_i - y_j, per row."""
    if paired:
        i, j = np.triu_indices(x.shape[1])
        return (x[:, i] + x[:, j]) / 2
    return (x[:, :, None] - y[:, None, :]).reshape(x.shape[0], -1)


def brute_power(claim: str, paired: bool, n: int, value: float, alpha: float) -> float:
    """The slow path: the claim's rule on every average of ``power``'s own simulated studies."""
    k = kth(null_cdf(paired, n, n)[0], (1 if claim == "difference" else 2) * alpha)
    if k == 0:
        return 0.0
    x, y = sim.studies(paired, n)
    if claim == "difference":
        a = averages(paired, x + value, y)
        ok = ((a <= 0).sum(axis=1) <= k - 1) | ((a >= 0).sum(axis=1) <= k - 1)
    else:
        a = averages(paired, x, y)
        ok = ((a <= -value).sum(axis=1) <= k - 1) & ((a >= value).sum(axis=1) <= k - 1)
    return float(np.count_nonzero(ok)) / x.shape[0]


def seed_by_seed(claim: str, paired: bool, value: float, alpha: float, max_seeds: int) -> int | None:
    """The slow search: the first n, looked at one by one."""
    return next(
        (n for n in range(2, max_seeds + 1) if claim_power(claim, paired, n, value, alpha) >= 0.8), None
    )


def ask(claim: str, pilot: Pilot, value: float, max_seeds: int) -> pw.Detect:
    """The claim's seeds for a pilot at alpha 0.025 (Holm over two comparisons)."""
    if claim == "difference":
        return seeds_to_detect(pilot, effect=value, alpha=0.025, max_seeds=max_seeds)
    return seeds_to_show_equivalence(pilot, margin=value, alpha=0.025, max_seeds=max_seeds)


# ---- no spread: the fewest seeds the test can reject with --------------------------------------


def test_paired_all_equal_differences_need_six_seeds() -> None:
    """Every per-seed difference is -0.5: the smallest signed-rank p is 2/2^n, <= 0.05 from n = 6."""
    p = fit("v", [0.5] * 5, [1.0] * 5, paired=True)
    assert p is not None and p.paired and p.estimate == pytest.approx(-0.5) and p.sd == 0 and p.n == 5
    assert power(True, 5, -math.inf, 0.05) == 0.0  # 2/32 > 0.05: no interval, no rejection
    assert power(True, 6, -math.inf, 0.05) == 1.0
    a = answer(p, effect=0.5, margin=None, target=0.8, alpha=0.05)
    assert a.detect is not None and a.detect.seeds == 6 == seeds_to_reject(True, 0.05)
    assert a.detect.share == 1.0 and a.sigma == 0.0 and a.note and a.equivalence is None


def test_unpaired_all_tied_samples_need_four_seeds() -> None:
    """Unpaired, the smallest p is 2/C(2n, n), <= 0.05 from n = 4."""
    p = fit("v", [0.5] * 5, [1.0] * 5, paired=False)
    assert p is not None and not p.paired and p.estimate == pytest.approx(-0.5) and p.df == 8
    assert power(False, 3, math.inf, 0.05) == 0.0  # 2/20
    assert seeds_to_detect(p, effect=0.5, alpha=0.05).seeds == 4 == seeds_to_reject(False, 0.05)  # 2/70


# ---- the power itself -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("paired", "n", "alpha"), [(True, 8, 0.05), (True, 10, 0.1), (False, 5, 0.05), (False, 4, 0.1)]
)
def test_power_at_no_effect_is_the_exact_size(paired: bool, n: int, alpha: float) -> None:
    size = exact_size(paired, n, alpha)
    assert 0 < size <= alpha
    got = power(paired, n, 0.0, alpha)
    assert got == pytest.approx(size, abs=4 * math.sqrt(size * (1 - size) / DRAWS))


@pytest.mark.parametrize(
    ("paired", "n", "effect"), [(True, 7, 1.0), (True, 9, -0.7), (False, 6, 1.5), (False, 8, -1.0)]
)
def test_power_matches_a_simulation_of_the_test_itself(paired: bool, n: int, effect: float) -> None:
    """An independent simulation (its own generator) that calls signed_rank / mann_whitney."""
    rng = np.random.default_rng(12345)
    draws = 2000
    hits = 0
    for _ in range(draws):
        if paired:
            hits += signed_rank(rng.standard_normal(n) + effect).rejects
        else:
            hits += mann_whitney(rng.standard_normal(n) + effect, rng.standard_normal(n)).rejects
    sim = hits / draws
    got = power(paired, n, effect, 0.05)
    assert 0.1 < got < 0.99  # a case where the power is neither 0 nor 1
    assert got == pytest.approx(sim, abs=4 * math.sqrt(sim * (1 - sim) * (1 / draws + 1 / DRAWS)))
    assert power(paired, n, effect, 0.05) == got  # seeded


@pytest.mark.parametrize(("paired", "n", "margin"), [(True, 12, 0.9), (False, 14, 1.1)])
def test_equivalence_power_matches_a_simulation_of_tost(paired: bool, n: int, margin: float) -> None:
    """sweeps/stats/equivalence.py's rule on independent draws with no effect, at 2 alpha's interval."""
    rng = np.random.default_rng(54321)
    draws = 1500
    hits = sum(
        tost(rng.standard_normal(n), None if paired else rng.standard_normal(n), margin, alpha=0.05)[
            "equivalent"
        ]
        for _ in range(draws)
    )
    sim = hits / draws
    got = equivalence_power(paired, n, margin, 0.05)
    assert 0.1 < got < 0.99
    assert got == pytest.approx(sim, abs=4 * math.sqrt(sim * (1 - sim) * (1 / draws + 1 / DRAWS)))


@pytest.mark.parametrize("claim", ["difference", "equivalence"])
@pytest.mark.parametrize("paired", [True, False])
def test_the_fast_count_is_the_brute_force_count(claim: str, paired: bool) -> None:
    """The same studies, decided from sorted values (O(n log n)) and from every average: equal."""
    for n in (3, 6, 13, 30):
        for value in (-0.6, 0.0, 0.35, 1.2) if claim == "difference" else (0.2, 0.7, 1.6):
            assert claim_power(claim, paired, n, value, 0.05) == brute_power(claim, paired, n, value, 0.05)


@pytest.mark.parametrize("n", [sim.WALSH_SEEDS + 1, 64, sim.MERGE_SEEDS + 30])
def test_the_paired_count_above_walsh_seeds_is_every_pairs_count(n: int) -> None:
    """Above WALSH_SEEDS the paired count searches only the pairs that are not known: the same
    count as every r_i (the merge or search of _ranks) and as every average, pair for pair, on
    the simulated studies and on tied values (a quarter grid: every sum exact, many equal)."""
    rng = np.random.default_rng(n)
    tied = np.sort(rng.integers(-8, 9, (200, n)) / 4.0, axis=1)
    for x in (sim.studies(True, n)[0][:400], tied):
        for cut in (0.0, -0.0, 0.25, -0.5, 0.1, 3.0, -5.0):
            r = sim._ranks(x, (2 * cut - x)[:, ::-1])[:, ::-1]
            every_r = np.maximum(0, r - np.arange(n)).sum(axis=1)
            fast = sim.at_most(x, None, cut)
            assert np.array_equal(fast, every_r)
            assert np.array_equal(sim.at_least(x, None, cut), (averages(True, x, None) >= cut).sum(axis=1))
            if x is tied:  # exact sums: the averages decide alike
                assert np.array_equal(fast, (averages(True, x, None) <= cut).sum(axis=1))


def test_the_null_distributions_give_inferences_k() -> None:
    for paired, ns in ((True, [*range(1, 40), 64, 120]), (False, range(1, 31))):
        for n in ns:
            for alpha in (0.1, 0.05, 0.025, 0.05 / 3, 0.01, 0.0625):
                for claim, level in (("difference", alpha), ("equivalence", 2 * alpha)):
                    assert sim.claim_k(claim, paired, n, alpha) == kth(null_cdf(paired, n, n)[0], level)


def test_equivalence_power_rises_with_seeds_and_the_margin() -> None:
    by_n = [equivalence_power(True, n, 0.6, 0.05) for n in (8, 16, 32, 64)]
    assert by_n == sorted(by_n) and by_n[0] < 0.3 < 0.95 < by_n[-1]
    by_margin = [equivalence_power(False, 20, m, 0.05) for m in (0.3, 0.6, 1.2)]
    assert by_margin == sorted(by_margin) and by_margin[-1] > 0.9
    assert equivalence_power(True, 5, 10.0, 0.025) == 0.0  # at 2 alpha = 0.05, 5 pairs have no interval
    assert equivalence_power(True, 20, 0.0, 0.05) == 0.0  # nothing is inside (-0, +0)


# ---- the search and the crossing -----------------------------------------------------------------


@pytest.mark.parametrize("claim", ["difference", "equivalence"])
@pytest.mark.parametrize("paired", [True, False])
def test_the_search_finds_the_seed_by_seed_answer(claim: str, paired: bool) -> None:
    for value in (0.55, 0.7, 0.9, 1.3, 2.2):
        fast = needed(paired, value, target=0.8, alpha=0.025, max_seeds=70, claim=claim)  # type: ignore[arg-type]
        assert fast == seed_by_seed(claim, paired, value, 0.025, 70), value
    assert needed(True, 0.3, target=0.8, alpha=0.025, max_seeds=30) is None
    assert needed(True, math.inf, target=0.8, alpha=0.01) == seeds_to_reject(True, 0.01) == 8  # 2/256 <= 0.01


def test_the_search_from_any_start_and_under_a_cap() -> None:
    want = seed_by_seed("difference", True, 0.6, 0.05, 80)
    assert want is not None and want > 20
    for start in (2, 10, want - 1, want, 3 * want, 500):
        assert needed(True, 0.6, target=0.8, alpha=0.05, max_seeds=80, start=start) == want
    assert needed(True, 0.6, target=0.8, alpha=0.05, max_seeds=want - 1) is None
    assert needed(True, 0.6, target=0.8, alpha=0.05, max_seeds=want) == want


@pytest.mark.parametrize(
    ("claim", "paired", "n"), [("difference", True, 9), ("difference", False, 25), ("equivalence", True, 30)]
)
def test_the_crossing_is_where_the_power_reaches_the_target(claim: str, paired: bool, n: int) -> None:
    c = crossing(claim, paired, n, 0.05, 0.8)  # type: ignore[arg-type]
    assert (
        claim_power(claim, paired, n, c * (1 - 1e-9), 0.05)
        < 0.8
        <= claim_power(claim, paired, n, c * (1 + 1e-9), 0.05)
    )
    crossing.cache_clear()
    assert crossing(claim, paired, n, 0.05, 0.8, near=c * 1.3) == c  # type: ignore[arg-type]
    assert crossing("difference", True, 5, 0.05, 0.8) == math.inf  # no interval at 5 pairs


# ---- the fitted model ----------------------------------------------------------------------------


def test_fit_keeps_the_tests_estimate_and_the_spread() -> None:
    base = [0.80, 0.82, 0.79, 0.81, 0.83, 0.80]
    var = [0.70, 0.75, 0.72, 0.74, 0.71, 0.73]
    d = [a - b for a, b in zip(var, base, strict=True)]
    p = fit("v", var, base, paired=True)
    walsh = [(d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6)]
    assert p.estimate == pytest.approx(statistics.median(walsh))  # Hodges-Lehmann, as the report's Δ
    assert p.sd == pytest.approx(statistics.stdev(d)) and (p.df, p.n) == (5, 6)
    q = fit("v", var[:4], base, paired=False)
    assert q.estimate == pytest.approx(statistics.median([a - b for a in var[:4] for b in base]))
    pooled = (3 * statistics.variance(var[:4]) + 5 * statistics.variance(base)) / 8
    assert q.sd == pytest.approx(math.sqrt(pooled)) and (q.df, q.n) == (8, 4)
    assert fit("v", [0.5], [0.6], paired=True) is None
    assert fit("v", [0.5], [0.6, 0.7], paired=False) is None


def test_sigma_is_median_unbiased_and_its_limits_cover() -> None:
    """Under the normal model sigma(q) >= sigma holds with probability q: s^2 df / sigma^2 is chi2(df)."""
    df = 4
    unit = {q: Pilot("v", True, 0.0, 1.0, df, df + 1).sigma(q) for q in (0.1, 0.5, 0.9)}
    assert unit[0.1] < unit[0.5] < unit[0.9]
    assert Pilot("v", True, 0.0, 0.3, df, df + 1).sigma(0.5) == pytest.approx(0.3 * unit[0.5])
    s = np.random.default_rng(0).standard_normal((20_000, df + 1)).std(axis=1, ddof=1)
    for q, factor in unit.items():
        assert np.mean(s * factor >= 1.0) == pytest.approx(q, abs=0.015)
    assert unit[0.5] == pytest.approx(math.sqrt(df / stats.chi2.ppf(0.5, df)))


# ---- the answers and their shares ----------------------------------------------------------------


def test_seeds_to_detect_at_a_margin() -> None:
    p = Pilot("v", True, -0.07, 0.02, 6, 7)
    d = seeds_to_detect(p, effect=0.03, alpha=0.025, max_seeds=200)
    assert d.seeds == needed(True, 0.03 / p.sigma(), target=0.8, alpha=0.025, max_seeds=200)
    assert (
        (d.effect, d.target) == (0.03, 0.8) and d.share is not None and 0.6 <= d.share < 1
    )  # 10 seeds: rounds up
    assert seeds_to_detect(p, effect=-0.03, alpha=0.025, max_seeds=200) == d  # a magnitude
    small = seeds_to_detect(p, effect=0.015, alpha=0.025, max_seeds=200)
    assert small.seeds is not None and small.seeds > d.seeds  # a smaller margin needs more seeds
    assert seeds_to_detect(p, effect=0.015, alpha=0.025, max_seeds=small.seeds - 1) == pw.Detect(
        None, None, 0.015, 0.8
    )
    assert seeds_to_detect(p, effect=0.0, alpha=0.025).seeds is None  # nothing to detect
    eq = seeds_to_show_equivalence(p, margin=0.03, alpha=0.025, max_seeds=200)
    assert eq.seeds == needed(
        True, 0.03 / p.sigma(), target=0.8, alpha=0.025, max_seeds=200, claim="equivalence"
    )
    with pytest.raises(ValueError, match="margin must be > 0"):
        seeds_to_show_equivalence(p, margin=0.0, alpha=0.025)


@pytest.mark.parametrize(
    ("claim", "paired", "value"),
    [("difference", True, 0.9), ("equivalence", True, 0.9), ("difference", False, 1.3)],
)
def test_the_share_is_the_share_of_simulated_pilots_whose_answer_is_enough(
    claim: str, paired: bool, value: float
) -> None:
    """Pilots drawn from the model the share assumes (σ = 1: the plug-in σ of the pilot asked),
    each answered as the tool answers (the first n whose crossing lies below value / σ̂, checked
    against the tool on some), counted enough when the power at the true σ reaches the target
    there, or when it is told more than the max."""
    df, cap, sims = (6 if paired else 12), 40, 20_000
    one = Pilot("v", paired, 0.0, 1.0, df, 7).sigma(0.5)
    pilot = Pilot("v", paired, 0.0, 1 / one, df, 7)  # its median-unbiased σ is 1
    stated = ask(claim, pilot, value, cap)
    table = np.array(
        [math.inf, math.inf] + [crossing(claim, paired, n, 0.025, 0.8) for n in range(2, cap + 1)]
    )  # type: ignore[arg-type]
    s = np.sqrt(np.random.default_rng(99).chisquare(df, sims) / df)  # the pilots' s / σ
    limits = value / (s * pilot.sigma() / pilot.sd)  # value / σ̂ of each simulated pilot
    hit = table[None, :] < limits[:, None]
    answers = np.where(hit.any(axis=1), hit.argmax(axis=1), cap + 1)
    for r in range(5):
        q = Pilot("v", paired, 0.0, float(s[r]), df, 7)
        got = ask(claim, q, value, cap).seeds
        assert got == (answers[r] if answers[r] <= cap else None)
    enough = {
        n: claim_power(claim, paired, n, value, 0.025) >= 0.8 for n in set(answers.tolist()) if n <= cap
    }  # type: ignore[arg-type]
    sim = float(np.mean([n > cap or enough[n] for n in answers]))
    assert stated.share is not None and 0.55 < sim < 0.8
    assert stated.share == pytest.approx(sim, abs=4 * math.sqrt(sim * (1 - sim) / sims))
