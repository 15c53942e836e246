"""Adaptive seeds: a spec's ``seeds: {min, max, step, stop}`` runs rounds, adding seeds only to
the undecided comparisons (and the baseline); each look's p is p_seq = min(1, looks p), Holm over
p_seq decides ``separated``, and every interval is at 1 - 0.05 / looks."""

from __future__ import annotations

import json
import re

import pytest

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import spec_from_resolved
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.drivers.adaptive import decide, grow, look
from tests.helpers.configs import TINY_BASE
from tests.helpers.rows import cell_rows

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}, "one_head": {"model.n_heads": 1}}


def spec(seeds: object) -> object:
    return spec_from_dict({"name": "a", "base": TINY_BASE, "variants": VARIANTS, "seeds": seeds})


def test_adaptive_seeds_parse_and_round_trip() -> None:
    s = spec({"min": 5, "max": 20, "step": 5})
    assert s.seeds == (0, 1, 2, 3, 4) and s.adaptive.stop == "separated"
    assert s.adaptive.looks == 4 and s.adaptive.alpha_per_look == pytest.approx(0.05 / 4)
    assert spec({"min": 5, "max": 12, "step": 5}).adaptive.looks == 3  # 5, 10, 12
    grown = grow(s, ["no_pe"])
    again = spec_from_resolved(json.loads(json.dumps(grown.to_dict())))
    assert again.adaptive == s.adaptive and again.extra_seeds == grown.extra_seeds
    assert again.cells() == grown.cells()


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ({"min": 5, "max": 3, "step": 1}, "seeds.min=5 is above seeds.max=3"),
        ({"min": 0, "max": 3, "step": 1}, "seeds.min=0 is out of range"),
        (
            {"min": 2, "max": 3, "step": 1, "stop": "soon"},
            "seeds.stop='soon'; choose one of separated, ci_width",
        ),
        ({"min": 2, "max": 3, "step": 1, "stop": "ci_width"}, "needs seeds.width > 0"),
        ({"min": 2, "max": 3, "step": 1, "width": 0.1}, "seeds.width applies to stop: ci_width only"),
        ({"min": 2, "max": 3, "step": 1, "rounds": 2}, "seeds: unknown key(s) ['rounds']"),
    ],
)
def test_bad_adaptive_seeds_are_named(seeds: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        spec(seeds)


def test_grow_adds_seeds_to_undecided_variants_and_the_baseline() -> None:
    s = spec({"min": 3, "max": 7, "step": 3})
    g = grow(s, ["one_head"])
    seeds = {v: sorted(x for w, x in g.cells() if w == v) for v in VARIANTS}
    assert seeds == {"baseline": [0, 1, 2, 3, 4, 5], "no_pe": [0, 1, 2], "one_head": [0, 1, 2, 3, 4, 5]}
    g2 = grow(g, ["one_head"])  # 6 + 3 capped at max 7
    assert (
        sum(w == "one_head" for w, _ in g2.cells()) == 7 and sum(w == "baseline" for w, _ in g2.cells()) == 7
    )
    assert grow(g2, ["one_head"]) is None  # at max: nothing can grow


rows = cell_rows


def test_separated_cannot_decide_at_a_look_whose_seeds_cannot_reach_alpha() -> None:
    """2 looks x 2 comparisons: the smallest p must be <= 0.05 / 4, which 4 paired seeds cannot
    give (every sign agreeing: 2 / 2^4); however far apart the values, nothing is decided."""
    s = spec({"min": 4, "max": 8, "step": 4})
    assert s.adaptive.looks == 2
    verdicts = decide(s, rows({"baseline": [1.0] * 4, "no_pe": [0.5] * 4, "one_head": [0.9, 1.0, 1.0, 1.0]}))
    assert not verdicts["no_pe"]["decided"] and not verdicts["no_pe"]["uninformative"]
    # one_head sits at ceiling with the baseline: the design check stops it, nothing else does
    assert verdicts["one_head"]["uninformative"] and verdicts["one_head"]["decided"]
    assert verdicts["no_pe"]["p_seq"] == pytest.approx(2 * 2 / 2**4)  # looks x the exact p
    assert verdicts["no_pe"]["ci"] is None  # 4 pairs cannot reach 1 - 0.05 / 2 either
    assert verdicts["no_pe"]["seeds"] == 4


def test_separated_decides_by_p_holm_over_p_seq() -> None:
    s = spec({"min": 4, "max": 8, "step": 4})
    one_head = [0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # one seed below, seven ties
    verdicts = decide(s, rows({"baseline": [1.0] * 8, "no_pe": [0.5] * 8, "one_head": one_head}))
    # 8 seeds all below: p = 2 / 2^8, p_seq = 2 p, Holm x 2 = 0.031 <= 0.05
    assert verdicts["no_pe"]["decided"] and verdicts["no_pe"]["p_seq"] == pytest.approx(2 * 2 / 2**8)
    assert verdicts["no_pe"]["ci"] == [-0.5, -0.5]
    assert verdicts["one_head"]["ci"][1] == 0.0  # touches 0: not separated, and at ceiling with the baseline
    assert verdicts["one_head"]["uninformative"] and verdicts["one_head"]["decided"]
    assert verdicts["one_head"]["p_seq"] == pytest.approx(1.0)  # the ties count against rejection


def test_a_look_summarizes_with_the_schedules_looks() -> None:
    """What decide() reads is the report's summary at L = 2 looks: p_seq, Holm over p_seq, and an
    interval whose achieved confidence is at least 1 - 0.05 / 2."""
    s = spec({"min": 4, "max": 8, "step": 4})
    summary = look(s, rows({"baseline": [1.0] * 8, "no_pe": [0.5] * 8, "one_head": [1.0] * 8}))
    assert summary["methods"]["looks"] == 2
    no_pe = summary["variants"]["no_pe"]
    assert no_pe["p_seq"] == pytest.approx(2 * no_pe["p_value"])
    assert no_pe["p_holm"] == pytest.approx(2 * no_pe["p_seq"])  # the smaller of the two p_seq
    assert 1 - 0.05 / 2 <= no_pe["ci_confidence"] < 1


def test_ci_width_decides_on_the_interval_at_one_minus_alpha_over_looks() -> None:
    w = spec({"min": 4, "max": 8, "step": 4, "stop": "ci_width", "width": 0.05})
    # 4 seeds: no interval at 1 - 0.05 / 2 exists, so no width decides; one_head, identical to
    # the baseline at ceiling, is stopped by the design check alone
    verdicts = decide(w, rows({"baseline": [1.0] * 4, "no_pe": [0.5] * 4, "one_head": [1.0] * 4}))
    assert not verdicts["no_pe"]["decided"]
    assert verdicts["one_head"]["uninformative"] and verdicts["one_head"]["decided"]
    verdicts = decide(
        w, rows({"baseline": [1.0] * 8, "no_pe": [0.5] * 8, "one_head": [0.8, 1.0, 0.9, 1.0] * 2})
    )
    assert verdicts["no_pe"]["decided"] and verdicts["no_pe"]["ci"] == [-0.5, -0.5]
    lo, hi = verdicts["one_head"]["ci"]
    assert not verdicts["one_head"]["decided"] and hi - lo > 0.05  # at ceiling on 4/8 seeds: not most
