"""Seed-parallel training: member k of the stack is the same run as seed k alone (dropout
included); clipping, dropout and divergence are per member; a sweep stores each member as its
own cell. Group independence and the divergence rule across paths: tests/unit/experiments/runner/test_one_number.py.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/lit_modules/systems/test_seed_parallel.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from ablate.experiments.runner.cells import run_trial
from ablate.experiments.schema.config import TrainConfig
from tests.helpers.configs import TINY_BASE
from tests.helpers.paths import ablate_cmd


@pytest.mark.multiprocess
def test_train_cli_writes_one_folder_per_member(tmp_path: Path, tiny_config: Path) -> None:
    proc = subprocess.run(
        ablate_cmd(
            "train", str(tiny_config), "trainer.seed_parallel=2", "seed=5", "--out", "out", "--no-progress"
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for seed in (5, 6):
        folder = tmp_path / "out" / f"seed{seed}"
        assert yaml.safe_load((folder / "config.yaml").read_text())["seed"] == seed
        assert json.loads((folder / "metrics.json").read_text())["steps"] == 4
        assert f"seed{seed}" in proc.stdout


@pytest.mark.multiprocess
def test_sweep_stores_each_member_as_its_own_cell(tmp_path: Path) -> None:
    spec = {
        "name": "tiny",
        "base": {**TINY_BASE, "trainer": {**TINY_BASE["trainer"], "seed_parallel": 3}},
        "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
        "seeds": 3,
        "heatmap_seeds": [1],
    }
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(spec))
    proc = subprocess.run(
        ablate_cmd("sweep", "tiny.yaml", "--runs", "runs", "--no-wandb"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "runs" / "tiny"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cells"]["complete"] == 6
    log = (run / "logs" / "worker-0.log").read_text()
    # Two groups of three seeds, one per variant.
    assert "cells baseline/s0, baseline/s1, baseline/s2: done" in log
    assert "cells no_pe/s0, no_pe/s1, no_pe/s2: done" in log
    assert (run / "heatmaps" / "no_pe" / "seed1" / "heads.json").is_file()
    # A cell of the group has exactly the metrics of that seed in a stack of one (the W&B agent's
    # and a search trial's group), and of that seed on the single path to float tolerance.
    base = TrainConfig.from_dict({**TINY_BASE, "seed": 2}).override({"model.pe": "none"})
    cell = json.loads((run / "cells" / "no_pe-s2" / "metrics.json").read_text())
    one = run_trial(base.override({"trainer.seed_parallel": 3}))
    assert {k: cell[k] for k in one.metrics} == one.metrics
    alone = run_trial(base)
    assert cell["test/loss"] == pytest.approx(alone.metrics["test/loss"], abs=1e-5)
