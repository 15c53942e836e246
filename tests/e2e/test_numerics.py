"""The numerics record and the pinned CPU ISA, end to end: every cell of a sweep carries what its
floats were computed with (results.csv, summary.json, report.md), a pinned ISA reaches the
workers and ``ablate train`` before torch loads, and ``ablate verify`` reruns a cell bit for bit."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from ablate.experiments.schema.machine import available_isas, numerics_key, numerics_record
from tests.helpers.configs import write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.sweeps import run_sweep

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.mark.multiprocess
def test_a_sweep_records_each_cells_numerics_and_verify_reruns_one(tmp_path: Path) -> None:
    write_spec(tmp_path, seeds=2, heatmap_seeds=[0])
    proc = run_sweep(tmp_path, "--no-wandb")
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "tiny"
    with (run_dir / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    here = numerics_key(numerics_record() | {"threads": 1})  # a cell runs on trainer.cpu_threads = 1
    assert {r["numerics"] for r in rows} == {here}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["numerics"] == [{"setting": here, "cells": len(rows)}]
    assert f"Numerics: every cell ran with {here}." in (run_dir / "report.md").read_text()

    verify = subprocess.run(
        ablate_cmd("verify", str(run_dir), "--cells", "1", "--no-progress"),
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "bit-identical" in verify.stdout and f"numerics here:     {here}" in verify.stdout

    # A changed number is found: every test accuracy moved by 1e-9 in the recorded table.
    for row in rows:
        row["test/acc"] = repr(float(row["test/acc"]) + 1e-9)
    with (run_dir / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    differs = subprocess.run(
        ablate_cmd("verify", str(run_dir), "--cells", "1", "--no-progress"),
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert "DIFFERS" in differs.stdout and "in test/acc" in differs.stdout


@pytest.mark.multiprocess
@pytest.mark.skipif("avx2" not in available_isas(), reason="this CPU has no AVX2")
def test_train_with_a_pinned_isa_restarts_pinned_and_records_it(tmp_path: Path, tiny_config: Path) -> None:
    env = {k: v for k, v in ENV.items() if k not in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR")}
    proc = subprocess.run(
        ablate_cmd("train", str(tiny_config), "trainer.cpu_isa=avx2", "--out", "out", "--no-progress"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "restarting with ATEN_CPU_CAPABILITY=avx2" in proc.stderr
    record = json.loads((tmp_path / "out" / "metrics.json").read_text())["numerics"]
    assert record["cpu_capability"] == "AVX2"
    assert record["isa_env"]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert record["isa_env"]["ONEDNN_MAX_CPU_ISA"] == "AVX2"
