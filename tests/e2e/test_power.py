"""``ablate power``: the seeds that detect a margin and that show equivalence within it, each with
its share, from a location-shift model fitted to a pilot study and the report's own test
(sweeps/stats/power.py).

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/stats/test_power.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ablate.sweeps.stats.inference import seeds_to_reject
from tests.helpers.configs import write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.sweeps import run_sweep


@pytest.mark.multiprocess
def test_power_command_on_a_sweep(tmp_path: Path) -> None:
    # The loss: a few steps leave the accuracy at chance on both sides, which the design check
    # marks uninformative (no seed count: tests/unit/sweeps/report/test_design_checks.py).
    write_spec(tmp_path, seeds=3, metric="test/loss", direction="minimize")
    assert run_sweep(tmp_path, "--no-wandb").returncode == 0
    run_dir = tmp_path / "runs" / "tiny"

    def power(*args: str) -> tuple[dict, str]:
        proc = subprocess.run(
            ablate_cmd("power", str(run_dir), *args), capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads((run_dir / "power.json").read_text()), proc.stdout

    table, stdout = power("--max-seeds", "6")
    assert set(table["variants"]) == {"no_pe"} and "no_pe" in stdout
    assert table["comparisons"] == 1 and table["alpha_per_comparison"] == pytest.approx(0.05)
    entry = table["variants"]["no_pe"]
    assert entry["pilot_seeds"] == 3 and entry["test"] == "signed-rank"  # paired, as the report
    summary = json.loads((run_dir / "summary.json").read_text())["variants"]["no_pe"]
    assert entry["estimate"] == pytest.approx(summary["delta"])  # the report's Δ
    assert entry["detect"] is None and "--margin" in entry["note"]  # no margin: no point answer
    # a margin: the test cannot reject at 0.05 below 6 pairs, nor its interval at 1 - 2 x 0.05
    # exist below 5: no count below those
    entry = power("--margin", "0.2", "--max-seeds", "12")[0]["variants"]["no_pe"]
    assert entry["detect"]["effect"] == pytest.approx(0.2) and entry["equivalence"]["margin"] == 0.2
    for claim, level in (("detect", 0.05), ("equivalence", 0.1)):
        seeds, share = entry[claim]["seeds"], entry[claim]["share"]
        least = seeds_to_reject(True, level)
        assert (seeds is None and share is None) or (least <= seeds <= 12 and 0 < share <= 1)
    bad = subprocess.run(ablate_cmd("power", str(run_dir), "--power", "1.5"), capture_output=True, text=True)
    assert bad.returncode == 2 and "--power=1.5 is out of range; valid: (0, 1)" in bad.stderr
