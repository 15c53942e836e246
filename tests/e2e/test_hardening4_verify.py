"""Hardening, fourth round, with real processes: ``ablate verify`` names an edited summary.json and
metrics.json (it said "all cells bit-identical", exit 0); SIGTERM to ``ablate train`` mid-fit is
"interrupted", exit 130, nothing kept (it was exit 0, silent); a quick grid of a million variants
is refused at once (it stayed silent, memory growing)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers.configs import TINY_BASE, TINY_YAML, write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.sweeps import run_sweep

ONE_LAYER = {**TINY_BASE, "model": {**TINY_BASE["model"], "n_layers": 1}}


def test_verify_names_an_edited_summary_and_metrics_json_and_exits_1(tmp_path: Path) -> None:
    write_spec(tmp_path, base=ONE_LAYER, seeds=2, heatmap_seeds=[0])
    swept = run_sweep(tmp_path, "--no-wandb")
    assert swept.returncode == 0, swept.stdout + swept.stderr
    run = tmp_path / "runs" / "tiny"
    summary = json.loads((run / "summary.json").read_text())
    median = summary["variants"]["baseline"]["median"]
    summary["variants"]["baseline"]["median"] = 0.99
    (run / "summary.json").write_text(json.dumps(summary, indent=2))
    metrics_path = run / "cells" / "baseline-s0" / "metrics.json"
    metrics = json.loads(metrics_path.read_text())
    acc = metrics["test/acc"]
    metrics["test/acc"] = 0.9
    metrics_path.write_text(json.dumps(metrics, indent=2))
    verify = subprocess.run(
        ablate_cmd("verify", str(run), "--cells", "1", "--no-progress"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verify.returncode == 1, verify.stdout + verify.stderr
    out = verify.stdout
    assert "all 1 cell(s) bit-identical" in out  # the rerun still agrees with results.csv
    assert f"summary.json: variants.baseline.median: recorded 0.99, recomputed {median}" in out
    assert f"cells/baseline-s0/metrics.json: test/acc: recorded 0.9, study {acc}" in out
    assert out.rstrip().splitlines()[-1].startswith("2 recorded value(s) in 2 file(s) differ from the study")


def test_sigterm_to_train_mid_fit_is_interrupted_exit_130_and_keeps_nothing(tmp_path: Path) -> None:
    (tmp_path / "long.yaml").write_text(TINY_YAML.replace("max_steps: 4", "max_steps: 100000"))
    out = tmp_path / "runs" / "long"
    proc = subprocess.Popen(
        ablate_cmd("train", str(tmp_path / "long.yaml"), "--out", str(out), "--no-progress"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        # Its partial folder exists once train() runs (its handlers in place); a few steps later
        # the fit is well under way.
        while not (out.parent.is_dir() and any(out.parent.glob(".long.partial-*"))):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.2)
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, text
    assert f"interrupted: nothing kept; {out} was not written" in " ".join(text.split())
    assert text.rstrip().endswith("interrupted")
    assert list(out.parent.iterdir()) == []  # no folder, no partial one, no claim


def test_a_million_variant_quick_grid_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(TINY_YAML)
    grid = [
        f"{k}={','.join(str(v + 1) for v in range(10))}" for k in ("data.batch_size", "trainer.max_steps")
    ]
    grid += [f"model.d_ff={','.join(str(8 + v) for v in range(10))}"]
    grid += [f"{k}={','.join(str(v + 1) for v in range(10))}" for k in ("trainer.log_every", "data.n_val")]
    grid += [f"model.dropout={','.join(f'0.{v}' for v in range(10))}"]
    for dry_run in (["--dry-run"], []):
        start = time.monotonic()
        refused = subprocess.run(
            ablate_cmd("sweep", "base.yaml", *grid, *dry_run, "--no-wandb"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert time.monotonic() - start < 30
        err = " ".join(refused.stderr.split())
        assert "this quick grid is 1,000,000 variants (10 x 10 x 10 x 10 x 10 x 10 values of 6 keys)" in err
        assert "add --yes to run it as it is" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.yaml"]
