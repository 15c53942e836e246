"""``ablate power``: seeds needed for a target power, from a normal model fitted to a pilot.

The power is checked against what it must equal: the test's exact size at Δ = 0 (counted over
every sign vector or split), an independent simulation that runs the test itself, and, with no
spread, the fewest seeds at which the test can reject at all.
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from scipy import stats

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.report import power_table as table
from ablate.sweeps.report.power_table import pilots
from ablate.sweeps.stats.inference import mann_whitney, seeds_to_reject, signed_rank
from ablate.sweeps.stats.power import DRAWS, Pilot, answer, fit, needed, power
from ablate.sweeps.stats.rows import CellRow
from tests.helpers.configs import TINY_BASE
from tests.helpers.rows import cell_rows


def spec(variants: dict) -> object:
    return spec_from_dict({"name": "p", "base": TINY_BASE, "variants": {"baseline": {}, **variants}})


def rows(base: list[float], **variants: list[float]) -> list[CellRow]:
    return cell_rows({"baseline": base, **variants})


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


# ---- no spread: the fewest seeds the test can reject with --------------------------------------


def test_paired_all_equal_differences_need_six_seeds() -> None:
    """Every per-seed difference is -0.5: the smallest signed-rank p is 2/2^n, <= 0.05 from n = 6."""
    (p,) = pilots(spec({"v": {"model.pe": "none"}}), rows([1.0] * 5, v=[0.5] * 5))
    assert p.paired and p.estimate == pytest.approx(-0.5) and p.sd == 0 and p.n == 5
    assert power(True, 5, -math.inf, 0.05) == 0.0  # 2/32 > 0.05: no interval, no rejection
    assert power(True, 6, -math.inf, 0.05) == 1.0
    a = answer(p, delta=None, target=0.8, alpha=0.05)
    assert a.seeds == 6 == seeds_to_reject(True, 0.05) and a.seeds_range == (6, 6)
    assert a.delta == pytest.approx(-0.5) and a.sigma == 0.0 and a.note


def test_unpaired_all_tied_samples_need_four_seeds() -> None:
    """A variant with its own data seed is unpaired: the smallest p is 2/C(2n, n), <= 0.05 from n = 4."""
    (p,) = pilots(spec({"v": {"data.seed": 1}}), rows([1.0] * 5, v=[0.5] * 5))
    assert not p.paired and p.estimate == pytest.approx(-0.5) and p.df == 8
    assert power(False, 3, math.inf, 0.05) == 0.0  # 2/20
    a = answer(p, delta=None, target=0.8, alpha=0.05)
    assert a.seeds == 4 == seeds_to_reject(False, 0.05)  # 2/70


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


def test_needed_is_the_first_n_reaching_the_target() -> None:
    for paired, effect in ((True, 1.0), (False, 1.2)):
        n = needed(paired, effect, target=0.8, alpha=0.05)
        assert n is not None
        assert power(paired, n, effect, 0.05) >= 0.8
        assert all(power(paired, m, effect, 0.05) < 0.8 for m in range(2, n))
        assert needed(paired, effect, target=0.8, alpha=0.05, max_seeds=n - 1) is None
    assert needed(True, math.inf, target=0.8, alpha=0.01) == seeds_to_reject(True, 0.01) == 8  # 2/256 <= 0.01


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


def test_answer_range_curve_and_given_delta() -> None:
    p = Pilot("v", True, -0.07, 0.02, 5, 6)
    a = answer(p, delta=None, target=0.8, alpha=0.05)
    assert a.delta == -0.07 and a.sigma == pytest.approx(p.sigma()) and a.note is None
    low, high = a.seeds_range
    assert a.seeds is not None and low is not None and high is not None
    assert low <= a.seeds <= high  # smaller σ (its 10 % limit) needs no more seeds
    assert a.seeds == needed(True, -0.07 / p.sigma(), target=0.8, alpha=0.05)
    assert all(m <= a.seeds for m, _ in a.curve)
    assert a.curve == [(m, power(True, m, -0.07 / p.sigma(), 0.05)) for m, _ in a.curve]
    small = answer(p, delta=-0.02, target=0.8, alpha=0.05)
    assert small.delta == -0.02 and small.seeds > a.seeds  # a smaller Δ needs more seeds
    none = answer(p, delta=0.0, target=0.8, alpha=0.05)
    assert none.seeds is None and none.seeds_range == (None, None) and none.curve == [] and none.note


def test_power_table_holds_each_comparison_to_alpha_over_k(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two comparisons: each at alpha / 2, so equal differences need the seeds of 0.025 (7)."""
    found = rows([1.0] * 5, v=[0.5] * 5, w=[0.25] * 5)
    monkeypatch.setattr(table, "collect_rows", lambda store: found)
    sp = spec({"v": {"model.pe": "none"}, "w": {"data.seed": 2}})
    out = table.power_table(sp, None, delta=None, target=0.8, alpha=0.05, max_seeds=50)
    assert out["comparisons"] == 2 and out["alpha_per_comparison"] == 0.025
    v, w = out["variants"]["v"], out["variants"]["w"]
    assert v["test"] == "signed-rank" and w["test"] == "mann-whitney"
    assert v["seeds_needed"] == seeds_to_reject(True, 0.025) == 7  # 2/128 <= 0.025 < 2/64
    assert w["seeds_needed"] == seeds_to_reject(False, 0.025) == 5  # 2/252 <= 0.025 < 2/70
    assert v["delta"] == pytest.approx(-0.5) and w["delta"] == pytest.approx(-0.75)
    assert v["pilot_seeds"] == 5 and v["seeds_range_80"] == [7, 7]
