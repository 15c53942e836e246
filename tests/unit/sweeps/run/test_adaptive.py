"""Adaptive seeds: a spec's ``seeds: {min, max, step, stop}`` runs rounds, adding seeds only to
the undecided comparisons (and the baseline), each look at CI level 1 - 0.05 / looks."""

from __future__ import annotations

import json
import re

import pytest

from ablate.errors import ConfigError
from ablate.experiments.spec import spec_from_dict, spec_from_resolved
from ablate.sweeps.run.adaptive import decide, grow
from tests.conftest import TINY_BASE, cell_rows

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}, "one_head": {"model.n_heads": 1}}


def spec(seeds: object) -> object:
    return spec_from_dict({"name": "a", "base": TINY_BASE, "variants": VARIANTS, "seeds": seeds})


def test_adaptive_seeds_parse_and_round_trip() -> None:
    s = spec({"min": 5, "max": 20, "step": 5})
    assert s.seeds == (0, 1, 2, 3, 4) and s.adaptive.stop == "separated"
    assert s.adaptive.looks == 4 and s.adaptive.level == pytest.approx(1 - 0.05 / 4)
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


def test_decide_separated_and_ci_width() -> None:
    s = spec({"min": 4, "max": 8, "step": 4})
    verdicts = decide(s, rows({"baseline": [1.0] * 4, "no_pe": [0.5] * 4, "one_head": [0.9, 1.0, 1.0, 1.0]}))
    assert verdicts["no_pe"]["decided"] and verdicts["no_pe"]["ci"] == [-0.5, -0.5]
    assert not verdicts["one_head"]["decided"] and verdicts["one_head"]["ci"][1] == 0.0  # touches 0
    w = spec({"min": 4, "max": 8, "step": 4, "stop": "ci_width", "width": 0.05})
    verdicts = decide(w, rows({"baseline": [1.0] * 4, "no_pe": [0.5] * 4, "one_head": [0.8, 1.0, 0.9, 1.0]}))
    assert verdicts["no_pe"]["decided"] and not verdicts["one_head"]["decided"]
