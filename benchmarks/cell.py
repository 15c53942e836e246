"""``cell_overhead``: the fixed cost of one cell (process start, imports, data load from cache,
Trainer setup, final evaluation, writing outputs) as a share of a small cell's wall time.

The parent times a real ``python -m benchmarks.cell train CONFIG ... --no-progress --out DIR``
subprocess end to end. That child *is* ``experiments.cli.main``, with only a ``FitTimer``
callback attached to ``run_trial``, so it reports the fit-loop time (and its own peak RSS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPORT_ENV = "ABLATE_BENCH_CELL_REPORT"


def cell_overhead(config: str, overrides: list[str], *, threads: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ablate-bench-cell-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.cell",
            "train",
            config,
            *overrides,
            "--no-progress",
            "--out",
            str(Path(tmp) / "run"),
        ]
        env = {**os.environ, REPORT_ENV: str(report), "OMP_NUM_THREADS": str(threads)}
        t0 = time.time()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        total = time.time() - t0
        child = json.loads(report.read_text())
    fit = child["fit_s"]
    return {
        "ratio": (total - fit) / total,
        "total_s": total,
        "fit_s": fit,
        "fit_val_s": child["val_s"],
        "overhead_s": total - fit,
        "before_fit_s": child["fit_start"] - t0,  # process + imports + data load + model/Trainer setup
        "after_fit_s": total - (child["fit_start"] - t0) - fit,  # evaluation, outputs, interpreter exit
        "steps": child["steps"],
        "peak_rss_mb": child["peak_rss_mb"],
        "command": " ".join(["python -m experiments.cli", *cmd[3:]]),
    }


def _child(argv: list[str]) -> int:
    """``experiments.cli.main(argv)`` with a FitTimer on ``run_trial``; writes the report file."""
    import resource

    import experiments.run
    from benchmarks.loop import FitTimer
    from experiments.cli import main

    timer = FitTimer()
    run_trial = experiments.run.run_trial
    state: dict = {}

    def timed_run_trial(*args, callbacks=(), **kw):  # the CLI imports run_trial at call time
        result = run_trial(*args, callbacks=[*callbacks, timer], **kw)
        state["steps"] = result.steps
        return result

    experiments.run.run_trial = timed_run_trial
    code = main(argv)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    report = {
        "fit_s": timer.fit_s,
        "val_s": timer.val_s,
        "fit_start": timer.fit_start_wall,
        "steps": state.get("steps", 0),
        "peak_rss_mb": peak_kb / 1024,
    }
    Path(os.environ[REPORT_ENV]).write_text(json.dumps(report))
    return code


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
