"""Data that cannot be read stops a sweep at once: the shipped SST-2 spec with the hub
unreachable exits 2 in seconds with one message and nothing written (sweeps/drivers/grid.py
``prepare_data``), where it used to fail and retry every cell for 13 minutes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.paths import REPO, ablate_cmd


@pytest.mark.multiprocess
def test_an_unreachable_hub_is_one_error_in_seconds(tmp_path: Path) -> None:
    spec = REPO / "experiments" / "configs" / "ablations" / "remove-pe-single-head-sst2.yaml"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    start = time.monotonic()
    proc = subprocess.run(
        ablate_cmd("sweep", str(spec), "--profile", "cpu", "--no-wandb", "data.source=glue/sst2"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    assert took < 60
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "glue/sst2" in errors[0] and "Hugging Face hub" in errors[0]
    assert {p.name for p in tmp_path.iterdir()} <= {"hf", "xdg"}  # no run folder, no study, no cache
