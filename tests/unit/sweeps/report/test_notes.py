"""The paragraph under the report's table (sweeps/report/text.py ``notes``) says what the study's
own seeds allow the discrete test, computed from each comparison's seed counts (never a generic
"5 seeds"), names Δ the effect estimate and delta_median descriptive, and says when an interval
was clipped; at ceiling, at chance and with every difference tied it says only what holds there."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from ablate.sweeps.report.files import write_report
from ablate.sweeps.report.text import conf_text, delta_text, fmt_p, notes, reach_text, row_cells, verdict
from tests.helpers.rows import cell_row, cell_rows, summary_of

LEVEL = 0.95  # the default alpha 0.05, one look


def study(values: dict[str, list[float | None]], **kw: Any) -> dict[str, Any]:
    return summary_of(cell_rows(values), **kw)


def spread(n: int, start: float = 0.80) -> list[float]:
    return [round(start + 0.01 * i, 6) for i in range(n)]


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_too_few_paired_seeds_get_their_own_cap_and_smallest_p(n: int) -> None:
    """n pairs: the widest interval has confidence 1 - 2 / 2^n and the smallest p is 2 / 2^n."""
    s = study({"baseline": spread(n), "no_pe": spread(n, 0.5)})
    text = notes(s)
    seeds = f"{n} paired seeds allow an interval of at most {conf_text(1 - 2 * 0.5**n)} confidence"
    assert seeds in text and f"a p of at least {fmt_p(2 * 0.5**n)}" in text
    assert f"below {conf_text(LEVEL)}, so none is shown" in text
    assert re.findall(r"(\d+) paired seed", text) == [str(n)]  # the study's count, no other
    assert ("93.8 %" in text) == (n == 5)
    assert s["variants"]["no_pe"]["ci"] is None  # what the sentence says: no interval


@pytest.mark.parametrize("n", [6, 7, 9])
def test_enough_seeds_say_the_confidence_is_achieved(n: int) -> None:
    s = study({"baseline": spread(n), "no_pe": spread(n, 0.5)})
    text = reach_text(s)
    assert text == f"the confidence shown is the one the seeds achieve, at least {conf_text(LEVEL)}"
    assert s["variants"]["no_pe"]["ci_confidence"] >= LEVEL
    assert "at most" not in notes(s) and "93.8" not in notes(s)


def test_an_unpaired_comparison_is_counted_by_its_two_sides() -> None:
    """3 against 4 unpaired seeds: one of C(7, 3) splits is the most extreme."""
    s = study({"baseline": spread(4), "data": spread(3, 0.5)}, overrides={"data": {"data.seed": 1}})
    least = 2 / math.comb(7, 3)
    assert reach_text(s) == (
        f"3 against 4 unpaired seeds allow an interval of at most {conf_text(1 - least)} confidence, "
        f"below {conf_text(LEVEL)}, so none is shown, and a p of at least {fmt_p(least)}"
    )


def test_comparisons_with_different_seeds_are_named_apart() -> None:
    """few has 3 seeds (3 pairs), many has all 7: only few lacks an interval, and the note says which."""
    s = study({"baseline": spread(7), "few": spread(3, 0.5), "many": spread(7, 0.5)})
    text = reach_text(s)
    assert text.startswith(f"3 paired seeds allow an interval of at most {conf_text(1 - 2 * 0.5**3)}")
    assert "(few)" in text and "many" not in text
    assert text.endswith(f"the others' confidence is achieved, at least {conf_text(LEVEL)}")


def test_a_missing_baseline_seed_counts_the_pairs_not_the_variants_seeds() -> None:
    rows = cell_rows({"baseline": spread(5), "no_pe": spread(6, 0.5)})
    rows.append(cell_row("baseline", 5, None, state="running", diverged=None))
    s = summary_of(rows)
    assert s["variants"]["no_pe"]["n"] == 6  # six seeds, five of them paired: no interval
    assert s["variants"]["no_pe"]["ci"] is None
    assert reach_text(s).startswith(
        f"5 paired seeds allow an interval of at most {conf_text(1 - 2 * 0.5**5)}"
    )


def test_adaptive_looks_raise_the_level_the_seeds_must_reach() -> None:
    """Two looks: intervals at 1 - 0.05 / 2; 6 pairs reach 95 % but not 97.5 %."""
    s = study({"baseline": spread(6), "no_pe": spread(6, 0.5)}, looks=2)
    text = reach_text(s)
    assert f"at most {conf_text(1 - 2 * 0.5**6)} confidence, below {conf_text(1 - 0.05 / 2)}" in text
    assert s["variants"]["no_pe"]["ci"] is None


@pytest.mark.parametrize("value", [1.0, 0.5])
def test_at_ceiling_and_chance_the_note_says_what_the_seed_count_allows(value: float) -> None:
    """All seeds at 1.0 (ceiling) or 0.5 (chance) on both sides, 3 seeds: the cap depends on the
    seeds only; Δ is 0 and every difference ties (p 1), and nothing was clipped."""
    s = study({"baseline": [value] * 3, "same": [value] * 3})
    v = s["variants"]["same"]
    assert v["delta"] == 0.0 and v["delta_median"] == 0.0 and v["p_value"] == 1.0
    text = notes(s)
    assert f"3 paired seeds allow an interval of at most {conf_text(1 - 2 * 0.5**3)}" in text
    assert "clipped" not in text  # [value, value]: computed, inside [0, 1]


def test_all_differences_tied_with_enough_seeds_get_an_interval_of_zero() -> None:
    s = study({"baseline": spread(7), "same": spread(7)})
    v = s["variants"]["same"]
    assert v["ci"] == [0.0, 0.0] and v["ci_confidence"] >= LEVEL and v["p_value"] == 1.0
    assert reach_text(s).endswith(f"at least {conf_text(LEVEL)}")


def test_delta_is_the_effect_estimate_and_delta_median_descriptive() -> None:
    """The issue's case: medians tie (delta_median 0) while Δ is not 0; the verdict states Δ."""
    s = study({"baseline": [0.90, 0.95, 1.0], "no_pe": [0.85, 0.95, 1.0]})
    v = s["variants"]["no_pe"]
    assert v["delta_median"] == 0.0 and v["delta"] != 0.0
    text = notes(s)
    assert "Δ is the effect estimate, the one the verdict uses" in text
    assert "difference of medians (delta_median, not the effect estimate: it can differ from Δ)" in text
    assert f"Δ {delta_text(v, 3)}" in verdict("no_pe", s)
    assert delta_text(v, 3).startswith(format(v["delta"], "+.3f"))


def test_a_clipped_interval_is_named_with_the_range() -> None:
    s = study({"baseline": [1.0, 1.0, 0.9], "no_pe": [0.5, 0.6, 0.7]})
    assert s["variants"]["baseline"]["clipped"] == ["iqm_ci"]
    assert s["variants"]["no_pe"]["clipped"] == []
    assert "iqm_ci of baseline left [0, 1] and was clipped to it" in notes(s)


def test_without_a_comparison_the_note_claims_nothing_about_seeds() -> None:
    s = study({"baseline": spread(3)})
    assert reach_text(s) == "" and "(the test is discrete)" in notes(s)


def test_report_files_carry_the_computed_note(tmp_path: Path) -> None:
    rows = cell_rows({"baseline": spread(3), "no_pe": spread(3, 0.5)})
    s = study({"baseline": spread(3), "no_pe": spread(3, 0.5)})
    paths = write_report(tmp_path, s, rows)
    md = paths["markdown"].read_text()
    assert notes(s) in md and "93.8 % is the most 5" not in md
    assert "3 paired seeds allow" in paths["html"].read_text()


@pytest.mark.parametrize("baseline", ["baseline", "full"])
def test_the_baseline_row_is_labelled_once(baseline: str) -> None:
    """Its name alone in the variant column; its Δ cell says it is the reference."""
    s = summary_of(cell_rows({baseline: spread(3), "no_pe": spread(3, 0.5)}), baseline=baseline)
    row = row_cells(baseline, s["variants"][baseline], baseline)
    assert row[0] == baseline and sum("(baseline)" in c for c in row) == 1
    assert not any(f"{baseline} (baseline)" in c for c in row)


def test_the_verdict_counts_the_pairs_the_test_ran_on() -> None:
    """6 seeds of no_pe, 5 of them paired: 5 pairs cannot reach p <= 0.05 (2 / 2^5 > 0.05), so
    the verdict says "at 5 seeds" and that more are needed, not "at 6 seeds"."""
    rows = cell_rows({"baseline": spread(5), "no_pe": spread(6, 0.5)})
    rows.append(cell_row("baseline", 5, None, state="running", diverged=None))
    s = summary_of(rows)
    v = s["variants"]["no_pe"]
    assert (v["n"], v["n_pairs"]) == (6, 5) and v["min_seeds"] == 6
    text = verdict("no_pe", s)
    assert "at 5 seeds" in text and "that needs at least 6" in text
