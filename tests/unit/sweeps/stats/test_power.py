"""``ablate power``: seeds needed for a target power, by resampling a pilot study with the
report's own test. The expected counts follow from the exact tests' smallest p-values."""

from __future__ import annotations

import pytest

from ablate.experiments.spec import spec_from_dict
from ablate.sweeps.report.power_table import comparisons
from ablate.sweeps.stats.power import power_at, seeds_needed
from ablate.sweeps.stats.rows import CellRow
from tests.conftest import TINY_BASE, cell_rows


def spec(variant_overrides: dict) -> object:
    return spec_from_dict(
        {"name": "p", "base": TINY_BASE, "variants": {"baseline": {}, "v": variant_overrides}}
    )


def rows(base: list[float], variant: list[float]) -> list[CellRow]:
    return cell_rows({"baseline": base, "v": variant})


def test_paired_all_equal_differences_need_six_seeds() -> None:
    """Every per-seed difference is -0.5: the sign-flip p is 2/2^n, below 0.05 from n = 6 on."""
    (c,) = comparisons(spec({"model.pe": "none"}), rows([1.0] * 5, [0.5] * 5))
    assert c.paired and c.delta == pytest.approx(-0.5)
    assert power_at(c, 5, alpha=0.05, resamples=50) == 0.0  # p = 2/32 = 0.0625
    n, curve = seeds_needed(c, target=0.8, alpha=0.05, resamples=50, max_seeds=20)
    assert n == 6 and curve[-1] == (6, 1.0)


def test_unpaired_all_tied_samples_need_four_seeds() -> None:
    """A variant with its own data seed is unpaired: exact MWU p = 2/C(2n, n), < 0.05 from n = 4."""
    (c,) = comparisons(spec({"data.seed": 1}), rows([1.0] * 5, [0.5] * 5))
    assert not c.paired
    assert power_at(c, 3, alpha=0.05, resamples=50) == 0.0  # 2/20
    assert seeds_needed(c, target=0.8, alpha=0.05, resamples=50, max_seeds=20)[0] == 4  # 2/70


def test_delta_zero_has_power_near_alpha_and_a_given_delta_is_used() -> None:
    base = [0.80, 0.82, 0.79, 0.81, 0.83, 0.80]
    variant = [0.70, 0.75, 0.72, 0.74, 0.71, 0.73]
    (null,) = comparisons(spec({"model.pe": "none"}), rows(base, variant), delta=0.0)
    assert null.delta == 0.0
    assert power_at(null, 10, alpha=0.05, resamples=200) < 0.2
    assert seeds_needed(null, target=0.8, alpha=0.05, resamples=100, max_seeds=10)[0] is None
    (big,) = comparisons(spec({"model.pe": "none"}), rows(base, variant))
    assert big.delta == pytest.approx(-0.07, abs=1e-9)  # the median of the per-seed differences
    assert seeds_needed(big, target=0.8, alpha=0.05, resamples=100, max_seeds=20)[0] == 6
