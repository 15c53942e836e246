"""The printed tables say what the report says: ``ablate sweep``'s statistics table is the
report's rows (sweeps/report/text.py ``stat_rows``), cell for cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from ablate.cli import tables
from ablate.sweeps.report.files import table_md
from ablate.sweeps.report.text import HEADER, conf_text, fmt_p, reach_text, stat_rows, status_line
from ablate.sweeps.stats.summary import summarize
from tests.helpers.rows import cell_row, cell_rows


def _summary(partial: bool = False) -> dict:
    rows = cell_rows({"baseline": [0.90, 0.92, 0.95, 0.91], "no_pe": [0.50, 0.52, 0.49, 0.55]})
    if partial:
        rows.append(cell_row("no_pe", 4, None, state="running", diverged=None))
    return summarize(
        rows,
        experiment="tiny",
        metric="test/acc",
        direction="maximize",
        baseline="baseline",
        variants=["baseline", "no_pe"],
    )


def _text(renderable: object, width: int = 220) -> str:
    console = Console(record=True, width=width)
    console.print(renderable)
    return console.export_text()


def test_the_terminal_table_is_the_reports_rows() -> None:
    s = _summary()
    text = _text(tables.stats_table(s))
    shown = [h for h in HEADER if h not in tables.TERMINAL_SKIP]
    assert all(h in text for h in shown) and "median [q1, q3]" in text  # not eaten as markup
    report = "\n".join(table_md(HEADER, stat_rows(s["variants"], "baseline", "test/acc")))
    for row in stat_rows(s["variants"], "baseline", "test/acc"):
        for col, cell in zip(HEADER, row, strict=True):
            assert cell in report
            if col not in tables.TERMINAL_SKIP:
                assert cell in text, (col, cell)
    assert "0 (baseline)" in text and "baseline (baseline)" not in text
    assert "[q1-q3]" not in text  # the old terminal's own spelling of the spread


def test_the_table_fits_a_160_column_log() -> None:
    lines = _text(tables.stats_table(_summary()), width=160).splitlines()
    assert max(len(line) for line in lines) <= 160
    assert sum("│ no_pe" in line for line in lines) == 1  # no cell wrapped onto a second line


def test_a_partial_study_prints_the_reports_status_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    notes = Console(record=True, width=300)
    monkeypatch.setattr(tables, "console", notes)
    monkeypatch.setattr(tables, "out_console", Console(record=True, width=300))
    s = _summary(partial=True)
    tables.print_summary(s, tmp_path)
    assert status_line(s) in notes.export_text()


def test_the_terminal_note_names_the_effect_estimate_and_what_the_seeds_allow(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """4 paired seeds: the widest interval has 1 - 2 / 2^4 confidence, the smallest p 2 / 2^4."""
    notes = Console(record=True, width=1000)
    monkeypatch.setattr(tables, "console", notes)
    monkeypatch.setattr(tables, "out_console", Console(record=True, width=300))
    s = _summary()
    tables.print_summary(s, tmp_path)
    text = notes.export_text()
    assert "Δ: the effect estimate, the one the verdict uses" in text
    assert reach_text(s) in text and f"at most {conf_text(1 - 2 * 0.5**4)} confidence" in text
    assert f"a p of at least {fmt_p(2 * 0.5**4)}" in text


def test_a_baseline_with_another_name_is_labelled_once_in_the_terminal() -> None:
    rows = cell_rows({"full": [0.90, 0.92, 0.95, 0.91], "no_pe": [0.50, 0.52, 0.49, 0.55]})
    s = summarize(
        rows,
        experiment="tiny",
        metric="test/acc",
        direction="maximize",
        baseline="full",
        variants=["full", "no_pe"],
    )
    lines = _text(tables.stats_table(s)).splitlines()
    (row,) = [line for line in lines if line.startswith("│ full ")]
    assert row.count("full") == 1 and row.count("baseline") == 1 and "full (baseline)" not in row
