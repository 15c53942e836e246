"""The calibration tables of the statistics page are what docs/_gen/calibration.py renders from
the benchmark's committed JSON; the benchmark itself writes no docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.benchmarks import stats_calibration
from ablate.errors import ConfigError
from docs._gen import calibration
from docs._gen.blocks import blocks
from tests.helpers.paths import REPO


def test_the_pages_block_is_the_committed_results_rendering() -> None:
    """Byte for byte: rerun ``python -m docs._gen.calibration --write`` after the benchmark."""
    page = (REPO / "docs" / "pages" / "explanations" / "statistics.md").read_text()
    assert blocks(page, calibration.TAG) == {"": calibration.render(calibration.read_result())}


def test_the_renderer_knows_the_benchmarks_refinement_and_schedules() -> None:
    """What the JSON does not record, the renderer must agree on with the benchmark."""
    assert (calibration.REFINE, calibration.REFINE_FACTOR) == (
        stats_calibration.REFINE,
        stats_calibration.REFINE_FACTOR,
    )
    res = calibration.read_result()
    assert list(next(iter(res["models"].values()))["sequential"]) == list(stats_calibration.SCHEDULES)
    assert 5 in res["printed_confidence"]  # seed counts are ints again


def test_the_benchmark_no_longer_writes_docs() -> None:
    source = Path(stats_calibration.__file__).read_text()
    assert "statistics.md" not in source and "<!--" not in source


def test_the_command_prints_or_writes_the_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert calibration.main([]) == 0
    block = capsys.readouterr().out
    assert block == calibration.render(calibration.read_result())
    page = tmp_path / "statistics.md"
    page.write_text("# S\n<!-- calibration -->\nold\n<!-- /calibration -->\n")
    monkeypatch.setattr(calibration, "PAGE", page)
    assert calibration.main(["--write"]) == 0
    assert page.read_text() == f"# S\n<!-- calibration -->\n{block}<!-- /calibration -->\n"
    page.write_text("# no block\n")
    assert calibration.main(["--write"]) == 2
    assert "has no block <!-- calibration -->" in capsys.readouterr().err


def test_a_result_that_is_not_one_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "cal.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        calibration.read_result(bad)
    bad.write_text(json.dumps({"meta": {}}))
    with pytest.raises(ConfigError, match="missing or wrong replicates"):
        calibration.read_result(bad)
    assert calibration.main(["--json", str(tmp_path / "absent.json")]) == 2
