"""``python -m ablate.benchmarks --quick`` runs end to end and writes every field; timings are not asserted."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs._gen import calibration
from tests.helpers.paths import REPO

RATIOS = ("encoder_vs_torch", "lightning_vs_raw", "seed_parallel_speedup", "cell_overhead")


def positive_finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x > 0


@pytest.mark.multiprocess
def test_quick_benchmark_writes_every_ratio(tmp_path: Path) -> None:
    out = tmp_path / "tmp" / "results.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "ablate.benchmarks", "--quick", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "encoder_vs_torch" in proc.stdout  # the table
    r = json.loads(out.read_text())
    assert r["quick"] is True
    for name in RATIOS:
        assert positive_finite(r[name]), (name, r[name])
        assert name in r["targets"] and name in r["details"]
    for name in ("ours_steps_s", "torch_steps_s", "ratio_of_pairs"):
        assert positive_finite(r["details"]["encoder_vs_torch"][name]), name
    for name in ("lightning_steps_s", "raw_steps_s", "ratio_of_pairs"):
        assert positive_finite(r["details"]["lightning_vs_raw"][name]), name
    step = r["step"]
    assert positive_finite(step["matmul_peak_flops"]) and set(step["tasks"]) == {
        "order-only",
        "multi-lookup",
        "SST-2",
    }
    for e in step["tasks"].values():  # counted FLOPs over measured time, against the measured peak
        assert positive_finite(e["step_flops"]) and 0 < e["fraction_of_peak"] < 1.5
    sp = r["details"]["seed_parallel_speedup"]
    assert sp["k"] == 2 and positive_finite(sp["stacked_member_steps_s"])
    cell = r["details"]["cell_overhead"]
    for name in ("total_s", "fit_s", "eval_s", "overhead_s", "before_first_fit_s", "peak_rss_mb"):
        assert positive_finite(cell[name]), name
    assert cell["cells"] == 2 and len(cell["per_cell_overhead_s"]) == 2
    assert cell["steps"] == 40 and cell["fit_s"] + cell["eval_s"] < cell["total_s"]
    # The second cell in the same process pays no imports: the amortized share is smaller.
    assert cell["ratio"] < cell["single_cell_ratio"]
    assert positive_finite(r["memory"]["train_process_peak_rss_mb"])
    gpu = r["gpu"]
    assert isinstance(gpu["available"], bool)
    if gpu["available"]:
        for run in gpu["runs"]:
            assert positive_finite(run["tokens_s"]) and positive_finite(run["max_memory_allocated_mb"])
            assert run["mfu"] is None or positive_finite(run["mfu"])


@pytest.mark.multiprocess
def test_gpu_check_smoke_runs_on_cpu(tmp_path: Path) -> None:
    """The GPU check script itself (tiny, CPU): its seed-parallel and report paths run."""
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ablate.benchmarks.gpu_check", "--smoke", "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(out.read_text())
    assert positive_finite(r["sequential_member_steps_s"])
    assert [sp["k"] for sp in r["seed_parallel"]] == [2]
    assert all(positive_finite(sp["speedup"]) for sp in r["seed_parallel"])
    assert "seed-parallel K=2" in proc.stdout


@pytest.mark.multiprocess
def test_stats_calibration_quick_renders_every_table_and_check(tmp_path: Path) -> None:
    """The calibration benchmark's smoke run: every model, table and done-when check is there
    (the docs render its JSON: docs/_gen/calibration.py), and the committed full run's checks are
    what the docs block says (its numbers are data)."""
    out = tmp_path / "cal.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ablate.benchmarks.stats_calibration", "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert set(res["models"]) == {"normal", "skewed", "ceiling", "bimodal"}
    assert res["printed_confidence"]["5"]["paired"] is None  # 5 paired seeds: no 95 % interval
    assert all(c["criterion"] in proc.stdout for c in res["checks"])
    text = calibration.render(calibration.read_result(out))
    assert "--quick: smoke, not data" in text and "**Checks**" in text
    full = json.loads((REPO / "benchmarks" / "results" / "stats-calibration.json").read_text())
    page = (REPO / "docs" / "pages" / "explanations" / "statistics.md").read_text()
    for check in full["checks"]:
        assert check["criterion"] in page  # the docs block is the committed run's
