"""``ablate wandb-report``: the W&B Report's and workspace's specs, checked offline against what the runs log.

The specs (``runs/<name>/wandb-report.json``, ``wandb-workspace.json``) are what W&B would store. Its runset filters are
evaluated here against the runs' attributes: in the fast tier against what ``wandb_glue`` passes
to W&B (captured, nothing logged), in the slow tier against real offline runs of a sweep, read back
with ``wandb leet inspect --json``.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/integrations/test_wandb_report.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.configs import write_spec
from tests.helpers.sweeps import run_sweep
from tests.unit.sweeps.integrations.test_wandb_report import (
    column_key,
    matches,
    panels,
    wandb_report,
    workspace_panels,
    workspace_runset,
)


def offline_runs(wandb_dir: Path) -> list[dict]:
    """Every offline run's record (``leet inspect --json``), in folder order, plus ``logged``: every
    key it logged; ``config`` and ``summary``: every update merged (``log_cell`` and ``end_cell``
    add to both at the end); ``exit_code``: its exit record's (None: the run never ended)."""
    exe = Path(sys.executable).parent / "wandb"
    runs = []
    for folder in sorted(wandb_dir.glob("offline-run-*")):
        out = subprocess.run(
            [str(exe), "leet", "inspect", str(folder), "--json"], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        records = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        [run] = [r["run"] for r in records if r["type"] == "run"]
        # Media and tables are flattened (``attention/layer0._type``): the key is before the dot.
        run["logged"] = {
            k.split(".")[0] for r in records if r["type"] == "history" for k in r["history"]["item"]
        }
        run["config"] = run["config"]["update"]
        run["summary"] = {}
        for r in records:
            if r["type"] in ("config", "summary"):
                run[r["type"]].update(r[r["type"]]["update"])
        exits = [r["exit"].get("exit_code", 0) for r in records if r["type"] == "exit"]
        run["exit_code"] = exits[-1] if exits else None
        runs.append(run)
    return runs


def inspect_runs(wandb_dir: Path) -> dict[str, dict]:
    """``offline_runs`` by display name (each name once: a sweep that was never interrupted)."""
    runs = offline_runs(wandb_dir)
    by_name = {run["display_name"]: run for run in runs}
    assert len(by_name) == len(runs), sorted(r["display_name"] for r in runs)
    return by_name


@pytest.mark.multiprocess
def test_report_matches_a_real_sweeps_offline_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Every panel's runset keeps exactly the runs that log its keys: cells for curves and bars,
    the heatmap seeds' cells for heatmaps, the summary run for the table; the workspace keeps the
    cells, and each of its axes and table columns is a key they carry. The offline runs record
    their group and job type (``leet inspect --summary`` does not print them; the run record
    does)."""
    write_spec(tmp_path, seeds=2)
    ran = run_sweep(tmp_path, "--workers", "1")
    assert ran.returncode == 0, ran.stderr[-3000:]
    run_dir = tmp_path / "runs" / "tiny"
    assert wandb_report(str(run_dir)) == 0
    data = json.loads((run_dir / "wandb-report.json").read_text())
    runs = inspect_runs(run_dir / "wandb")
    cells = {f"{v}-s{s}" for v in ("baseline", "no_pe") for s in (0, 1)}
    assert set(runs) == cells | {"tiny-summary"}

    def kept(runset: dict) -> set[str]:
        return {name for name, run in runs.items() if matches(runset, run)}

    for panel, runset in panels(data, "Run History Line Plot") + panels(data, "Bar Chart"):
        assert kept(runset) == cells
        cfg = panel["config"]
        for name in cells:
            assert set(cfg["metrics"]) | {cfg.get("xAxis", "_step")} <= runs[name]["logged"]
            assert runs[name]["config"]["variant"] == name.split("-s")[0]
    for panel, runset in panels(data, "Media Browser"):
        want = (
            {"tiny-summary"}
            if panel["config"]["mediaKeys"] == ["metric_plot"]
            else {"baseline-s1", "no_pe-s1"}
        )
        assert kept(runset) == want
        for name in want:
            assert set(panel["config"]["mediaKeys"]) <= runs[name]["logged"]
    assert "variants" in runs["tiny-summary"]["logged"]

    workspace = json.loads((run_dir / "wandb-workspace.json").read_text())
    runset = workspace_runset(workspace)
    assert kept(runset) == cells
    [pc] = workspace_panels(workspace, "Parallel Coordinates Plot")
    keys = [column_key(c["accessor"]) for c in pc["config"]["columns"]]
    keys += [column_key(c) for c in runset["runFeed"]["columnOrder"][1:]]  # after the run's name
    assert ("config", "model.pe") in keys and ("summary", "diverged") in keys
    for name in cells:
        run = runs[name]
        for section, key in keys:
            assert key in run[section], (name, section, key)
        assert (run["run_group"], run["job_type"]) == (f"tiny/{run['config']['variant']}", "tiny")
        assert "data.n_train" in run["config"] and "data.source" not in run["config"]  # order task
    assert (runs["tiny-summary"]["run_group"], runs["tiny-summary"]["job_type"]) == (
        "tiny/summary",
        "summary",
    )
