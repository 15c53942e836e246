"""The ablation grid: spec validation, exactly-once cells with several workers,
kill -9 and resume, heatmap archive, W&B offline runs, report.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/run/test_sweep.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from tests.conftest import TINY_BASE, ablate_cmd, run_sweep, trials_by_cell, write_spec


@pytest.mark.multiprocess
def test_sweep_two_workers_every_cell_once(tmp_path: Path) -> None:
    write_spec(tmp_path)
    proc = run_sweep(tmp_path, "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "tiny"
    by_cell = trials_by_cell(run_dir)
    expected = {f"{v}/s{s}" for v in ("baseline", "no_pe") for s in range(3)}
    complete = {c for c, ts in by_cell.items() if any(t.state == TrialState.COMPLETE for t in ts)}
    assert complete == expected
    for cell in expected:
        assert sum(t.state == TrialState.COMPLETE for t in by_cell[cell]) == 1, cell
    # Every complete trial carries the cell's record.
    t = next(t for t in by_cell["no_pe/s2"] if t.state == TrialState.COMPLETE)
    assert t.params == {"variant": "no_pe", "seed": 2}
    assert t.user_attrs["override.model.pe"] == "none" and t.user_attrs["diverged"] is False
    assert {"val/acc", "test/acc"} <= set(t.user_attrs) and "metrics" not in t.user_attrs
    assert t.value == t.user_attrs["test/acc"] and t.user_attrs["wall_s"] > 0

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cells"] == {"total": 6, "complete": 6, "missing": []}
    assert set(summary["variants"]) == {"baseline", "no_pe"} and summary["baseline"] == "baseline"
    assert all(v["n"] == 3 for v in summary["variants"].values())
    # Heatmaps only for heatmap seeds, one PNG per layer, (N, H, L, L) arrays.
    import numpy as np

    for variant in ("baseline", "no_pe"):
        assert not (run_dir / "heatmaps" / variant / "seed0").exists()
        hm = run_dir / "heatmaps" / variant / "seed1"
        assert sorted(p.name for p in hm.glob("layer*.png")) == ["layer0.png", "layer1.png"]
        npz = np.load(hm / "attention.npz")
        assert npz["layer0"].shape[:2] == (4, 2) and npz["layer0"].shape[2] == npz["layer0"].shape[3]
        heads = json.loads((hm / "heads.json").read_text())
        assert np.array(heads["entropy"]).shape == (2, 2) and np.array(heads["importance"]).shape == (2, 2)
    for name in ("results.csv", "report.md", "report.html"):
        assert (run_dir / name).is_file()
    html = (run_dir / "report.html").read_text()
    assert "no_pe" in html and "data:image/png;base64," in html
    assert len((run_dir / "results.csv").read_text().splitlines()) == 7

    # Same command again: nothing reruns.
    again = run_sweep(tmp_path, "--workers", "2")
    assert again.returncode == 0, again.stderr
    assert sum(len(ts) for ts in trials_by_cell(run_dir).values()) == sum(len(ts) for ts in by_cell.values())


@pytest.mark.multiprocess
def test_identity_mismatch_is_refused(tmp_path: Path) -> None:
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    assert run_sweep(tmp_path, "--no-wandb").returncode == 0
    proc = run_sweep(tmp_path, "--no-wandb", "model.d_ff=64")
    assert proc.returncode == 2 and "different base config" in proc.stderr


@pytest.mark.multiprocess
def test_kill_worker_then_resume(tmp_path: Path) -> None:
    """kill -9 a worker mid-cell: finished cells are kept, the killed cell reruns once."""
    base = {**TINY_BASE, "trainer": {"max_steps": 200, "log_every": 50}}
    write_spec(tmp_path, base=base, seeds=2, heatmap_seeds=[0])
    run_dir = tmp_path / "runs" / "tiny"
    driver = subprocess.Popen(
        ablate_cmd(
            "sweep",
            str(tmp_path / "tiny.yaml"),
            "--runs",
            str(tmp_path / "runs"),
            "--no-wandb",
            "--heartbeat",
            "1",
            "--grace",
            "3",
        ),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 240
    killed_cell = None
    while time.time() < deadline and killed_cell is None:
        time.sleep(0.5)
        if not (run_dir / "spec.json").exists():  # written once the study exists
            continue
        cells = trials_by_cell(run_dir)
        done = [c for c, ts in cells.items() if any(t.state == TrialState.COMPLETE for t in ts)]
        running = [c for c, ts in cells.items() if any(t.state == TrialState.RUNNING for t in ts)]
        if running and 1 <= len(done) <= 2:  # mid-sweep, even if a cell ends while we look
            pids = subprocess.run(
                ["pgrep", "-f", f"ablate.sweeps.run.worker --run-dir {run_dir}"],
                capture_output=True,
                text=True,
            ).stdout.split()
            for pid in pids:
                os.kill(int(pid), signal.SIGKILL)
            killed_cell = running[0]
    assert killed_cell is not None, "no cell was running in time"
    driver.communicate(timeout=60)
    before = trials_by_cell(run_dir)
    finished_before = {
        c: next(t.number for t in ts if t.state == TrialState.COMPLETE)
        for c, ts in before.items()
        if any(t.state == TrialState.COMPLETE for t in ts)
    }
    assert killed_cell not in finished_before

    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 0, proc.stderr
    after = trials_by_cell(run_dir)
    for cell, number in finished_before.items():  # kept, never rerun
        assert [t.number for t in after[cell] if t.state == TrialState.COMPLETE] == [number]
        assert len(after[cell]) == len(before[cell])
    killed = after[killed_cell]
    assert [t.state for t in killed].count(TrialState.COMPLETE) == 1
    assert [t.state for t in killed].count(TrialState.FAIL) == 1  # the killed attempt, failed by heartbeat
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cells"]["complete"] == summary["cells"]["total"] == 4
    assert not list((run_dir / "cells").glob(".*partial*"))


@pytest.mark.multiprocess
def test_wandb_offline_runs_carry_group_name_config(tmp_path: Path) -> None:
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    proc = run_sweep(tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "tiny"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    found = {}
    for run in sorted((run_dir / "wandb").glob("offline-run-*")):
        records = subprocess.run(
            ["wandb", "leet", "inspect", "--json", str(run)], capture_output=True, text=True, env=env
        ).stdout.splitlines()
        run_rec = next(r["run"] for r in map(json.loads, filter(None, records)) if r.get("type") == "run")
        summary = json.loads(
            subprocess.run(
                ["wandb", "leet", "inspect", "--summary", "--json", str(run)],
                capture_output=True,
                text=True,
                env=env,
            ).stdout
        )
        found[summary["name"]] = (run_rec, summary)
    assert set(found) == {"baseline-s0", "no_pe-s0", "tiny-summary"}
    rec, summary = found["no_pe-s0"]
    assert (rec["run_group"], rec["job_type"], rec["project"]) == ("tiny/no_pe", "tiny", "ablate")
    assert summary["config"]["variant"] == "no_pe" and summary["config"]["seed"] == 0
    assert summary["config"]["model.pe"] == "none"
    assert "test/acc" in summary["summary"] and "heads/entropy/l0h0" in summary["summary"]
    assert set(rec["tags"]) >= {"tiny", "no_pe"}
    # The trial stores the W&B run id.
    by_cell = trials_by_cell(run_dir)
    wandb_ids = {
        t.user_attrs["wandb_id"] for ts in by_cell.values() for t in ts if t.state == TrialState.COMPLETE
    }
    assert all(wandb_ids) and len(wandb_ids) == 2
    rec, summary = found["tiny-summary"]
    assert rec["run_group"] == "tiny/summary" and summary["summary"]["cells_complete"] == 2
    # Each variant's statistics as scalars, equal to the report's summary.json.
    report = json.loads((run_dir / "summary.json").read_text())["variants"]
    scalars = summary["summary"]
    for variant in ("baseline", "no_pe"):
        assert scalars[f"{variant}/median"] == pytest.approx(report[variant]["median"])
        assert scalars[f"{variant}/n"] == 1
    assert scalars["no_pe/delta"] == pytest.approx(report["no_pe"]["delta"])  # the primary test's Δ
    # one seed: Δ is that seed's difference, and no interval exists to log
    assert report["no_pe"]["delta"] == pytest.approx(report["no_pe"]["median"] - report["baseline"]["median"])
    assert "no_pe/ci_lo" not in scalars and scalars["no_pe/verdict"].startswith("no_pe: not distinguishable")
    assert "baseline/delta" not in scalars


@pytest.mark.multiprocess
def test_report_and_compare_commands(tmp_path: Path) -> None:
    """Two sweeps that differ in training length: `ablate report` rewrites a report,
    `ablate compare` puts them side by side with attention difference maps."""
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0], extra_metrics=["val/acc"])
    runs = {}
    for name, steps in (("a", "2"), ("b", "6")):
        proc = run_sweep(tmp_path, "--no-wandb", f"trainer.max_steps={steps}", "--runs", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        runs[name] = tmp_path / name / "tiny"
    summary = json.loads((runs["a"] / "summary.json").read_text())
    assert set(summary["extra_metrics"]["val/acc"]) == {"baseline", "no_pe"}
    (runs["a"] / "report.md").unlink()
    rep = subprocess.run(ablate_cmd("report", str(runs["a"])), capture_output=True, text=True, cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert "## val/acc" in (runs["a"] / "report.md").read_text()
    assert "baseline" in rep.stdout and "no_pe" in rep.stdout

    out = tmp_path / "cmp"
    cmp = subprocess.run(
        ablate_cmd("compare", str(runs["a"]), str(runs["b"]), "--out", str(out)),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert cmp.returncode == 0, cmp.stderr
    md = (out / "compare.md").read_text()
    assert "baseline" in md and "no_pe" in md
    assert len(list(out.glob("attention_*.png"))) == 4  # 2 variants x 2 layers
    assert "data:image/png;base64," in (out / "compare.html").read_text()

    missing = subprocess.run(ablate_cmd("report", str(tmp_path / "nope")), capture_output=True, text=True)
    assert missing.returncode == 2 and "not a sweep run folder" in missing.stderr
