"""Statistics against hand-computed values on fixed numbers."""

from __future__ import annotations

import json
import math

import pytest

from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import VARIANT_KEYS, summarize, variant_stats
from tests.conftest import cell_row

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
    assert st["delta_median"] is None and st["ci95"] is None and st["p_value"] is None


def test_quartiles_interpolate_linearly() -> None:
    st = variant_stats([1.0, 2.0, 3.0, 4.0], None)
    assert (st["q1"], st["median"], st["q3"]) == (1.75, 2.5, 3.25)


def test_full_separation_against_baseline() -> None:
    st = variant_stats(LOW, BASE)
    assert st["delta_median"] == pytest.approx(0.50 - 0.95)
    # Exact two-sided U test, U = 0: only 1 of C(10, 5) = 252 orderings is as extreme per side.
    assert st["p_value"] == pytest.approx(2 / 252)
    assert st["p_improve"] == 0.0
    lo, hi = st["ci95"]
    assert lo <= st["delta_median"] <= hi and hi < 0  # CI excludes 0
    # The bootstrap medians of 5 values are sample values, so the CI stays within the extremes.
    assert lo >= min(LOW) - max(BASE) - 1e-12 and hi <= max(LOW) - min(BASE) + 1e-12

    rev = variant_stats(BASE, LOW)
    assert rev["p_improve"] == 1.0
    assert rev["p_value"] == pytest.approx(2 / 252)
    assert rev["ci95"][0] > 0


def test_bootstrap_is_seeded() -> None:
    assert variant_stats(LOW, BASE, seed=3)["ci95"] == variant_stats(LOW, BASE, seed=3)["ci95"]


def test_ties_give_half() -> None:
    st = variant_stats([0.7, 0.7, 0.7], [0.7, 0.7, 0.7])
    assert st["p_improve"] == 0.5
    assert st["delta_median"] == 0.0
    assert st["ci95"] == [0.0, 0.0]
    assert st["p_value"] is None or st["p_value"] == pytest.approx(1.0)


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
    assert st["std"] is None and st["ci95"] is None
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
        "delta_median",
        "ci95",
        "p_value",
        "p_improve",
        "iqm",
        "iqm_ci95",
        "test",
        "paired",
        "pairing",
        "p_holm",
        "p_mwu",
        "p_paired",
        "delta_paired_median",
        "ci95_paired",
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
    assert no_pe["ci95"] == ref["ci95"] and no_pe["p_value"] == ref["p_value"]


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
    assert base["delta_median"] == 0.0
    assert base["ci95"] is None and base["p_value"] is None and base["p_improve"] is None


def test_partial_study_lists_missing_cells() -> None:
    s = _summary()
    assert s["cells"]["total"] == 13
    assert s["cells"]["complete"] == 12
    assert s["cells"]["missing"] == ["post_ln/s1 (running)", "post_ln/s2 (complete, no test/acc)"]
    post = s["variants"]["post_ln"]
    assert post["n"] == 1 and post["std"] is None and post["ci95"] is None


def test_unknown_baseline_rejected() -> None:
    with pytest.raises(ValueError, match="baseline"):
        summarize(
            _rows(), experiment="e", metric="test/acc", direction="maximize", baseline="x", variants=["base"]
        )
