"""Equivalence within a margin (sweeps/stats/equivalence.py): the two one-sided tests against
brute force, their duality with the 1 - 2 alpha interval, Holm over the family, and what
summarize makes of margins and between-variant comparisons."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ablate.sweeps.stats.equivalence import adjust, tost
from ablate.sweeps.stats.exact import holm
from ablate.sweeps.stats.summary import summarize
from tests.helpers.rows import cell_rows

VALUE = st.sampled_from([-0.03, -0.02, -0.01, -0.005, 0.0, 0.005, 0.01, 0.02, 0.03])


def brute_one_sided(d: list[float], shift: float) -> float:
    """P(W+ <= #{Walsh averages of d - shift >= 0}) over all 2^n sign patterns of the ranks
    1..n: the upper one-sided signed-rank p with ties against, by enumeration."""
    n = len(d)
    walsh = [(d[i] + d[j]) / 2 - shift for i in range(n) for j in range(i, n)]
    count = sum(a >= 0 for a in walsh)
    sums = [
        sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
        for signs in itertools.product((0, 1), repeat=n)
    ]
    return sum(w <= count for w in sums) / 2**n


@settings(max_examples=60, deadline=None)
@given(d=st.lists(VALUE, min_size=1, max_size=9), margin=st.sampled_from([0.01, 0.015, 0.025]))
def test_tost_p_is_the_larger_one_sided_p_and_equivalent_iff_the_interval_is_inside(
    d: list[float], margin: float
) -> None:
    e = tost(d, None, margin, alpha=0.05)
    low = brute_one_sided([-x for x in d], margin)  # Δ <= -m rejected: the flipped upper test
    high = brute_one_sided(d, margin)
    assert e["p"] == pytest.approx(min(1.0, max(low, high)))
    inside = e["ci"] is not None and -margin < e["ci"][0] and e["ci"][1] < margin
    assert e["equivalent"] == inside == (e["p"] <= 0.05)


def test_unpaired_tost_and_the_seeds_it_needs() -> None:
    x, y = [0.80, 0.81, 0.82, 0.83, 0.84, 0.85], [0.80, 0.815, 0.82, 0.835, 0.84, 0.85]
    e = tost(x, y, 0.05, alpha=0.05)
    assert e["equivalent"] and -0.05 < e["ci"][0] < e["ci"][1] < 0.05
    assert e["confidence"] >= 0.90
    assert not tost(x, y, 0.004, alpha=0.05)["equivalent"]  # the differences reach ±0.004
    few = tost([0.0, 0.0], None, 0.05)  # 2 pairs cannot reach a 90 % interval
    assert few["ci"] is None and not few["equivalent"] and few["p"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="margin must be > 0"):
        tost([0.0], None, 0.0)


def test_holm_over_the_equivalence_family() -> None:
    tests = {"a": {"p": 0.01}, "b": {"p": 0.04}, "c": {"p": None}}
    adjust(tests)
    assert [tests[n]["p_holm"] for n in "abc"] == holm([0.01, 0.04, None]) == [0.02, 0.04, None]
    assert tests["a"]["equivalent"] and tests["b"]["equivalent"] and not tests["c"]["equivalent"]


def test_summarize_adds_equivalence_and_between_variant_comparisons() -> None:
    rng = np.random.default_rng(0)
    base = list(np.round(0.8 + 0.01 * rng.standard_normal(8), 4))
    near = [
        round(b + d, 4)
        for b, d in zip(base, [0.001, -0.002, 0.0, 0.002, -0.001, 0.001, 0.0, -0.001], strict=True)
    ]
    far = [round(b - 0.1, 4) for b in base]
    s = summarize(
        cell_rows({"base": base, "near": near, "far": far}),
        experiment="e",
        metric="test/acc",
        direction="maximize",
        baseline="base",
        variants=["base", "near", "far"],
        compare=[("near", "far")],
        margins={"near": 0.01, "far": 0.01, "near vs far": 0.01},
    )
    assert s["methods"]["multiple_comparisons"]["k"] == 3  # one Holm family: 2 + 1 pair
    pair = s["comparisons"]["near vs far"]
    assert pair["paired"] and pair["delta"] == pytest.approx(0.1, abs=0.003) and pair["p_holm"] <= 0.05
    eq = s["equivalence"]
    assert eq["near"]["equivalent"] and not eq["far"]["equivalent"] and not eq["near vs far"]["equivalent"]
    assert eq["near"]["p_holm"] == holm([eq[n]["p"] for n in ("near", "far", "near vs far")])[0]
