"""Seeds that can reach a conclusion: the default seed count of a spec without ``seeds:``
(experiments/schema/seeds.py) and the one-line warning before a sweep whose seeds cannot reach
p Holm <= 0.05 (sweeps/drivers/grid.py ``reach_warning``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.experiments.schema.seeds import default_seed_count
from ablate.experiments.specs.spec_file import load_spec, spec_from_dict
from ablate.sweeps.drivers.grid import reach_warning
from ablate.sweeps.stats.inference import min_p, seeds_to_reject
from tests.helpers.configs import TINY_BASE
from tests.helpers.paths import REPO


def spec(k: int, seeds: object | None = None, **variants: dict) -> object:
    """A spec with k non-baseline variants (``v1``..``vk``; ``variants`` replaces or adds some)."""
    vs = {"baseline": {}, **{f"v{i}": {"model.n_heads": 1} for i in range(1, k + 1)}, **variants}
    raw = {"name": "reach", "base": TINY_BASE, "variants": vs}
    return spec_from_dict(raw if seeds is None else {**raw, "seeds": seeds})


@pytest.mark.parametrize("k", range(1, 7))
def test_default_seed_count_is_the_fewest_that_can_reject_after_holm(k: int) -> None:
    n = default_seed_count(k)
    assert n == seeds_to_reject(True, 0.05 / k)
    # the fewest: n pairs can give p <= 0.05 / k (every sign agreeing), n - 1 cannot
    assert min_p(True, n) <= 0.05 / k < min_p(True, n - 1)
    assert len(spec(k).seeds) == n  # what a spec without seeds: gets


def test_default_seed_counts() -> None:
    # 2 / 2^n <= 0.05 / k: 6 for one comparison, 7 for two or three, 8 for four to six
    assert [default_seed_count(k) for k in range(1, 7)] == [6, 7, 7, 8, 8, 8]


def test_too_few_seeds_for_the_comparisons_is_one_line() -> None:
    warning = reach_warning(spec(3, seeds=5))  # 0.05 / 3 needs 7 pairs; 5 give at best 2 / 32
    assert warning is not None and "\n" not in warning
    assert warning.startswith("reach: 5 seeds per variant cannot reach p Holm <= 0.05 for v1, v2, v3")
    assert "(3 comparisons)" in warning and "needs at least 7 (seeds: 7)" in warning
    assert reach_warning(spec(2, seeds=7)) is None  # 2 / 2^7 <= 0.05 / 2
    assert reach_warning(spec(3, seeds=7)) is None
    assert reach_warning(spec(4, seeds=7)) is not None  # 0.05 / 4 needs 8


def test_the_warning_follows_the_pairing_and_the_looks() -> None:
    # a variant that changes the data is compared unpaired: Mann-Whitney reaches 0.05 / 2 with 5
    # per side (2 / C(10, 5)), the paired signed-rank test needs 7
    s = spec(1, seeds=5, data_change={"data.n_train": 100})
    warning = reach_warning(s)
    assert warning is not None and "for v1 (2 comparisons)" in warning and "data_change" not in warning
    # only seed-neutral data keys: still paired, so both fall short
    neutral = reach_warning(spec(1, seeds=5, workers={"data.num_workers": 2}))
    assert neutral is not None and "for v1, workers" in neutral
    # adaptive seeds: judged at max, against 0.05 / (k looks); 2 x 2 looks need 8 pairs
    assert reach_warning(spec(2, seeds={"min": 4, "max": 8, "step": 4})) is None
    short = reach_warning(spec(2, seeds={"min": 4, "max": 7, "step": 3}))
    assert short is not None and "7 seeds per variant" in short and "(2 comparisons x 2 looks)" in short
    assert "needs at least 8" in short
    assert reach_warning(spec_from_dict({"name": "b", "base": TINY_BASE, "variants": {"b": {}}})) is None


@pytest.mark.parametrize(
    "path", sorted((REPO / "experiments" / "configs" / "ablations").glob("*.yaml")), ids=lambda p: p.stem
)
def test_every_shipped_spec_can_reach_a_conclusion(path: Path) -> None:
    assert reach_warning(load_spec(path)) is None
