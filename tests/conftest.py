"""Shared test settings and fixtures: offline W&B, a per-session data cache, one thread per
process, the tiers' markers. What tests share besides fixtures (paths, tiny configs, sweep and
row builders) is in tests/helpers/; no test imports this file.

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

import os
import tempfile
from pathlib import Path

import pytest

from tests.helpers.configs import TINY_YAML

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


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_YAML)
    return path
