"""``ablate power``: seeds needed for a target power, by resampling a pilot study with the
report's own test. The expected counts follow from the exact tests' smallest p-values.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/stats/test_power.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ablate_cmd, run_sweep, write_spec


@pytest.mark.multiprocess
def test_power_command_on_a_sweep(tmp_path: Path) -> None:
    write_spec(tmp_path, seeds=3)
    assert run_sweep(tmp_path, "--no-wandb").returncode == 0
    run_dir = tmp_path / "runs" / "tiny"
    proc = subprocess.run(
        ablate_cmd("power", str(run_dir), "--resamples", "20", "--max-seeds", "6"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = json.loads((run_dir / "power.json").read_text())
    assert set(table["variants"]) == {"no_pe"} and table["resamples"] == 20
    entry = table["variants"]["no_pe"]
    assert entry["pilot_seeds"] == 3 and entry["test"] == "paired-permutation"
    assert [p["seeds"] for p in entry["curve"]][0] == 3 and "no_pe" in proc.stdout
    bad = subprocess.run(ablate_cmd("power", str(run_dir), "--power", "1.5"), capture_output=True, text=True)
    assert bad.returncode == 2 and "--power=1.5 is out of range; valid: (0, 1)" in bad.stderr
