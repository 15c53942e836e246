"""``ablate train`` and ``run_trial``: outputs, determinism, divergence, schedule, every variant, text, learning.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/experiments/test_train.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from ablate.experiments.loading import load_config
from ablate.experiments.run import run_trial
from tests.conftest import REPO, SST2, ablate_cmd

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def ablate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ablate_cmd("train", *args, "--out", "out", "--no-progress"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert not list(tmp_path.glob(".out.partial-*"))
    return proc


@pytest.mark.multiprocess
def test_train_cli_writes_config_metrics_tokenizer(tmp_path: Path, tiny_config: Path) -> None:
    proc = ablate(tmp_path, str(tiny_config), "model.n_heads=1", "seed=3")
    out = tmp_path / "out"
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved == load_config(tiny_config, ["model.n_heads=1", "seed=3"]).to_dict()
    assert saved["model"]["n_heads"] == 1 and saved["seed"] == 3
    assert saved["model"]["d_model"] == 16 and saved["data"]["n_train"] == 96  # from the file
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"val/acc", "test/acc", "val/loss", "diverged", "steps", "wall_s"} <= set(metrics)
    assert metrics["steps"] == 4 and metrics["diverged"] is False and metrics["wall_s"] > 0
    assert 0.0 <= metrics["test/acc"] <= 1.0
    assert json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]["A"] >= 2
    for key in ("val/acc", "test/acc", "steps"):
        assert key in proc.stdout
    assert f"{metrics['test/acc']:.4f}" in proc.stdout


@pytest.mark.multiprocess
def test_train_cli_on_sst2(tmp_path: Path, tiny_config: Path) -> None:
    ablate(
        tmp_path,
        str(tiny_config),
        "data.task=text",
        f"data.source={SST2}",
        "data.max_len=32",
        "trainer.max_steps=5",
    )
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["steps"] == 5 and math.isfinite(metrics["test/loss"])
    vocab = json.loads((tmp_path / "out" / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) > 1000 and "film" in vocab


def test_order_task_is_learned_with_positions_only() -> None:
    """Measured on the 2-core CPU, one thread: test/acc 1.000, test/loss 0.0000 (800 steps, 33 s)."""
    result = run_trial(load_config(REPO / "experiments" / "order.yaml"))
    assert result.steps == 800 and not result.diverged
    assert result.metrics["test/acc"] >= 0.9, result.metrics


def test_order_task_without_positions_is_at_chance() -> None:
    """Measured on the 2-core CPU, one thread: test/acc 0.500, test/loss 0.6931 = ln 2 (800 steps, 32 s)."""
    result = run_trial(load_config(REPO / "experiments" / "order.yaml", ["model.pe=none"]))
    assert 0.4 <= result.metrics["test/acc"] <= 0.6, result.metrics


@pytest.mark.multiprocess
def test_train_piped_shows_no_progress_bars(tmp_path: Path, tiny_config: Path) -> None:
    """stderr to a file or a pipe: no redrawn progress bars in it (only with a terminal)."""
    proc = subprocess.run(
        ablate_cmd("train", str(tiny_config), "--out", "out"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "it/s" not in proc.stderr and "step" not in proc.stderr.lower()
