"""sweeps/stats/variance.py: crossed seed factors, one run per cell, each component with its
interval; and its calibration benchmark (benchmarks/variance_calibration.py) in a quick form."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ablate.benchmarks import variance_calibration as calibration
from ablate.experiments.schema.config import TrainConfig
from ablate.sweeps.stats.summary import variance_components
from ablate.sweeps.stats.variance import (
    FACTORS,
    MEASURED_COVERAGE,
    decompose,
    draw_components,
    effect_names,
    effects,
    grid_index,
    grid_table,
    mean_squares,
    raw_components,
    sums_of_squares,
)

THREE = FACTORS


def two_way_before_intervals(y: np.ndarray) -> dict:
    """The estimator summary.py had before this module (kept here to prove the numbers stay)."""
    n_init, n_order = y.shape
    grand = y.mean()
    rows, cols = y.mean(axis=1), y.mean(axis=0)
    ms_init = n_order * ((rows - grand) ** 2).sum() / (n_init - 1)
    ms_order = n_init * ((cols - grand) ** 2).sum() / (n_order - 1)
    resid = y - rows[:, None] - cols[None, :] + grand
    ms_res = (resid**2).sum() / ((n_init - 1) * (n_order - 1))
    parts = {
        "init": max(0.0, (ms_init - ms_res) / n_order),
        "data_order": max(0.0, (ms_order - ms_res) / n_init),
        "residual": float(ms_res),
    }
    total = sum(parts.values())
    return {
        "var": {k: float(v) for k, v in parts.items()},
        "share": {k: (float(v / total) if total > 0 else None) for k, v in parts.items()},
        "sd_total": float(np.sqrt(total)),
    }


@pytest.mark.parametrize("sizes", [(2, 2), (3, 3), (3, 7), (10, 4), (33, 5)])
def test_two_factors_give_the_numbers_they_gave_before_to_the_bit(sizes: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(sizes))
    for scale in (1e-3, 1.0, 1e3):
        y = 0.9 + scale * rng.normal(size=sizes)
        new, old = decompose(y, THREE[:2]), two_way_before_intervals(y)
        assert {k: new[k] for k in old} == old


def test_a_constructed_table_is_recovered_exactly_and_the_shares_sum_to_1() -> None:
    a, b, c = np.array([0.0, 0.3, 0.1]), np.array([0.2, -0.1]), np.array([0.05, 0.0, -0.02, 0.1])
    y = 0.5 + a[:, None, None] + b[None, :, None] + c[None, None, :]
    v = decompose(y, THREE)
    assert v["var"]["init"] == pytest.approx(np.var(a, ddof=1), rel=1e-12)
    assert v["var"]["data_order"] == pytest.approx(np.var(b, ddof=1), rel=1e-12)
    assert v["var"]["numerics"] == pytest.approx(np.var(c, ddof=1), rel=1e-12)
    rest = ["init:data_order", "init:numerics", "data_order:numerics", "residual"]
    assert all(v["var"][k] == pytest.approx(0, abs=1e-15) for k in rest)
    assert not any(v["clipped"].values())  # rounding below 0 is not "clipped"
    assert sum(v["share"].values()) == pytest.approx(1)
    assert list(v["var"]) == [*THREE, *rest] and v["df"] == {
        "init": 2,
        "data_order": 1,
        "numerics": 3,
        "init:data_order": 2,
        "init:numerics": 6,
        "data_order:numerics": 3,
        "residual": 6,
    }


def test_the_three_way_estimates_are_unbiased() -> None:
    """Expected mean squares: a wrong coefficient would shift some mean (20 000 tables)."""
    sizes, true = (3, 4, 2), [0.3, 0.2, 0.1, 0.15, 0.05, 0.1, 0.1]
    y = calibration.draw_tables(sizes, true, 20_000, np.random.default_rng(0))
    raw = raw_components(mean_squares(sums_of_squares(y, 3), sizes), sizes)
    means = [raw[e].mean() for e in effects(3)]
    assert means == pytest.approx(true, abs=0.02)


def test_an_estimate_below_0_is_clipped_and_flagged() -> None:
    y = np.array([[0.35, 0.82, 0.33], [-1.3, 0.91, 0.45], [-0.54, 0.58, 0.36]])  # MS_init < MS_res
    v = decompose(y, THREE[:2])
    assert v["clipped"] == {"init": True, "data_order": False, "residual": False}
    assert v["var"]["init"] == 0.0 and v["share"]["init"] == 0.0
    lo, hi = v["ci"]["init"]["share"]
    assert lo == 0.0 and 0.5 < hi < 1  # clipped to 0, yet the interval says how large it may be


def test_a_table_without_variance_has_no_shares() -> None:
    v = decompose(np.full((3, 3), 0.5), THREE[:2])
    assert v["sd_total"] == 0 and set(v["share"].values()) == {None}
    assert all(ci["share"] is None and ci["sd"] == [0.0, 0.0] for ci in v["ci"].values())


def test_the_grid_follows_the_configs_seed_streams() -> None:
    for sizes in [(3, 2), (3, 2, 4)]:
        cfg = TrainConfig().override(
            {"trainer.order_seeds": sizes[1], "trainer.numerics_levels": (sizes + (1,))[2]}
        )
        for s in range(int(np.prod(sizes))):
            st = cfg.seed_streams(s)
            assert grid_index(s, sizes) == (st.init, st.order, st.numerics)[: len(sizes)]


def test_variance_components_reads_the_numerics_levels() -> None:
    rng = np.random.default_rng(1)
    cells = [(s, float(v), False) for s, v in enumerate(rng.normal(size=18))]
    v = variance_components(cells, 3, 2, 3)
    assert v["complete"] and list(v["var"]) == effect_names(THREE)
    assert v["coverage"]["residual"] == MEASURED_COVERAGE[3]["residual"]
    assert grid_table(cells, (3, 2, 3))[2, 1, 0] == cells[(2 * 3 + 0) * 2 + 1][1]
    assert not variance_components(cells[:-1], 3, 2, 3)["complete"]
    assert list(variance_components(cells[:6], 3, 2)["var"]) == ["init", "data_order", "residual"]


def test_the_intervals_are_seeded() -> None:
    y = np.random.default_rng(2).normal(size=(4, 3))
    assert decompose(y, THREE[:2])["ci"] == decompose(y, THREE[:2])["ci"]
    assert decompose(y, THREE[:2], seed=1)["ci"] != decompose(y, THREE[:2])["ci"]


def test_the_gci_covers_and_the_bootstrap_of_the_sd_does_not() -> None:
    """At 3x3 (1/3 each) the GCI covers about 95 %, the bootstrap's sd interval about 85 %
    (the full benchmark: 0.95-0.97 and 0.81-0.87); 300 tables: a bug in a df or a pivot moves it
    far past these bounds."""
    r = calibration.simulate((3, 3), calibration.TWO_WAY["equal"], replicates=300, draws=500, seed=0)
    assert min(r["gci"]["share_coverage"].values()) >= 0.9
    assert min(r["gci"]["sd_coverage"].values()) >= 0.9
    assert max(r["bootstrap"]["sd_coverage"].values()) <= 0.92
    assert 0.12 <= r["clip_rate"]["init"] <= 0.3 and r["clip_rate"]["residual"] == 0  # theory: 0.21


def test_the_bootstrap_draws_come_from_the_fitted_model() -> None:
    """MS drawn as theta chi2(df)/df: their components average the fitted ones."""
    y = np.random.default_rng(3).normal(size=(5, 4, 3))
    ss, sizes = sums_of_squares(y, 3), y.shape
    fitted = raw_components(mean_squares(ss, sizes), sizes)
    drawn = draw_components(ss, sizes, "bootstrap", 40_000, np.random.default_rng(0))
    for e in effects(3):
        if fitted[e] > 0.05:  # a clipped one is fitted at 0, its draws then average above it
            assert drawn[e].mean() == pytest.approx(fitted[e], rel=0.1)


def test_the_calibration_benchmark_quick(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    assert calibration.main(["--quick", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    grids = {(r["grid"], r["scenario"]) for r in result["coverage"]}
    assert {("3x3", "equal"), ("5x5", "init-heavy"), ("3x3x3", "chaos")} <= grids
    for r in result["coverage"]:
        assert sum(r["true_share"].values()) == pytest.approx(1, abs=1e-3)
        assert all(0 <= c <= 1 for c in r["gci"]["share_coverage"].values())
    assert set(result["min_share_coverage"]) == {"2", "3"}


def test_the_measured_coverage_is_the_committed_benchmarks() -> None:
    """MEASURED_COVERAGE labels the report's intervals: it must be what the full run measured."""
    committed = json.loads(calibration.RESULTS.read_text())
    assert committed["replicates"] == 1000 and committed["draws"] == 2000
    measured = {int(k): v for k, v in committed["min_share_coverage"].items()}
    assert measured == MEASURED_COVERAGE
