"""Shared test settings: offline W&B, a per-session data cache, one thread per process.

Tiny test models are faster on one thread, and the CLI tests start
subprocesses that would otherwise fight over the two cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SST2 = (REPO.parent / "shared" / "data" / "sst2").resolve()

os.environ.setdefault("ABLATE_CACHE", tempfile.mkdtemp(prefix="ablate-test-cache-"))
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)


def ablate_cmd(*args: str) -> list[str]:
    """The installed console script, run with this interpreter (no PATH assumptions)."""
    return [sys.executable, "-m", "experiments.cli", *args]


# A train config small enough to run in a few seconds.
TINY_YAML = (
    "model: {d_model: 16, n_layers: 1, n_heads: 2, d_ff: 32, dropout: 0.0}\n"
    "data: {task: order, min_len: 7, max_len: 7, n_symbols: 5, n_train: 96, n_val: 32, n_test: 32,"
    " batch_size: 16}\n"
    "optim: {lr: 0.003}\n"
    "trainer: {max_steps: 4, log_every: 1}\n"
    "seed: 0\n"
)


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_YAML)
    return path
