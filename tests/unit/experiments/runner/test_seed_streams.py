"""What a run seed fixes (TrainConfig.seed_streams): init, data order, numerics level, dropout;
and the spec's seed_factors.numerics, which must leave a study without it as it was."""

from __future__ import annotations

import pytest

from ablate.errors import ConfigError
from ablate.experiments.schema.config import SeedStreams, TrainConfig, without_later_defaults
from ablate.experiments.specs.spec_file import spec_from_dict
from tests.helpers.configs import TINY_BASE

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}}
# Identities of these specs before trainer.numerics_levels existed: a study made then must resume.
IDENTITY_BEFORE = {"seeds": "7bef2c362edcc1ec", "factors": "64194b90a335797f"}


def _spec(**extra: object):  # noqa: ANN202
    return spec_from_dict({"name": "f", "base": TINY_BASE, "variants": VARIANTS, **extra})


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_without_numerics_every_seed_keeps_its_streams(n: int) -> None:
    cfg = TrainConfig().override({"trainer.order_seeds": n})
    for s in range(60):
        init, order = (s // n, s % n) if n else (s, s)  # the mapping before numerics existed
        assert cfg.seed_streams(s) == SeedStreams(init=init, order=order, numerics=0, dropout=s)
        assert cfg.streams(s) == (init, order)


def test_numerics_levels_cross_init_and_order_and_share_level_0s_dropout() -> None:
    a, b, c = 3, 2, 4
    cfg = TrainConfig().override({"trainer.order_seeds": b, "trainer.numerics_levels": c})
    streams = [cfg.seed_streams(s) for s in range(a * b * c)]
    cells = {(st.init, st.order, st.numerics) for st in streams}
    assert cells == {(i, o, j) for i in range(a) for o in range(b) for j in range(c)}  # each once
    for s, st in enumerate(streams):
        assert s == (st.init * c + st.numerics) * b + st.order
        # the dropout of the seed the same (init, order) has without numerics
        assert st.dropout == st.init * b + st.order
    assert cfg.seed_streams(9) == SeedStreams(init=1, order=1, numerics=0, dropout=3)


def test_numerics_levels_need_seed_factors() -> None:
    with pytest.raises(ConfigError, match="numerics_levels=3 needs trainer.order_seeds > 0"):
        TrainConfig().override({"trainer.numerics_levels": 3})
    with pytest.raises(ConfigError, match="numerics_levels=0 is out of range"):
        TrainConfig().override({"trainer.order_seeds": 2, "trainer.numerics_levels": 0})


def test_a_study_without_numerics_keeps_its_identity() -> None:
    assert "numerics_levels" not in without_later_defaults(TrainConfig().to_dict())["trainer"]
    assert _spec().identity() == IDENTITY_BEFORE["seeds"]
    plain = _spec(seed_factors={"init": 3, "data_order": 2})
    assert plain.identity() == IDENTITY_BEFORE["factors"]
    assert plain.base_overrides == {"trainer.order_seeds": 2} and plain.seed_factors == {
        "init": 3,
        "data_order": 2,
    }
    assert plain.base.trainer.numerics_levels == 1
    with_numerics = _spec(seed_factors={"init": 3, "data_order": 2, "numerics": 2})
    assert with_numerics.identity() != plain.identity()  # another study: its cells differ


def test_spec_seed_factors_numerics_sets_the_seeds_and_the_levels() -> None:
    spec = _spec(seed_factors={"init": 2, "data_order": 2, "numerics": 3})
    assert spec.seeds == tuple(range(12)) and spec.base.trainer.numerics_levels == 3
    assert spec.base_overrides == {"trainer.order_seeds": 2, "trainer.numerics_levels": 3}
    levels = [spec.cell_config("no_pe", s).seed_streams(s).numerics for s in spec.seeds]
    assert levels == [0, 0, 1, 1, 2, 2] * 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"seed_factors": {"init": 2, "data_order": 2, "numerics": 1}},
            "seed_factors.numerics=1 is out of range",
        ),
        ({"seed_factors": {"init": 2, "numerics": 2}}, "seed_factors must be {init: N, data_order: M}"),
        ({"seed_factors": {"init": 2, "data_order": 2, "fp": 2}}, "or {init: N, data_order: M, numerics: K}"),
        (
            {"seed_factors": {"init": 50, "data_order": 50, "numerics": 5}},
            "init x data_order x numerics = 12500 seeds; valid: at most 10000",
        ),
        (
            {"variants": {**VARIANTS, "x": {"trainer.numerics_levels": 2}}},
            "variant 'x' sets trainer.numerics_levels",
        ),
    ],
)
def test_bad_numerics_factors(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        _spec(**extra)
