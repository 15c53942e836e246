"""W&B counts the cells the study counts, also after Ctrl-C and a resume.

A sweep logging offline W&B runs is interrupted mid-cell (SIGINT to its process group, as a
terminal sends Ctrl-C) and resumed; then every offline run of its run folder is read back
(``wandb leet inspect --json``) and compared with the study: the runs the tool counts (summary
``ablate/cell_state`` = complete, exit code 0) are the study's complete cells, one per cell, with
the ids the trials recorded; the interrupted attempt is in the folder but does not count; and the
report's and workspace's runsets, by run id (results.csv) and by the state key, keep exactly the
counted runs. (Ctrl-C between a cell's trial and its run: tests/unit/sweeps/drivers/test_worker.py.)
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from ablate.sweeps.integrations import wandb_glue
from ablate.sweeps.integrations import wandb_report as wrep
from ablate.sweeps.integrations import wandb_workspace as wws
from ablate.sweeps.ledger.run_folder import read_run_spec
from tests.e2e.test_wandb_report import offline_runs
from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.forked import run_forked
from tests.helpers.paths import ablate_cmd
from tests.helpers.sweeps import trials_by_cell
from tests.unit.sweeps.integrations.test_wandb_report import matches, panels, wandb_report, workspace_runset

pytestmark = pytest.mark.multiprocess

# A cell long enough (seconds) to be caught mid-training; 2 variants x 1 seed: the first cell
# complete, the second interrupted, then resumed.
BASE = {**TINY_BASE, "trainer": {"max_steps": 200, "log_every": 50}}


def started(run_folder: Path) -> bool:
    """Whether an offline run's ``wandb.init`` has returned (the SDK's own log says so)."""
    log = run_folder / "logs" / "debug.log"
    return log.is_file() and "run started" in log.read_text(errors="replace")


def interrupt_mid_cell(tmp_path: Path, run_dir: Path) -> str:
    """Start the sweep (W&B offline, one worker), wait until a cell is complete and the next one
    is training with its W&B run open, then Ctrl-C; the cell that was running."""
    driver = subprocess.Popen(
        ablate_cmd("sweep", str(tmp_path / "tiny.yaml"), "--runs", str(tmp_path / "runs"), "--workers", "1"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    deadline = time.time() + 120
    running: list[str] = []
    while time.time() < deadline:
        time.sleep(0.3)
        if not (run_dir / "spec.json").exists():  # written once the study exists
            continue
        cells = trials_by_cell(run_dir)
        done = [c for c, ts in cells.items() if any(t.state == TrialState.COMPLETE for t in ts)]
        running = [c for c, ts in cells.items() if any(t.state == TrialState.RUNNING for t in ts)]
        opened = [started(f) for f in (run_dir / "wandb").glob("offline-run-*")]
        if len(done) == 1 and running and opened == [True, True]:  # the running cell's run is open
            break
    else:
        driver.kill()
        pytest.fail("the sweep was never caught mid-cell with one cell complete")
    time.sleep(0.5)  # into its training
    os.killpg(driver.pid, signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, err[-3000:]
    return running[0]


def test_wandb_counts_the_studys_complete_cells_after_an_interrupt(tmp_path: Path) -> None:
    write_spec(tmp_path, base=BASE, seeds=1, heatmap_seeds=[0])
    run_dir = tmp_path / "runs" / "tiny"
    cut = interrupt_mid_cell(tmp_path, run_dir)
    [attempt] = [t for t in trials_by_cell(run_dir)[cut] if t.state != TrialState.COMPLETE]
    assert attempt.state == TrialState.FAIL and attempt.user_attrs.get("interrupted")

    # The same command again, from a fork of this process (its imports are done: seconds less;
    # its worker is a fresh process as ever).
    argv = ["sweep", str(tmp_path / "tiny.yaml"), "--runs", str(tmp_path / "runs"), "--workers", "1"]
    resumed = run_forked([*argv, "--heartbeat", "1", "--grace", "3"], tmp_path, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    trials = trials_by_cell(run_dir)
    complete = {c: [t for t in ts if t.state == TrialState.COMPLETE] for c, ts in trials.items()}
    assert all(len(ts) == 1 for ts in complete.values()) and len(complete) == 2
    study_ids = {ts[0].user_attrs["wandb_id"] for ts in complete.values()}

    runs = offline_runs(run_dir / "wandb")
    cell_runs = [r for r in runs if r["job_type"] == "tiny"]
    counted = [r for r in cell_runs if r["summary"].get(wandb_glue.CELL_STATE_KEY) == wandb_glue.COMPLETE]
    # One counted run per complete cell, the one its trial names; each ended with exit code 0.
    names = collections.Counter(r["display_name"] for r in counted)
    assert names == collections.Counter(c.replace("/", "-") for c in complete)
    assert {r["run_id"] for r in counted} == study_ids
    assert all(r["exit_code"] == 0 and "test/acc" in r["summary"] for r in counted)
    # The interrupted attempt is there, with the cell's name, but ended interrupted, not finished.
    [other] = [r for r in cell_runs if r not in counted]
    assert other["display_name"] == cut.replace("/", "-")
    assert (other["summary"].get(wandb_glue.CELL_STATE_KEY), other["exit_code"]) == ("interrupted", 130)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cells"]["complete"] == len(counted) == 2

    # The report and the workspace keep exactly the counted runs: by the ids of results.csv ...
    assert wandb_report(str(run_dir)) == 0
    want = {r["run_id"] for r in counted}

    def kept(runset: dict) -> set[str]:
        return {r["run_id"] for r in cell_runs if matches(runset, r)}

    report = json.loads((run_dir / "wandb-report.json").read_text())
    grouped = panels(report, "Bar Chart") + panels(report, "Run History Line Plot")
    heatmaps = [
        rs for p, rs in panels(report, "Media Browser") if p["config"]["mediaKeys"] != ["metric_plot"]
    ]
    assert grouped and heatmaps
    for _, runset in grouped:
        assert kept(runset) == want
    for runset in heatmaps:  # the heatmap seed's counted runs
        assert kept(runset) == {r["run_id"] for r in counted if r["config"]["seed"] == 0}
    assert kept(workspace_runset(json.loads((run_dir / "wandb-workspace.json").read_text()))) == want
    # ... and by the state key, the rule before the sweep has reported.
    spec = read_run_spec(run_dir)
    by_state = wrep.report_spec(wrep.build_report(spec, None, entity="", project="ablate"))
    for _, runset in panels(by_state, "Bar Chart"):
        assert kept(runset) == want
    workspace = wws.workspace_spec(wws.build_workspace(spec, entity="", project="ablate"))
    assert kept(workspace_runset(workspace)) == want
