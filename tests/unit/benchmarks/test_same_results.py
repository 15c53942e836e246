"""same_results: two parents of run folders compared number for number (summary.json through
the careful reader and flatten, results.csv cell by cell)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.benchmarks import same_results
from ablate.sweeps.report.files import results_csv
from tests.helpers.rows import cell_rows


def _run(parent: Path, summary: dict, values: dict[str, list[float]]) -> Path:
    run = parent / "tiny"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "results.csv").write_text(results_csv(cell_rows(values)))
    return run


SUMMARY = {
    "metric": "test/acc",
    "direction": "maximize",
    "variants": {"baseline": {"median": 0.9, "ci": [0.8, 1.0]}, "no_pe": {"median": 0.5}},
    "tuned": {},
    "provenance": {"commit": "abc"},
}


def test_identical_runs_and_the_first_differences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path / "a", SUMMARY, {"baseline": [0.9], "no_pe": [0.5]})
    _run(tmp_path / "b", {**SUMMARY, "provenance": {"commit": "def"}}, {"baseline": [0.9], "no_pe": [0.5]})
    assert same_results.compare(tmp_path / "a", tmp_path / "b") == {"tiny": []}  # provenance is skipped
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "tiny: identical" in capsys.readouterr().out
    changed = {**SUMMARY, "variants": {**SUMMARY["variants"], "no_pe": {"median": 0.6}}}
    _run(tmp_path / "c", changed, {"baseline": [0.9], "no_pe": [0.5]})
    assert same_results.compare(tmp_path / "a", tmp_path / "c") == {
        "tiny": ["variants.no_pe.median: 0.5 != 0.6"]
    }


def test_summary_numbers_keep_an_empty_mapping_as_a_value(tmp_path: Path) -> None:
    """flatten's rule: ``tuned: {}`` is a value, so a summary that lacks it differs."""
    run = _run(tmp_path / "a", SUMMARY, {"baseline": [0.9]})
    numbers = same_results.summary_numbers(run)
    assert numbers["tuned"] == {} and numbers["variants.baseline.ci"] == [0.8, 1.0]
    assert "provenance.commit" not in numbers


def test_a_summary_that_is_not_one_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path / "a", SUMMARY, {"baseline": [0.9]})
    bad = _run(tmp_path / "b", SUMMARY, {"baseline": [0.9]})
    (bad / "summary.json").write_text("{truncated")
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "summary.json is not valid JSON" in capsys.readouterr().err
