"""Statistics against hand-computed values on fixed numbers."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from ablate.sweeps.stats.exact import holm
from ablate.sweeps.stats.inference import seeds_to_reject
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import VARIANT_KEYS, summarize, variant_stats
from tests.helpers.rows import cell_row

BASE = [0.9, 0.92, 0.95, 0.97, 0.99]
LOW = [0.5, 0.52, 0.49, 0.51, 0.48]


def test_descriptive_stats_by_hand() -> None:
    st = variant_stats(LOW, None)
    # sorted: 0.48 0.49 0.50 0.51 0.52; linear percentiles of 5 values fall on elements.
    assert st["n"] == 5
    assert st["median"] == pytest.approx(0.50)
    assert st["q1"] == pytest.approx(0.49)
    assert st["q3"] == pytest.approx(0.51)
    assert (st["min"], st["max"]) == (pytest.approx(0.48), pytest.approx(0.52))
    assert st["mean"] == pytest.approx(0.50)
    assert st["std"] == pytest.approx(math.sqrt(0.001 / 4))  # squared deviations sum to 0.001
    assert st["delta_median"] is None and st["ci"] is None and st["p_value"] is None
    assert st["delta"] is None and st["test"] is None and st["paired"] is None


def test_quartiles_interpolate_linearly() -> None:
    st = variant_stats([1.0, 2.0, 3.0, 4.0], None)
    assert (st["q1"], st["median"], st["q3"]) == (1.75, 2.5, 3.25)


def test_full_separation_against_baseline() -> None:
    st = variant_stats(LOW, BASE)
    assert st["test"] == "mann-whitney" and st["paired"] is False
    assert st["delta_median"] == pytest.approx(0.50 - 0.95)
    # Exact two-sided U test, U = 0: only 1 of C(10, 5) = 252 orderings is as extreme per side.
    assert st["p_value"] == pytest.approx(2 / 252)
    assert st["p_improve"] == 0.0
    diffs = sorted(a - b for a in LOW for b in BASE)  # the 25 differences, all negative
    assert st["delta"] == pytest.approx(statistics.median(diffs))  # Hodges-Lehmann shift
    # U's null for 5 vs 5 counts 1, 1, 2, 3 arrangements at u = 0..3 (partitions of u into at
    # most 5 parts of at most 5): 2 P(U <= 2) = 8/252 <= 0.05 < 2 P(U <= 3) = 14/252, so k = 3.
    assert st["ci"] == [pytest.approx(diffs[2]), pytest.approx(diffs[22])]
    assert st["ci_confidence"] == pytest.approx(1 - 8 / 252)
    lo, hi = st["ci"]
    assert lo <= st["delta"] <= hi < 0  # excludes 0, as p <= 0.05 says

    rev = variant_stats(BASE, LOW)
    assert rev["p_improve"] == 1.0
    assert rev["p_value"] == pytest.approx(2 / 252)
    assert rev["ci"] == [pytest.approx(-diffs[22]), pytest.approx(-diffs[2])]


def test_interval_level_follows_alpha() -> None:
    """At alpha = 0.1: with 5 and 7 arrangements at u = 4 and 5, 2 P(U <= 4) = 24/252 <= 0.1 <
    2 P(U <= 5) = 38/252, so k = 6: a narrower interval."""
    diffs = sorted(a - b for a in LOW for b in BASE)
    st = variant_stats(LOW, BASE, alpha=0.1)
    assert st["ci"] == [pytest.approx(diffs[5]), pytest.approx(diffs[19])]
    assert st["ci_confidence"] == pytest.approx(1 - 24 / 252)
    assert st["p_value"] == variant_stats(LOW, BASE)["p_value"]  # p does not depend on alpha


def test_ties_give_half() -> None:
    st = variant_stats([0.7, 0.7, 0.7], [0.7, 0.7, 0.7])
    assert st["p_improve"] == 0.5
    assert st["delta_median"] == 0.0 and st["delta"] == 0.0
    assert st["ci"] is None  # 3 vs 3: the smallest p is 2/20 > 0.05
    assert st["p_value"] == 1.0  # every difference is 0: ties count against rejection


def test_partial_overlap_p_improve() -> None:
    st = variant_stats([1.0, 3.0], [1.0, 2.0, 3.0])
    # x=1: vs 1 tie, vs 2 lose, vs 3 lose -> 0.5; x=3: win, win, tie -> 2.5; U = 3 of 6
    assert st["p_improve"] == pytest.approx(0.5)
    st = variant_stats([2.5, 3.0], [1.0, 2.0, 3.0])
    # x=2.5: 2 wins; x=3: 2 wins + tie -> U = 4.5 of 6
    assert st["p_improve"] == pytest.approx(0.75)


def test_minimize_flips_p_improve() -> None:
    assert variant_stats(LOW, BASE, direction="minimize")["p_improve"] == 1.0
    assert variant_stats(BASE, LOW, direction="minimize")["p_improve"] == 0.0
    st = variant_stats([2.5, 3.0], [1.0, 2.0, 3.0], direction="minimize")
    assert st["p_improve"] == pytest.approx(0.25)
    # delta keeps its sign convention (variant - baseline) in both directions
    assert variant_stats(LOW, BASE, direction="minimize")["delta_median"] == pytest.approx(-0.45)


def test_small_samples_and_bad_input() -> None:
    st = variant_stats([0.8], [0.6, 0.7])
    assert st["std"] is None and st["ci"] is None and st["iqm_ci"] is None
    assert st["p_value"] == pytest.approx(2 / 3)  # 1 vs 2, both differences positive: 2 P(U <= 0) = 2/3
    assert st["delta_median"] == pytest.approx(0.15)
    assert st["p_improve"] == 1.0
    empty = variant_stats([], [0.6, 0.7])
    assert empty["n"] == 0 and empty["median"] is None and empty["p_value"] is None
    with pytest.raises(ValueError, match="finite"):
        variant_stats([0.5, float("nan")], None)
    with pytest.raises(ValueError, match="direction"):
        variant_stats([0.5], None, direction="up")


def _row(
    variant: str, seed: int, acc: float | None, *, state: str = "complete", diverged: bool = False
) -> CellRow:
    return cell_row(variant, seed, acc, state=state, diverged=diverged, wall_s=1.0, trial=seed)


def _rows() -> list[CellRow]:
    rows = [_row("base", s, v) for s, v in enumerate(BASE)]
    rows += [_row("no_pe", s, v) for s, v in enumerate(LOW[:3])]
    rows.append(_row("no_pe", 3, 0.2, diverged=True))  # diverged with a value: kept as is
    rows.append(_row("no_pe", 4, None, diverged=True))  # diverged, NaN metric: worst value (0.0)
    rows.append(_row("post_ln", 0, 0.91))
    rows.append(_row("post_ln", 1, None, state="running"))
    rows.append(_row("post_ln", 2, None))  # complete but without the metric: not guessed
    rows.append(_row("other", 0, 0.1))  # not a listed variant: ignored
    return rows


def _summary() -> dict:
    return summarize(
        _rows(),
        experiment="exp",
        metric="test/acc",
        direction="maximize",
        baseline="base",
        variants=["base", "no_pe", "post_ln"],
    )


def test_summary_schema_exact() -> None:
    s = _summary()
    assert list(s) == [
        "experiment",
        "metric",
        "direction",
        "baseline",
        "cells",
        "variants",
        "design",
        "methods",
    ]
    assert list(s["cells"]) == ["total", "complete", "missing"]
    assert list(s["variants"]) == ["base", "no_pe", "post_ln"]
    expected = [
        "n",
        "n_diverged",
        "median",
        "q1",
        "q3",
        "min",
        "max",
        "mean",
        "std",
        "delta",
        "ci",
        "ci_confidence",
        "p_value",
        "p_holm",
        "test",
        "paired",
        "n_pairs",
        "pairing",
        "min_seeds",
        "p_seq",
        "p_improve",
        "iqm",
        "iqm_ci",
        "clipped",
        "delta_median",
        "p_mwu",
    ]
    assert list(VARIANT_KEYS) == expected
    for v in s["variants"].values():
        assert list(v) == expected
    text = json.dumps(s, allow_nan=False)  # raises on NaN/inf
    assert "NaN" not in text and "Infinity" not in text


def test_diverged_included_and_nan_is_worst() -> None:
    no_pe = _summary()["variants"]["no_pe"]
    assert no_pe["n"] == 5 and no_pe["n_diverged"] == 2
    assert no_pe["min"] == 0.0 and no_pe["median"] == pytest.approx(0.49)  # values 0.5 .52 .49 .2 0.0
    ref = variant_stats([0.5, 0.52, 0.49, 0.2, 0.0], BASE, paired=True)  # seeds 0-4 on both sides
    assert no_pe["paired"] is True and no_pe["test"] == "signed-rank"
    for key in ("delta", "ci", "ci_confidence", "p_value", "p_improve", "p_mwu"):
        assert no_pe[key] == ref[key], key
    assert no_pe["p_value"] == pytest.approx(2 / 32)  # every difference negative: the floor at 5


def test_nan_worst_value_below_zero_and_minimize() -> None:
    rows = [_row("a", 0, -0.3), _row("a", 1, 0.4), _row("b", 0, None, diverged=True), _row("b", 1, 0.1)]
    s = summarize(
        rows, experiment="e", metric="test/acc", direction="maximize", baseline="a", variants=["a", "b"]
    )
    assert s["variants"]["b"]["min"] == pytest.approx(-0.3)
    s = summarize(
        rows, experiment="e", metric="test/acc", direction="minimize", baseline="a", variants=["a", "b"]
    )
    assert s["variants"]["b"]["max"] == pytest.approx(0.4)  # worst loss seen in the study


def test_baseline_against_itself() -> None:
    base = _summary()["variants"]["base"]
    assert base["delta_median"] == 0.0 and base["delta"] == 0.0
    assert base["ci"] is None and base["p_value"] is None and base["p_improve"] is None
    assert base["p_holm"] is None and base["min_seeds"] is None and base["test"] is None


def test_partial_study_lists_missing_cells() -> None:
    s = _summary()
    assert s["cells"]["total"] == 13
    assert s["cells"]["complete"] == 12
    assert s["cells"]["missing"] == ["post_ln/s1 (running)", "post_ln/s2 (complete, no test/acc)"]
    post = s["variants"]["post_ln"]
    assert post["n"] == 1 and post["std"] is None and post["ci"] is None


def test_unknown_baseline_rejected() -> None:
    with pytest.raises(ValueError, match="baseline"):
        summarize(
            _rows(), experiment="e", metric="test/acc", direction="maximize", baseline="x", variants=["base"]
        )


def test_looks_widen_the_interval_and_adjust_p() -> None:
    """Adaptive seeds with 3 looks: intervals at alpha / 3, p_seq = min(1, 3 p), Holm over p_seq,
    and min_seeds held to alpha / (k looks)."""
    rows = [_row("base", s, v) for s, v in enumerate([*BASE, 0.93, 0.96, 0.91])]
    rows += [_row("low", s, v) for s, v in enumerate([*LOW, 0.47, 0.53, 0.5])]
    rows += [_row("near", s, v) for s, v in enumerate([0.91, 0.9, 0.97, 0.95, 0.99, 0.94, 0.95, 0.92])]
    kw = {"experiment": "e", "metric": "test/acc", "direction": "maximize", "baseline": "base"}
    one = summarize(rows, variants=["base", "low", "near"], **kw)
    three = summarize(rows, variants=["base", "low", "near"], looks=3, **kw)
    base = [v for _, v in sorted((r.seed, r.metric("test/acc")) for r in rows if r.variant == "base")]
    p_seq = []
    for name in ("low", "near"):
        a, b = one["variants"][name], three["variants"][name]
        values = [r.metric("test/acc") for r in rows if r.variant == name]
        ref = variant_stats(values, base, paired=True, alpha=0.05 / 3)
        assert b["ci"] == ref["ci"] and b["ci_confidence"] == ref["ci_confidence"]
        assert b["ci_confidence"] >= 1 - 0.05 / 3 and a["ci_confidence"] < b["ci_confidence"]
        assert b["p_value"] == a["p_value"] == ref["p_value"]  # the raw p is the same
        assert b["p_seq"] == min(1.0, 3 * b["p_value"]) and a["p_seq"] is None
        p_seq.append(b["p_seq"])
        # k = 2 comparisons, 3 looks: the smallest paired p 2/2^n must reach 0.05/6
        assert b["min_seeds"] == seeds_to_reject(True, 0.05 / 6) == 8  # 2/256 <= 0.0083 < 2/128
        assert a["min_seeds"] == seeds_to_reject(True, 0.05 / 2) == 7  # 2/128 <= 0.025 < 2/64
    assert [three["variants"][n]["p_holm"] for n in ("low", "near")] == holm(p_seq)
    assert three["variants"]["low"]["p_value"] == pytest.approx(2 / 256)  # 8 negative differences
    assert three["variants"]["low"]["p_seq"] == pytest.approx(6 / 256)
    assert three["methods"]["looks"] == 3 and three["methods"]["sequential"] is not None
    assert one["methods"]["looks"] == 1 and one["methods"]["sequential"] is None
