"""The ledger load test (benchmarks/ledger.py) on a few cells: every cell once, no duplicates.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/ledger/test_ledger.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.benchmarks.ledger import main


@pytest.mark.multiprocess
def test_ledger_claims_every_cell_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ledger.json"
    assert main(["--cells", "12", "--workers", "3", "--backends", "sqlite,journal", "--out", str(out)]) == 0
    results = json.loads(out.read_text())["backends"]
    for backend in ("sqlite", "journal"):
        r = results[backend]
        assert r["complete"] == r["cells"] == 12 and r["duplicates"] == 0, r
        assert r["cells_per_s"] > 0 and r["claim_p99_ms"] >= r["claim_p50_ms"] > 0
    assert "| journal | 12 | 3 |" in capsys.readouterr().out
