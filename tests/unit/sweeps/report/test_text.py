"""The reports' words (sweeps/report/text.py): the verdict sentence of a comparison in its decided,
undecided-with-too-few-seeds and undecided-with-a-seeds-to-detect cases, and the statistics
table's header and cells; the headline's seeds-to-detect estimate (sweeps/report/build.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.report import build
from ablate.sweeps.report.text import (
    HEADER,
    conf_text,
    decision_p,
    delta_text,
    design_lines,
    read_design,
    row_cells,
    verdict,
    verdict_lines,
)
from ablate.sweeps.stats.power import fit, seeds_to_detect
from ablate.sweeps.stats.summary import summarize
from tests.helpers.configs import TINY_BASE
from tests.helpers.rows import cell_rows

WHERE = "baseline on tiny (test/acc)"
NO_MARGIN = (
    " No margin was given, so this is not evidence of no effect (`margin:` in the spec, or "
    "`ablate report --margin M`, tests equivalence within ±M)."
)


def summary(values: dict[str, list[float]], direction: str = "maximize", **kw: Any) -> dict[str, Any]:
    return summarize(
        cell_rows(values),
        experiment="tiny",
        metric="test/acc",
        direction=direction,
        baseline="baseline",
        variants=list(values),
        **kw,
    )


DETECT = SimpleNamespace(seeds=41, share=0.62, effect=0.01, target=0.8)  # what power.seeds_to_detect gives
# 8 seeds whose per-seed differences straddle 0: Hodges-Lehmann Δ +0.005, p 0.31
BASE8 = [0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94]
D8 = [0.01, -0.005, 0.02, -0.01, 0.015, 0.005, -0.002, 0.008]
NOISY8 = [round(b + d, 6) for b, d in zip(BASE8, D8, strict=True)]


def test_a_decided_comparison_says_better_or_worse_with_its_interval() -> None:
    s = summary({"baseline": [0.9] * 6, "no_pe": [0.4] * 6})
    # 6 pairs all below: p = 2 / 2^6; the interval [min, max] of the Walsh averages has 1 - 2/64
    assert verdict("no_pe", s) == (
        f"no_pe is worse than {WHERE}: Δ -0.500 [-0.500, -0.500] (96.9 %), p = 0.0312, "
        "p Holm = 0.0312, 6 seeds."
    )
    # "better" follows the direction: a lower loss is better
    low = summary({"baseline": [0.9] * 6, "no_pe": [0.4] * 6}, direction="minimize")
    assert verdict("no_pe", low).startswith(f"no_pe is better than {WHERE}: Δ -0.500")
    up = summary({"baseline": [0.4] * 6, "no_pe": [0.9] * 6})
    assert verdict("no_pe", up).startswith(f"no_pe is better than {WHERE}: Δ +0.500")


def test_an_adaptive_comparison_that_stopped_early_says_its_delta_is_overstated() -> None:
    s = summary({"baseline": [0.9] * 8, "no_pe": [0.4] * 8}, looks=2)
    s["adaptive"] = {"min": 4, "max": 16, "step": 4, "looks": 2}  # what report.build adds
    text = verdict("no_pe", s)
    assert "p_seq = 0.0156, p Holm = 0.0156, 8 seeds." in text  # 2 x 2 / 2^8: the looks' p
    assert text.endswith(" It stopped early (8 of at most 16 seeds): |Δ| is likely overstated.")
    s["adaptive"]["max"] = 8
    assert "stopped early" not in verdict("no_pe", s)


def test_too_few_seeds_to_decide_says_how_many_could() -> None:
    # 5 pairs all below: p = 2 / 32 > 0.05 whatever the values; no interval reaches 95 %
    s = summary({"baseline": BASE8[:5], "no_pe": [b - 0.5 for b in BASE8[:5]]})
    assert verdict("no_pe", s, detect=DETECT) == (
        f"no_pe: not distinguishable from {WHERE} at 5 seeds (Δ -0.500 (no interval at these seeds), "
        "p = 0.0625, p Holm = 0.0625); these seeds cannot reach p Holm <= 0.05: that needs at least 6."
        + NO_MARGIN
    )  # a seeds-to-detect estimate would hide the real reason: it is not shown
    two = summary({"baseline": BASE8[:5], "a": [0.4] * 5, "b": [0.5] * 5})
    assert verdict("a", two).endswith("that needs at least 7." + NO_MARGIN)  # Holm over 2: 2 / 2^7 <= 0.025


def test_undecided_with_enough_seeds_gives_the_seeds_to_detect() -> None:
    s = summary({"baseline": BASE8, "no_pe": NOISY8})
    head = (
        f"no_pe: not distinguishable from {WHERE} at 8 seeds (Δ +0.005 [-0.005, +0.015] (96.1 %), "
        "p = 0.3125, p Holm = 0.3125)"
    )
    assert verdict("no_pe", s, detect=DETECT) == head + (
        "; about 41 seeds would detect |Δ| = 0.010 (the margin) with power 0.8, enough in 62% of "
        "simulated studies like this one." + NO_MARGIN
    )
    none = SimpleNamespace(seeds=None, share=None, effect=0.01, target=0.8)
    assert verdict("no_pe", s, detect=none) == head + (
        "; more seeds than were searched would be needed to detect |Δ| = 0.010 (the margin)." + NO_MARGIN
    )
    assert verdict("no_pe", s) == head + "." + NO_MARGIN


def test_no_comparison_says_why() -> None:
    s = summary({"baseline": [0.9] * 6, "no_pe": []})
    assert verdict("no_pe", s) == (
        f"no_pe: no comparison with {WHERE} (no comparison: no complete cell on one side)."
    )


def test_the_headline_estimates_the_seeds_to_detect_only_with_a_margin_where_the_seeds_could_decide() -> None:
    raw = {
        "name": "tiny",
        "base": TINY_BASE,
        "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
        "seeds": 8,
    }
    rows = cell_rows({"baseline": BASE8, "no_pe": NOISY8})
    s = summary({"baseline": BASE8, "no_pe": NOISY8})
    (sentence,) = build.verdicts(spec_from_dict(raw), rows, s).values()
    assert "would detect" not in sentence and sentence.endswith(NO_MARGIN)  # no margin: no seed count
    spec = spec_from_dict({**raw, "margin": 0.02})
    s = summary({"baseline": BASE8, "no_pe": NOISY8}, margins=spec.margins())
    (sentence,) = build.verdicts(spec, rows, s).values()
    pilot = fit("no_pe", NOISY8, BASE8, paired=True)
    assert pilot is not None and pilot.estimate == pytest.approx(s["variants"]["no_pe"]["delta"])
    m = seeds_to_detect(pilot, effect=0.02, alpha=0.05, max_seeds=build.DETECT_MAX_SEEDS)
    assert m.seeds is not None and m.share is not None
    assert (
        f"; about {m.seeds} seeds would detect |Δ| = 0.020 (the margin) with power 0.8, enough in "
        in sentence
    )
    assert f"{m.share:.0%} of simulated studies" in sentence
    few = cell_rows({"baseline": BASE8[:5], "no_pe": NOISY8[:5]})
    short = summary({"baseline": BASE8[:5], "no_pe": NOISY8[:5]}, margins=spec.margins())
    (sentence,) = build.verdicts(spec, few, short).values()
    assert "that needs at least 6." in sentence and "would detect" not in sentence


def test_verdict_lines_prefer_the_stored_sentences() -> None:
    s = summary({"baseline": [0.9] * 6, "a": [0.4] * 6, "b": [0.9] * 6})
    computed = verdict_lines(s)
    assert computed == [verdict("a", s), verdict("b", s)]  # the baseline has none
    assert verdict_lines({**s, "verdicts": {"b": "B.", "a": "A."}}) == ["B.", "A."]


def test_the_table_has_one_delta_column_with_its_confidence() -> None:
    assert "Δ [CI] (confidence)" in HEADER and "p Holm" in HEADER
    assert not [h for h in HEADER if "paired" in h or "MWU" in h]
    s = summary({"baseline": [0.9] * 6, "no_pe": [0.4] * 6})
    cells = dict(zip(HEADER, row_cells("no_pe", s["variants"]["no_pe"], "baseline"), strict=True))
    assert cells["Δ [CI] (confidence)"] == "-0.500 [-0.500, -0.500] (96.9 %)"
    assert cells["test"] == "signed-rank" and cells["p"] == "0.0312" and cells["p Holm"] == "0.0312"
    base = dict(zip(HEADER, row_cells("baseline", s["variants"]["baseline"], "baseline"), strict=True))
    assert base["Δ [CI] (confidence)"] == "0 (baseline)" and base["p"] == "–"
    v = {"delta": 0.01, "ci": None, "test": "mann-whitney", "min_seeds": 4}
    assert delta_text(v, 3) == "+0.010 (no interval at these seeds)"
    assert conf_text(0.9375) == "93.8 %" and conf_text(None) == "–"
    assert decision_p({"p_value": 0.01, "p_seq": 0.03}) == 0.03 and decision_p({"p_value": 0.01}) == 0.01


def test_numerics_lines_flag_a_study_mixed_across_machines() -> None:
    from ablate.sweeps.report.text import numerics_lines

    assert numerics_lines({}) == []
    first, expect = numerics_lines({"numerics": [{"setting": "A | torch 2.13.0+cpu", "cells": 4}]})
    assert first == "Numerics: every cell ran with A | torch 2.13.0+cpu."
    assert (
        "same CPU model and torch build gives these cells to the bit" in expect and "--conclusions" in expect
    )
    (_, gpu) = numerics_lines(
        {"numerics": [{"setting": "A | cuda 12.8 cudnn 9 H200 | 1 thread", "cells": 4}]}
    )
    assert gpu.startswith("Reruns on GPU: bit-identity is not measured") and "to the bit" not in gpu
    (line,) = numerics_lines({"numerics": [{"setting": "A", "cells": 3}, {"setting": "B", "cells": 1}]})
    assert (
        line.startswith("Mixed numerics: the cells ran with 2 settings")
        and "A (3 cells); B (1 cells)" in line
    )


def test_the_design_is_read_from_a_spec_json_that_holds_an_object_else_not_recorded(tmp_path: Path) -> None:
    assert read_design(tmp_path) is None  # no spec.json
    for bad in ("{truncated", "[1, 2]", "\udcff"):
        (tmp_path / "spec.json").write_text(bad, errors="surrogateescape")
        assert read_design(tmp_path) is None
    spec = {"seeds": [0, 1], "base": {"model": {"pe": "rope", "extra": {}}, "optim": {"lr": 0.01}}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert read_design(tmp_path) == spec
    s = summary({"baseline": [0.9, 0.8]})
    assert design_lines(s, spec)[1] == "Base configuration: lr 0.01, PE rope."  # a dict field is one value
