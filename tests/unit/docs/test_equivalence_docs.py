"""The equivalence tables of the statistics page are docs/_gen/equivalence.py's rendering of the
benchmark's committed JSON, and that JSON's check held (type-I of the claim at the margin)."""

from __future__ import annotations

from ablate.benchmarks import equivalence_calibration
from docs._gen import equivalence
from docs._gen.blocks import blocks
from tests.helpers.paths import REPO


def test_the_pages_block_is_the_committed_results_rendering() -> None:
    """Byte for byte: rerun ``python -m docs._gen.equivalence --write`` after the benchmark."""
    page = (REPO / "docs" / "pages" / "explanations" / "statistics.md").read_text()
    assert blocks(page, equivalence.TAG) == {"": equivalence.render(equivalence.read_result())}


def test_the_committed_result_is_a_full_run_that_passed() -> None:
    res = equivalence.read_result()
    assert not res["meta"]["quick"] and res["replicates"] == equivalence_calibration.REPS
    assert list(res["models"]) == list(equivalence_calibration.MODELS)
    assert all(c["passed"] for c in res["checks"])
    for e in res["models"].values():  # the edges really are at the margin
        assert all(abs(abs(t) - res["margin"]) < 2e-4 for t in e["pseudomedian_at_margin"].values())
