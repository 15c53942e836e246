"""The cross-task table: IQM of baseline-normalized scores and P(improve) averaged over tasks,
with a bootstrap stratified by task."""

from __future__ import annotations

import numpy as np
import pytest

from ablate.errors import ConfigError
from ablate.sweeps.stats.aggregate import aggregate


def test_hand_values() -> None:
    tasks = {
        "a": {"base": np.array([0.8, 0.8, 0.8, 0.8]), "v": np.array([0.4, 0.4, 0.4, 0.4])},
        "b": {"base": np.array([0.5, 0.5, 0.5, 0.5]), "v": np.array([0.5, 0.5, 0.5, 0.5])},
    }
    agg = aggregate(tasks, "base")["variants"]
    # normalized: v is 0.5 x4 on a and 1.0 x4 on b; IQM drops 2 at each end of 8: mean(0.5, 0.5, 1, 1)
    assert agg["v"]["iqm"] == pytest.approx(0.75) and agg["v"]["iqm_ci95"] == pytest.approx([0.75, 0.75])
    # P(improve): 0 on a, 0.5 (all ties) on b
    assert agg["v"]["p_improve"] == pytest.approx(0.25) and agg["v"]["p_improve_ci95"] == pytest.approx(
        [0.25, 0.25]
    )
    assert agg["base"]["iqm"] == pytest.approx(1.0) and "p_improve" not in agg["base"]


def test_stratified_bootstrap_keeps_every_task() -> None:
    rng = np.random.default_rng(1)
    tasks = {
        t: {"base": rng.normal(0.8, 0.01, 6), "v": rng.normal(m, 0.01, 6)}
        for t, m in (("a", 0.4), ("b", 0.8))
    }
    agg = aggregate(tasks, "base")["variants"]["v"]
    low, high = agg["iqm_ci95"]
    # a resample without task a's runs would reach ~1.0; one without b's ~0.5: neither happens
    assert 0.6 < low <= agg["iqm"] <= high < 0.9


def test_a_baseline_at_zero_cannot_normalize() -> None:
    with pytest.raises(ConfigError, match="the baseline's median is 0.0"):
        aggregate({"a": {"base": np.zeros(3), "v": np.ones(3)}}, "base")
