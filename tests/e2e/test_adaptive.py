"""Adaptive seeds: a spec's ``seeds: {min, max, step, stop}`` runs rounds, adding seeds only to
the undecided comparisons (and the baseline); each look's p is p_seq = min(1, looks p) and Holm
over p_seq decides.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/drivers/test_adaptive.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.configs import write_spec
from tests.helpers.sweeps import run_sweep


@pytest.mark.multiprocess
def test_adaptive_sweep_runs_rounds_until_max_and_resumes(tmp_path: Path) -> None:
    # 3 training steps: every variant sits near chance, so no comparison separates. On the loss
    # (no ceiling, no chance level) the design check lets every round run; on the accuracy it
    # would stop no_pe after the first look (tests/unit/sweeps/drivers/test_adaptive.py).
    write_spec(
        tmp_path,
        seeds={"min": 2, "max": 4, "step": 2},
        heatmap_seeds=[0],
        metric="test/loss",
        direction="minimize",
    )
    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "tiny"
    # 2 looks: p <= 0.05 / 2 needs 7 pairs, 4 cannot: one line says so before anything runs
    assert (
        "tiny: 4 seeds per variant cannot reach p Holm <= 0.05 for no_pe (1 comparison x 2 looks)"
        in " ".join(proc.stderr.split())
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["adaptive"]["looks"] == 2 and summary["adaptive"]["alpha_per_look"] == 0.025
    # neither look could decide, whatever the values; the last look is the report's numbers
    assert [r["undecided"] for r in summary["rounds"]] == [["no_pe"], ["no_pe"]]
    no_pe = summary["variants"]["no_pe"]
    assert summary["rounds"][-1]["p_seq"]["no_pe"] == no_pe["p_seq"] == min(1.0, 2 * no_pe["p_value"])
    assert (
        "these seeds cannot reach p Holm <= 0.05: that needs at least 7. No margin was given"
        in (summary["verdicts"]["no_pe"])
    )
    assert [r["seeds"] for r in summary["rounds"]] == [
        {"baseline": 2, "no_pe": 2},
        {"baseline": 4, "no_pe": 4},
    ]
    assert summary["rounds"][0]["undecided"] == ["no_pe"]
    assert summary["stop_reason"] == "max seeds (4) reached"
    assert summary["cells"] == {"total": 8, "complete": 8, "missing": []}
    assert summary["variants"]["no_pe"]["n"] == 4 and summary["methods"]["seeds"] == [0, 1, 2, 3]
    md = (run_dir / "report.md").read_text()
    assert (
        "Round 2: seeds baseline 4, no_pe 4; undecided: no_pe." in md
        and "Stopped: max seeds (4) reached." in md
    )
    # The same command again: nothing reruns, the rounds stay as they were.
    again = run_sweep(tmp_path, "--no-wandb")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["rounds"] == summary["rounds"]
    log = "".join(p.read_text() for p in (run_dir / "logs").glob("worker-*.log"))
    assert log.count(": done") == 8  # each cell ran once


@pytest.mark.multiprocess
def test_adaptive_seeds_stop_a_comparison_the_design_check_marks_uninformative(tmp_path: Path) -> None:
    """3 steps leave both variants at chance on the accuracy: after the first look the design
    check stops no_pe, so no seeds are added that could not make the design answer."""
    write_spec(tmp_path, seeds={"min": 2, "max": 4, "step": 2}, heatmap_seeds=[0])
    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "runs" / "tiny" / "summary.json").read_text())
    assert [r["uninformative"] for r in summary["rounds"]] == [["no_pe"]]
    assert summary["stop_reason"] == "the design check stopped no_pe (see its verdict)"
    assert "; the design cannot answer: baseline " in summary["verdicts"]["no_pe"]
    assert "that needs at least" not in summary["verdicts"]["no_pe"]
    assert summary["cells"] == {"total": 4, "complete": 4, "missing": []}
