"""The cross-task table: IQM of baseline-normalized scores and P(improve) averaged over tasks,
with a bootstrap stratified by task."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ablate.errors import ConfigError
from ablate.sweeps.stats.aggregate import aggregate
from tests.conftest import ablate_cmd, run_sweep, write_spec


def test_hand_values() -> None:
    tasks = {
        "a": {"base": np.array([0.8, 0.8, 0.8, 0.8]), "v": np.array([0.4, 0.4, 0.4, 0.4])},
        "b": {"base": np.array([0.5, 0.5, 0.5, 0.5]), "v": np.array([0.5, 0.5, 0.5, 0.5])},
    }
    agg = aggregate(tasks, "base")["variants"]
    # normalized: v is 0.5 x4 on a and 1.0 x4 on b; IQM drops 2 at each end of 8: mean(0.5, 0.5, 1, 1)
    assert agg["v"]["iqm"] == pytest.approx(0.75) and agg["v"]["iqm_ci95"] == pytest.approx([0.75, 0.75])
    # P(improve): 0 on a, 0.5 (all ties) on b
    assert agg["v"]["p_improve"] == pytest.approx(0.25) and agg["v"]["p_improve_ci95"] == pytest.approx(
        [0.25, 0.25]
    )
    assert agg["base"]["iqm"] == pytest.approx(1.0) and "p_improve" not in agg["base"]


def test_stratified_bootstrap_keeps_every_task() -> None:
    rng = np.random.default_rng(1)
    tasks = {
        t: {"base": rng.normal(0.8, 0.01, 6), "v": rng.normal(m, 0.01, 6)}
        for t, m in (("a", 0.4), ("b", 0.8))
    }
    agg = aggregate(tasks, "base")["variants"]["v"]
    low, high = agg["iqm_ci95"]
    # a resample without task a's runs would reach ~1.0; one without b's ~0.5: neither happens
    assert 0.6 < low <= agg["iqm"] <= high < 0.9


def test_a_baseline_at_zero_cannot_normalize() -> None:
    with pytest.raises(ConfigError, match="the baseline's median is 0.0"):
        aggregate({"a": {"base": np.zeros(3), "v": np.ones(3)}}, "base")


@pytest.mark.multiprocess
def test_aggregate_command(tmp_path: Path) -> None:
    for name in ("t1", "t2"):
        write_spec(tmp_path, name=name, seeds=2)
        assert run_sweep(tmp_path, "--no-wandb").returncode == 0
    runs = [str(tmp_path / "runs" / n) for n in ("t1", "t2")]
    proc = subprocess.run(
        ablate_cmd("aggregate", *runs, "--out", str(tmp_path / "agg")), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    agg = json.loads((tmp_path / "agg.json").read_text())
    assert agg["tasks"] == ["t1", "t2"] and agg["variants"]["no_pe"]["runs"] == 4
    assert "| no_pe | 4 |" in (tmp_path / "agg.md").read_text()
    one = subprocess.run(ablate_cmd("aggregate", runs[0]), capture_output=True, text=True)
    assert one.returncode == 2 and "at least two run folders" in one.stderr
    twice = subprocess.run(ablate_cmd("aggregate", runs[0], runs[0]), capture_output=True, text=True)
    assert twice.returncode == 2 and "a second run folder of experiment 't1'" in twice.stderr
