"""seed_factors: init and data order as separate, crossed factors, and each variant's seed
variance split into init, data order and residual (two-way random effects).

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/stats/test_seed_factors.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import run_sweep
from tests.unit.sweeps.stats.test_seed_factors import VARIANTS


@pytest.mark.multiprocess
def test_a_sweep_reports_the_decomposition(tmp_path: Path) -> None:
    spec = {
        "name": "tiny",
        "base": TINY_BASE,
        "variants": VARIANTS,
        "seed_factors": {"init": 2, "data_order": 2},
    }
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(spec))
    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "tiny"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["seed_factors"] == {"init": 2, "data_order": 2} and summary["cells"]["complete"] == 8
    for name in ("baseline", "no_pe"):
        v = summary["variance"][name]
        assert v["complete"] and set(v["var"]) == {"init", "data_order", "residual"}
        shares = list(v["share"].values())
        if v["sd_total"] == 0:  # every run alike: nothing to split
            assert shares == [None, None, None]
        else:
            assert sum(shares) == pytest.approx(1)
    assert "Seed factors: 2 init seeds x 2 data orders" in (run_dir / "report.md").read_text()
    cfg = yaml.safe_load((run_dir / "cells" / "no_pe-s3" / "config.yaml").read_text())
    assert cfg["seed"] == 3 and cfg["trainer"]["order_seeds"] == 2
