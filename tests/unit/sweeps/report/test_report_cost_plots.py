"""What the report shows beside the verdicts (sweeps/report/files.py): each variant's cost
(summary.json ``cost``, the cost table, results.csv's n_params), the per-seed differences of the
paired comparisons only, and the validation curves (median and IQR across seeds)."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from ablate.sweeps.report.files import (
    CURVE_ALT,
    CURVE_PLOT,
    DIFF_ALT,
    DIFF_PLOT,
    curve_bands,
    paired_differences,
    plot_differences,
    write_report,
)
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import summarize
from tests.helpers.rows import cell_row

SEEDS = range(6)  # six paired seeds: the signed-rank test can reach an interval (96.9 %)
BASE = [0.80, 0.82, 0.81, 0.85, 0.79, 0.83]


def _summary(rows: list[CellRow], variants: list[str], overrides: dict | None = None) -> dict:
    return summarize(
        rows,
        experiment="tiny",
        metric="test/acc",
        direction="maximize",
        baseline="baseline",
        variants=variants,
        overrides=overrides,
    )


def _imgs(page: str) -> dict[str, str]:
    """alt -> title of every image that has a title."""
    found = re.findall(
        r"<img src='data:image/png;base64,[A-Za-z0-9+/=]+' alt='([^']*)' title='([^']*)'>", page
    )
    return {html.unescape(alt): html.unescape(title) for alt, title in found}


def _curve(values: list[float | None], steps: list[int] | None = None) -> dict:
    return {"metric": "val/acc", "steps": steps or [2, 4, 6][: len(values)], "values": values}


# ---- cost ------------------------------------------------------------------------------------


def test_the_cost_block_per_variant_in_summary_json_and_the_reports(tmp_path: Path) -> None:
    rows = [cell_row("baseline", s, 0.8, n_params=2450, wall_s=w) for s, w in enumerate([1.0, 3.0, 2.0])]
    rows += [cell_row("gqa", s, 0.7, n_params=2178, wall_s=w) for s, w in enumerate([4.0, 9.0, 5.0])]
    rows += [
        cell_row("odd", 0, 0.6, n_params=100, wall_s=1.5),
        cell_row("odd", 1, 0.6, n_params=120, wall_s=2.5),
        cell_row("odd", 2, 0.6, wall_s=7.0),  # recorded before cells counted their parameters
        cell_row("odd", 3, None, state="running", n_params=999, wall_s=99.0),  # not complete: not counted
    ]
    summary = {**_summary(rows, ["baseline", "gqa", "odd"]), "provenance": {"commit": "abc"}}
    paths = write_report(tmp_path, summary, rows)
    on_disk = json.loads(paths["summary"].read_text())
    assert (
        on_disk["cost"]
        == summary["cost"]
        == {
            "baseline": {"n_params": 2450, "wall_s": {"median": 2.0, "min": 1.0, "max": 3.0}},
            "gqa": {"n_params": 2178, "wall_s": {"median": 5.0, "min": 4.0, "max": 9.0}},
            "odd": {"n_params": [100, 120], "wall_s": {"median": 2.5, "min": 1.5, "max": 7.0}},
        }
    )
    assert list(on_disk)[-2:] == ["cost", "provenance"]  # the provenance stays last
    md = paths["markdown"].read_text()
    assert "| gqa | 2,178 (-11.1%) | 5.00 | 4.00–9.00 |" in md
    assert "| baseline | 2,450 | 2.00 | 1.00–3.00 |" in md
    assert "| odd | 100–120 (seeds differ) | 2.50 | 1.50–7.00 |" in md
    page = paths["html"].read_text()
    assert (
        "<div class='cost' id='cost'><h2>Cost per variant</h2>" in page and "<td>2,178 (-11.1%)</td>" in page
    )
    with paths["csv"].open() as f:
        table = list(csv.DictReader(f))
    assert [r["n_params"] for r in table] == ["2450"] * 3 + ["2178"] * 3 + ["100", "120", "", "999"]
    assert CellRow.from_csv(table[0]).n_params == 2450


def test_a_variant_without_records_costs_nothing_known(tmp_path: Path) -> None:
    rows = [cell_row("baseline", 0, 0.8), cell_row("no_pe", 0, None, state="failed")]
    summary = _summary(rows, ["baseline", "no_pe"])
    md = write_report(tmp_path, summary, rows)["markdown"].read_text()
    nothing = {"n_params": None, "wall_s": {"median": None, "min": None, "max": None}}
    assert summary["cost"] == {"baseline": nothing, "no_pe": nothing}
    assert "| no_pe | – | – | – |" in md


# ---- per-seed differences ----------------------------------------------------------------------


def _paired_rows() -> list[CellRow]:
    rows = [cell_row("baseline", s, BASE[s]) for s in SEEDS]
    rows += [cell_row("paired", s, BASE[s] - 0.1 + 0.01 * s, diverged=s == 5) for s in SEEDS]
    rows += [cell_row("unpaired", s, BASE[s] + 0.05) for s in SEEDS]
    return rows


def test_the_differences_are_variant_minus_baseline_per_seed_of_paired_variants_only() -> None:
    rows = _paired_rows()
    summary = _summary(rows, ["baseline", "paired", "unpaired"], {"unpaired": {"data.seed": 1}})
    assert (
        summary["variants"]["paired"]["paired"] is True and summary["variants"]["unpaired"]["paired"] is False
    )
    diffs = paired_differences(summary, rows)
    assert list(diffs) == ["paired"]
    assert [s for s, _, _ in diffs["paired"]] == list(SEEDS)
    assert [d for _, d, _ in diffs["paired"]] == pytest.approx([-0.1 + 0.01 * s for s in SEEDS])
    assert [x for _, _, x in diffs["paired"]] == [False] * 5 + [True]  # seed 5 diverged
    assert summary["variants"]["paired"]["ci"] is not None
    with_ci = plot_differences(summary, diffs)
    summary["variants"]["paired"]["ci"] = None
    assert with_ci[:8] == b"\x89PNG\r\n\x1a\n" and plot_differences(summary, diffs) != with_ci  # the bar


def test_the_difference_plot_shows_only_paired_variants_and_goes_when_none_is(tmp_path: Path) -> None:
    rows = _paired_rows()
    summary = _summary(rows, ["baseline", "paired", "unpaired"], {"unpaired": {"data.seed": 1}})
    paths = write_report(tmp_path, summary, rows)
    title = _imgs(paths["html"].read_text())[DIFF_ALT]
    assert title == "paired per-seed differences to baseline: paired"  # not the unpaired one
    assert (
        paths["differences"] == tmp_path / DIFF_PLOT and (tmp_path / DIFF_PLOT).read_bytes()[:4] == b"\x89PNG"
    )
    assert f"![{DIFF_ALT}]({DIFF_PLOT} " in paths["markdown"].read_text()
    # Every comparison unpaired: no plot, and the old file goes with it.
    summary = _summary(rows, ["baseline", "unpaired"], {"unpaired": {"data.seed": 1}})
    paths = write_report(tmp_path, summary, rows)
    assert DIFF_ALT not in paths["html"].read_text() and DIFF_PLOT not in paths["markdown"].read_text()
    assert "differences" not in paths and not (tmp_path / DIFF_PLOT).exists()


# ---- validation curves ---------------------------------------------------------------------------


def test_the_curve_bands_are_median_and_iqr_across_seeds_at_each_step() -> None:
    rows = [
        cell_row("baseline", 0, 0.8, curve=_curve([0.1, 0.5, 0.6])),
        cell_row("baseline", 1, 0.8, curve=_curve([0.2, 0.6, 0.7])),
        cell_row("baseline", 2, 0.8, curve=_curve([0.3, 0.9, 0.8])),
        cell_row("baseline", 3, 0.8, curve=_curve([0.8, None])),  # diverged after step 2
        cell_row("no_pe", 0, None, state="running", curve=_curve([0.9])),  # not complete
        cell_row(
            "no_pe", 1, 0.5, curve={"metric": "val/loss", "steps": [2], "values": [9.0]}
        ),  # the minority
    ]
    metric, bands = curve_bands(rows, ["baseline", "no_pe"])
    assert metric == "val/acc" and list(bands) == ["baseline"]
    n, (steps, q1, med, q3) = bands["baseline"]
    assert n == 4 and steps.tolist() == [2, 4, 6]
    np.testing.assert_allclose(med, [0.25, 0.6, 0.7])  # skewed: not the means (0.35, 0.667)
    np.testing.assert_allclose(q1, [0.175, 0.55, 0.65])
    np.testing.assert_allclose(q3, [0.425, 0.75, 0.75])


def test_the_curves_appear_in_both_reports_when_cells_recorded_them(tmp_path: Path) -> None:
    rows = [cell_row("baseline", s, BASE[s], curve=_curve([0.5, 0.6 + 0.01 * s])) for s in SEEDS]
    rows += [cell_row("no_pe", s, 0.5, curve=_curve([0.5, 0.5])) for s in SEEDS]
    paths = write_report(tmp_path, _summary(rows, ["baseline", "no_pe"]), rows)
    assert _imgs(paths["html"].read_text())[CURVE_ALT] == "val/acc during training: baseline, no_pe"
    assert f"![{CURVE_ALT}]({CURVE_PLOT} " in paths["markdown"].read_text()
    assert paths["curves"].read_bytes()[:4] == b"\x89PNG"
    bare = [cell_row(r.variant, r.seed, r.metric("test/acc")) for r in rows]  # cells without curves
    paths = write_report(tmp_path, _summary(bare, ["baseline", "no_pe"]), bare)
    assert CURVE_ALT not in paths["html"].read_text() and not (tmp_path / CURVE_PLOT).exists()
