"""``ablate sweep --dry-run``: the cells and each variant's overrides, and nothing run or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.cli.parser import main
from tests.conftest import write_spec


def test_dry_run_prints_the_cells_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, seeds=3)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["sweep", str(spec), "--dry-run", "model.d_model=32"]) == 0
    out, err = capsys.readouterr()
    assert "no_pe" in out and "model.pe=none" in out and "(the baseline)" in out
    assert "6 cells (2 variants)" in err and "nothing was run or written" in err
    assert "3 seeds per variant cannot reach p Holm <= 0.05" in err  # 1 comparison needs 6
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no runs/, no study, no cache
