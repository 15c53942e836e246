"""Shared test settings and helpers: offline W&B, a per-session data cache, one thread per
process, the tiny configs, and the sweep helpers several test files use.

Tiny test models are faster on one thread, and the CLI tests start
subprocesses that would otherwise fight over the two cores.

Tests by tier and room: ``tests/unit/`` mirrors the package (fast, in-process), ``tests/property/``
holds the Hypothesis tests (fast), ``tests/e2e/`` the tests that train for real, start processes
or servers. Markers (registered in pyproject.toml; ``./run-tests --fast`` deselects all three):
``slow``, given here to every test under ``tests/e2e/``; ``multiprocess`` (starts the ``ablate``
CLI, sweep or search workers) and ``server`` (PostgreSQL, the dashboard), given by the tests. A
test outside ``tests/e2e/`` that carries one of them is a collection error: it belongs in e2e.
"""

from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

    from ablate.sweeps.stats.rows import CellRow

REPO = Path(__file__).resolve().parents[1]
SST2 = (REPO.parent / "shared" / "data" / "sst2").resolve()

os.environ.setdefault("ABLATE_CACHE", tempfile.mkdtemp(prefix="ablate-test-cache-"))
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)


E2E = Path(__file__).resolve().parent / "e2e"
NOT_FAST = ("slow", "multiprocess", "server")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/e2e/ is slow; a not-fast marker elsewhere is an error."""
    misplaced = []
    for item in items:
        if E2E in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.slow)
        elif any(item.get_closest_marker(m) for m in NOT_FAST):
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError(f"tests marked {'/'.join(NOT_FAST)} outside tests/e2e/: {misplaced}")


def ablate_cmd(*args: str) -> list[str]:
    """The installed console script, run with this interpreter (no PATH assumptions)."""
    return [sys.executable, "-m", "ablate", *args]


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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The base config of the tiny sweep specs: 2 layers (two heatmap PNGs per cell), 3 steps.
TINY_BASE = {
    "model": {"d_model": 16, "n_layers": 2, "n_heads": 2, "d_ff": 32, "dropout": 0.0},
    "data": {
        "task": "order",
        "min_len": 7,
        "max_len": 7,
        "n_symbols": 5,
        "n_train": 96,
        "n_val": 32,
        "n_test": 32,
        "batch_size": 16,
    },
    "trainer": {"max_steps": 3, "log_every": 1},
}


# Everything that could couple the members of a stack, or the stacked and the single path:
# dropout at every site (attention included), variable lengths (stacked batches get padded),
# [CLS] and a learned table, and a clip norm small enough that every step is clipped.
COUPLING_BASE = {
    "model": {
        "d_model": 16,
        "n_layers": 2,
        "n_heads": 2,
        "d_ff": 32,
        "dropout": 0.1,
        "attn_dropout": 0.1,
        "pool": "cls",
        "pe": "learned",
        "max_len": 16,
    },
    "data": {
        "task": "order",
        "min_len": 4,
        "max_len": 9,
        "n_symbols": 5,
        "n_train": 96,
        "n_val": 32,
        "n_test": 32,
        "batch_size": 16,
    },
    "optim": {"lr": 0.01, "grad_clip": 0.05},
    "trainer": {"max_steps": 8, "val_every": 4, "log_every": 1},
}


def write_spec(tmp_path: Path, **extra: object) -> Path:
    """``tmp_path/tiny.yaml``: experiment "tiny", baseline vs no_pe, 3 seeds, heatmaps for seed 1;
    ``extra`` replaces or adds top-level spec keys."""
    spec = {
        "name": "tiny",
        "base": TINY_BASE,
        "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
        "seeds": 3,
        "heatmap_seeds": [1],
        **extra,
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def run_sweep(tmp_path: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``ablate sweep tmp_path/tiny.yaml`` as a process (output under ``tmp_path/runs`` unless
    ``--runs`` is in ``args``), with a short heartbeat and grace period."""
    out = [] if "--runs" in args else ["--runs", str(tmp_path / "runs")]
    return subprocess.run(
        ablate_cmd("sweep", str(tmp_path / "tiny.yaml"), *out, "--heartbeat", "1", "--grace", "3", *args),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def trials_by_cell(run_dir: Path) -> dict[str, list[FrozenTrial]]:
    """The trials of study "tiny" in ``run_dir/study.db``, grouped by their ``cell`` user attribute."""
    import optuna  # here, not at the top: every test session imports this file

    from ablate.sweeps.ledger.storage import open_storage, sqlite_url

    # The suite's own storage settings: long lock timeout, serialized transactions.
    study = optuna.load_study(study_name="tiny", storage=open_storage(sqlite_url(run_dir / "study.db")))
    out: dict[str, list[FrozenTrial]] = collections.defaultdict(list)
    for t in study.get_trials():
        out[t.user_attrs.get("cell", "?")].append(t)
    return out


# ---- rows, as the ledger reads them (sweeps/stats/rows.py) ---------------------------------------


def cell_row(
    variant: str,
    seed: int,
    value: float | None = None,
    *,
    metric: str = "test/acc",
    metrics: dict[str, float | None] | None = None,
    **fields: object,
) -> CellRow:
    """One cell's row: ``value`` of ``metric`` (None: NaN, no usable value) plus ``metrics``;
    ``fields`` sets the other columns (state defaults to complete, diverged to False)."""
    from ablate.sweeps.stats.rows import CellRow

    values = {metric: value, **(metrics or {})}
    fields = {"state": "complete", "diverged": False, **fields}
    return CellRow(
        variant=variant,
        seed=seed,
        metrics={k: float("nan") if v is None else v for k, v in values.items()},
        **fields,  # type: ignore[arg-type]
    )


def cell_rows(
    values: dict[str, list[float | None]], metric: str = "test/acc", **fields: object
) -> list[CellRow]:
    """Complete cells: variant -> its value per seed 0, 1, ... (``cell_row`` for each)."""
    return [
        cell_row(v, seed, x, metric=metric, **fields) for v, xs in values.items() for seed, x in enumerate(xs)
    ]
