"""No traceback, no silent wrong run, no false success (issue 13), for the commands that run or read
sweeps: exit 1 with the counts when a cell failed or is missing, workers that run exactly the
driver's code, study files that are Optuna studies or refused, storage URLs and numeric options
checked before anything is made, wrong folders named, and output paths that are files.

The exit-2 catalog runs ``cli.main`` in a forked child (``tests/unit/cli/test_bad_inputs.py``'s harness)
and checks that the working folder is byte for byte what it was; the three "must fix first"
items run real ``ablate`` processes.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/cli/test_hardening.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.forked import run_forked
from tests.helpers.sweeps import run_sweep, trials_by_cell

BAD_CSV = "sentence,label\ngood,1\nbad,0\nfine,positive\n" + "".join(
    f"{w} film number {i},{i % 2}\n" for i, w in enumerate(["good", "bad"] * 20)
)


TEXT_BASE = {**TINY_BASE, "data": {"task": "text", "source": "data.csv", "batch_size": 16}}


FAILING_NORM = """
from torch import nn

from ablate import components


@components.register("norm", "fails")
class Fails(nn.Module):
    def __init__(self, cfg):
        super().__init__()

    def forward(self, x):
        raise RuntimeError("this norm always fails")
"""


@pytest.mark.multiprocess
def test_sweep_whose_cells_all_fail_stops_after_three_and_exits_1(tmp_path: Path) -> None:
    """Every cell fails inside training (a plugin norm that raises, met only in the workers'
    forward pass): the first 3 cells to finish fail alike, so the worker starts no more (the 4th
    cell is never tried, and no cell is retried), the sweep says so once, reports, and exits 1."""
    (tmp_path / "fails.py").write_text(FAILING_NORM)
    write_spec(
        tmp_path,
        base={**TINY_BASE, "model": {**TINY_BASE["model"], "norm_layer": "fails"}},
        plugins=["fails.py"],
        seeds=2,
        heatmap_seeds=[0],
    )
    out = tmp_path / "runs [bold]"  # a '[' in a path is printed as is, not read as rich markup
    proc = run_sweep(tmp_path, "--no-wandb", "--runs", str(out))
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1] == "0/4 cells complete; 3 failed, 1 missing: exit 1"
    message = " ".join(proc.stderr.split())
    assert message.count("this norm always fails") == 1 and message.count("stopped starting cells") == 1
    assert "the first 3 cells to finish" in message and "RuntimeError: this norm always fails" in message
    assert "--retry-failed" in message and "failed for good" not in message
    assert f"-> {out}/tiny" in message and f"{out}/tiny" in proc.stdout.splitlines()  # the folder, alone
    assert "[yellow]" not in proc.stderr and "Traceback" not in proc.stderr
    errors = [t for ts in trials_by_cell(out / "tiny").values() for t in ts if "error" in t.user_attrs]
    assert len(errors) == 3 and len({t.user_attrs["cell"] for t in errors}) == 3  # once each, 3 cells
    summary = json.loads((out / "tiny" / "summary.json").read_text())
    assert summary["cells"]["complete"] == 0 and summary["cells"]["total"] == 4


@pytest.mark.multiprocess
def test_data_that_fails_to_load_is_one_error_before_any_cell(tmp_path: Path) -> None:
    """A label that is not an integer: the driver loads the data once before anything exists
    (sweeps/drivers/grid.py prepare_data), so it is exit 2 naming the line, and no run folder."""
    (tmp_path / "data.csv").write_text(BAD_CSV)
    write_spec(
        tmp_path,
        base={**TEXT_BASE, "data": {**TEXT_BASE["data"], "source": str(tmp_path / "data.csv")}},
        seeds=1,
        heatmap_seeds=[0],
    )
    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "line 4: label 'positive' in column 'label' is not an integer" in errors[0]
    assert not (tmp_path / "runs").exists()


@pytest.mark.multiprocess
def test_search_whose_trials_all_fail_exits_1(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text(BAD_CSV)
    search = {
        "space": {"optim.lr": {"low": 1e-4, "high": 1e-2, "log": True}},
        "trials": 1,
        "metric": "val/loss",
        "pruner": "none",
    }
    write_spec(tmp_path, base=TEXT_BASE, seeds=1, heatmap_seeds=[0], search=search)
    ran = run_forked(
        ["search", "tiny.yaml", "--variants", "baseline", "--heartbeat", "1", "--grace", "3"],
        tmp_path,
        timeout=300,
    )
    assert ran.returncode == 1, ran.stderr[-3000:]
    assert [line for line in ran.stderr.splitlines() if line.strip()][
        -1
    ] == "0/1 trials finished; 1 failed, 0 missing: exit 1"


@pytest.mark.multiprocess
def test_workers_run_the_drivers_code_not_a_decoy_package(tmp_path: Path) -> None:
    """Run from a folder with its own ``ablate/`` package: the decoy is what ``python -c/-m`` would
    import there (checked first, so the test can fail), yet the workers run the driver's code."""
    decoy = tmp_path / "ablate"
    (decoy / "sweeps").mkdir(parents=True)
    (decoy / "__init__.py").write_text(
        "import pathlib\npathlib.Path('DECOY_IMPORTED').write_text('decoy')\nraise SystemExit(7)\n"
    )
    (decoy / "sweeps" / "__init__.py").write_text("")
    assert subprocess.run([sys.executable, "-c", "import ablate"], cwd=tmp_path).returncode == 7
    (tmp_path / "DECOY_IMPORTED").unlink()
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    script = Path(sys.executable).with_name("ablate")  # the console script: the driver itself is not fooled
    driver = [str(script)] if script.is_file() else [sys.executable, "-P", "-m", "ablate"]
    proc = subprocess.run(
        [*driver, "sweep", "tiny.yaml", "--runs", "runs", "--no-wandb", "--heartbeat", "1", "--grace", "3"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (tmp_path / "DECOY_IMPORTED").exists()
    assert json.loads((tmp_path / "runs/tiny/summary.json").read_text())["cells"]["complete"] == 2
    assert proc.stderr.splitlines()[-1] == "2/2 cells complete: exit 0"


@pytest.mark.multiprocess
def test_empty_study_file_is_refused(tmp_path: Path) -> None:
    """A 0-byte study.db is not a new study: exit 2 naming the file, and nothing rerun or written."""
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    run_dir = tmp_path / "runs" / "tiny"
    run_dir.mkdir(parents=True)
    (run_dir / "study.db").write_bytes(b"")
    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"the study file {run_dir / 'study.db'} is empty (0 bytes)" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert (
        sorted(p.name for p in run_dir.iterdir()) == ["study.db"]
        and (run_dir / "study.db").stat().st_size == 0
    )
