"""What summary.json says about a bounded metric and the seeds: an interval never leaves the
metric's range (Yuen's interval of an accuracy near 1 is clipped at 1, and says so in
``clipped``), the paired test's pairs are recorded (``n_pairs``), what the seeds allow the test
(``inference.widest_confidence``) is 1 - 2 / 2^n, and ``methods`` says which Δ is the effect
estimate and what the interval needs, computed for the study's alpha and looks."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pytest

from ablate.sweeps.stats.inference import (
    confidence,
    mann_whitney,
    min_p,
    seeds_to_reject,
    signed_rank,
    trimmed_mean_ci,
    widest_confidence,
)
from ablate.sweeps.stats.rows import DIFFERENCE_KEYS, INTERVAL_KEYS
from ablate.sweeps.stats.summary import (
    IQM_TRIM,
    clip_intervals,
    interval_range,
    metric_range,
)
from tests.helpers.rows import cell_row, cell_rows, summary_of


def study(
    values: dict[str, list[float | None]], metric: str = "test/acc", direction: str = "maximize", **kw: Any
) -> dict[str, Any]:
    return summary_of(cell_rows(values, metric=metric), metric=metric, direction=direction, **kw)


def yuen(values: list[float]) -> tuple[float, float]:
    ci = trimmed_mean_ci(values, trim=IQM_TRIM)
    assert ci is not None
    return ci


# ---- what the seeds allow the test ----------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 13))
def test_the_widest_paired_interval_has_one_minus_two_halves_to_the_n(n: int) -> None:
    # Every one of the 2^n sign patterns is equally likely; only "all negative" has W+ = 0.
    assert widest_confidence(True, n) == pytest.approx(1 - 2 * 0.5**n)
    assert min_p(True, n) == pytest.approx(min(1.0, 2 * 0.5**n))
    assert widest_confidence(True, n) == pytest.approx(confidence(True, n, 1))


@pytest.mark.parametrize(("n1", "n2"), [(2, 3), (3, 3), (4, 4), (3, 5)])
def test_the_widest_unpaired_interval_has_one_minus_two_over_the_splits(n1: int, n2: int) -> None:
    # One of the C(n1 + n2, n1) equally likely splits puts every x below every y (U = 0).
    assert widest_confidence(False, n1, n2) == pytest.approx(1 - 2 / math.comb(n1 + n2, n1))


def test_the_widest_confidence_is_what_an_all_one_sided_interval_achieves() -> None:
    """At 6 pairs only the widest interval reaches 95 % (2 / 2^6 <= 0.05 < 4 / 2^6): the test's
    own interval of six positive differences is it, [min d, max d]."""
    d = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]
    res = signed_rank(d)
    assert res.ci == (pytest.approx(min(d)), pytest.approx(max(d)))
    assert res.confidence == pytest.approx(widest_confidence(True, len(d)))
    x, y = [0.9, 0.91, 0.92, 0.93], [0.5, 0.51, 0.52, 0.53]
    assert mann_whitney(x, y).confidence == pytest.approx(widest_confidence(False, 4, 4))


# ---- the pairs the paired test ran on ---------------------------------------------------------------


def test_n_pairs_counts_the_seeds_both_sides_have() -> None:
    """The baseline's seed 4 is still running: no_pe's 5 seeds make 4 pairs, and the test ran on them."""
    base = [0.90, 0.91, 0.92, 0.93]
    mine = [0.80, 0.82, 0.85, 0.86, 0.70]
    rows = cell_rows({"baseline": base, "no_pe": mine})
    rows.append(cell_row("baseline", 4, None, state="running", diverged=None))
    s = summary_of(rows)
    v = s["variants"]["no_pe"]
    assert v["paired"] is True and v["n"] == len(mine) and v["n_pairs"] == len(base)
    assert v["p_value"] == pytest.approx(signed_rank(np.subtract(mine[:4], base)).p)
    assert s["variants"]["baseline"]["n_pairs"] is None


def test_an_unpaired_comparison_has_no_pairs() -> None:
    s = study(
        {"baseline": [0.9, 0.91, 0.92], "data": [0.8, 0.81, 0.82]}, overrides={"data": {"data.seed": 1}}
    )
    assert s["variants"]["data"]["paired"] is False and s["variants"]["data"]["n_pairs"] is None


# ---- intervals inside the metric's range ------------------------------------------------------------


def test_the_ranges_follow_the_metric() -> None:
    assert metric_range("test/acc") == (0.0, 1.0) and metric_range("val/f1") == (0.0, 1.0)
    assert metric_range("test/loss") == (0.0, math.inf)
    assert metric_range("test/mcc") == (-math.inf, math.inf)  # in [-1, 1], but not known here
    assert set(DIFFERENCE_KEYS) <= set(INTERVAL_KEYS)
    # a difference of two values in [low, high] lies in [low - high, high - low]
    assert interval_range("ci", "test/acc") == (-1.0, 1.0) and interval_range("iqm_ci", "test/acc") == (
        0.0,
        1.0,
    )
    assert interval_range("ci", "test/loss") == (-math.inf, math.inf)


def test_yuen_above_one_is_clipped_at_one_and_flagged() -> None:
    """3 seeds near the ceiling: Yuen's (Student's t) interval reaches above 1; the summary keeps
    its computed lower bound, sets the upper to 1 and lists iqm_ci in clipped."""
    base = [1.0, 1.0, 0.9]
    low, high = yuen(base)
    assert high > 1.0 and 0.0 < low < 1.0  # the case of the issue: [0.8, 1.1]
    s = study({"baseline": base, "no_pe": [0.98, 1.0, 0.92]})
    b = s["variants"]["baseline"]
    assert b["iqm_ci"] == [pytest.approx(low), 1.0] and b["clipped"] == ["iqm_ci"]
    for v in s["variants"].values():
        assert 0.0 <= v["iqm_ci"][0] <= v["iqm_ci"][1] <= 1.0
    assert "[0, 1]" in s["methods"]["clipped"]


def test_both_ends_clip_and_an_interval_inside_is_left_alone() -> None:
    wide = [0.0, 1.0, 1.0]  # Yuen: about [-0.77, 2.1]
    assert yuen(wide)[0] < 0.0 and yuen(wide)[1] > 1.0
    inside = [0.50, 0.52, 0.54, 0.56, 0.58, 0.60]
    s = study({"baseline": inside, "wide": wide})
    assert s["variants"]["baseline"]["iqm_ci"] == pytest.approx(list(yuen(inside)))
    assert s["variants"]["baseline"]["clipped"] == []
    assert s["variants"]["wide"]["iqm_ci"] == [0.0, 1.0] and s["variants"]["wide"]["clipped"] == ["iqm_ci"]


@pytest.mark.parametrize("value", [1.0, 0.5, 0.0])
def test_at_ceiling_chance_and_floor_nothing_is_clipped(value: float) -> None:
    """Every seed the same: the interval is [value, value], computed, and nothing is clipped;
    the paired differences all tie at 0, so Δ's interval is [0, 0] at 7 seeds."""
    s = study({"baseline": [value] * 7, "same": [value] * 7})
    for v in s["variants"].values():
        assert v["iqm_ci"] == [value, value] and v["clipped"] == []
    same = s["variants"]["same"]
    assert same["delta"] == 0.0 and same["delta_median"] == 0.0 and same["ci"] == [0.0, 0.0]


def test_a_loss_clips_at_zero_only() -> None:
    base = [0.01, 0.02, 0.5]
    low, high = yuen(base)
    assert low < 0.0
    s = study({"baseline": base, "v": [0.3, 0.4, 0.5]}, metric="test/loss", direction="minimize")
    b = s["variants"]["baseline"]
    assert b["iqm_ci"] == [0.0, pytest.approx(high)] and b["clipped"] == ["iqm_ci"]
    json.dumps(s, allow_nan=False)  # no infinite bound leaks into the file


def test_a_metric_without_a_known_range_is_not_clipped() -> None:
    base = [-0.2, 0.1, 0.9]
    s = study({"baseline": base, "v": [0.3, 0.4, 0.5]}, metric="test/mcc")
    assert s["variants"]["baseline"]["iqm_ci"] == pytest.approx(list(yuen(base)))
    assert s["variants"]["baseline"]["clipped"] == []
    assert "none is" in s["methods"]["clipped"]


def test_clip_intervals_clips_a_difference_to_its_own_range() -> None:
    entry = {"ci": [-1.5, 0.2], "iqm_ci": [0.3, 0.4]}
    clip_intervals(entry, "test/acc")
    assert entry == {"ci": [-1.0, 0.2], "iqm_ci": [0.3, 0.4], "clipped": ["ci"]}
    loss = {"ci": [-1.5, 0.2], "iqm_ci": None}
    clip_intervals(loss, "test/loss")
    assert loss == {"ci": [-1.5, 0.2], "iqm_ci": None, "clipped": []}


def test_the_tests_own_interval_never_leaves_the_difference_range() -> None:
    """ci is order statistics of observed averages or differences of values in [0, 1], so it lies
    in [-1, 1]: clipping never changes it (random studies, paired and unpaired)."""
    rng = np.random.default_rng(0)
    for n, paired in itertools.product((6, 8), (True, False)):
        for _ in range(20):
            values = {"baseline": list(rng.choice([0.0, 1.0, *rng.random(3)], n)), "v": list(rng.random(n))}
            ov = {} if paired else {"v": {"data.seed": 1}}
            v = study(values, overrides=ov)["variants"]["v"]
            assert "ci" not in v["clipped"]
            if v["ci"] is not None:
                assert -1.0 <= v["ci"][0] <= v["ci"][1] <= 1.0


# ---- methods: the effect estimate and what the interval needs --------------------------------------


def test_methods_name_delta_the_effect_estimate_and_delta_median_descriptive() -> None:
    """The issue's case: 3 seeds whose medians tie (delta_median 0) while the Hodges-Lehmann Δ of
    the per-seed differences is not 0; methods says which one the verdict uses."""
    base, mine = [0.90, 0.95, 1.0], [0.85, 0.95, 1.0]
    s = study({"baseline": base, "no_pe": mine})
    v = s["variants"]["no_pe"]
    assert v["delta_median"] == 0.0
    assert v["delta"] == pytest.approx(signed_rank(np.subtract(mine, base)).estimate) and v["delta"] != 0.0
    m = s["methods"]
    assert m["effect"].startswith("delta is the effect estimate, the one the verdict uses")
    assert "delta_median" in m["effect"] and "descriptive" in m["effect"]
    assert "not the effect estimate" in m["descriptive"]["delta_median"]


@pytest.mark.parametrize("looks", [1, 2, 3])
def test_methods_say_the_seeds_an_interval_needs_at_the_studys_level(looks: int) -> None:
    level = 0.05 / looks
    paired = next(n for n in itertools.count(1) if 2 * 0.5**n <= level)  # the smallest p: 2 / 2^n
    unpaired = next(n for n in itertools.count(1) if 2 / math.comb(2 * n, n) <= level)
    assert (seeds_to_reject(True, level), seeds_to_reject(False, level)) == (paired, unpaired)
    s = study({"baseline": [0.9, 0.91, 0.92], "v": [0.8, 0.81, 0.82]}, looks=looks)
    text = s["methods"]["ci"]
    assert f"needs {paired} pairs" in text and f"{unpaired} seeds per side" in text
    assert f"p <= {level:g}" in text
