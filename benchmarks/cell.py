"""``cell_overhead``: the fixed cost of cells (process start, imports, data load from cache,
Trainer setup, writing outputs) as a share of the wall time, once per cell and once per sweep worker.

The parent times a real ``python -m ablate.benchmarks.cell N train CONFIG ... --no-progress --out DIR``
subprocess end to end. That child runs ``ablate.cli.main`` N times in one process, as a
sweep worker runs its cells one after another, with only a ``FitTimer`` callback attached to
``run_trial``; it reports each cell's fit-loop and final-evaluation time (and its peak RSS).
Training and the final validation/test are the cell's work; everything else is overhead.

``python -m ablate.benchmarks.cell phases RUN_DIR... [--out FILE]`` reads the phases each cell of
finished sweeps recorded in its metrics.json (experiments/runner/phases.py) and prints, per run
folder (a task), the median seconds of each phase and the non-step share (everything but the
training steps, of the phases' sum), the first cell of each worker process apart (its imports and
study opening came before it, outside its phases; ``first_in_worker``).
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


def cell_overhead(config: str, overrides: list[str], *, threads: int, cells: int = 1) -> dict:
    with tempfile.TemporaryDirectory(prefix="ablate-bench-cell-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "ablate.benchmarks.cell", str(cells), "train", config, *overrides]
        cmd += ["--no-progress", "--out", str(Path(tmp) / "run")]
        env = {**os.environ, REPORT_ENV: str(report), "OMP_NUM_THREADS": str(threads)}
        t0 = time.time()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        total = time.time() - t0
        child = json.loads(report.read_text())
    work = sum(c["fit_s"] + c["eval_s"] for c in child["cells"])
    first = child["cells"][0]
    # The first cell alone, process start and imports included: what one `ablate train` pays.
    first_total = first["start"] + first["wall_s"] - t0
    return {
        "ratio": (total - work) / total,
        "cells": cells,
        "total_s": total,
        "fit_s": sum(c["fit_s"] for c in child["cells"]),
        "eval_s": sum(c["eval_s"] for c in child["cells"]),
        "overhead_s": total - work,
        "single_cell_ratio": (first_total - first["fit_s"] - first["eval_s"]) / first_total,
        "before_first_fit_s": first["fit_start"] - t0,  # process + imports + data load + setup
        "per_cell_overhead_s": [round(c["wall_s"] - c["fit_s"] - c["eval_s"], 3) for c in child["cells"]],
        "steps": first["steps"],
        "peak_rss_mb": child["peak_rss_mb"],
        "command": " ".join(["python -m ablate", *cmd[4:]]),
    }


def _child(argv: list[str]) -> int:
    """``ablate.cli.main(argv)`` ``argv[0]`` times with a FitTimer on ``run_cells``."""
    import resource

    import ablate.experiments.runner.cells as run_module
    from ablate.benchmarks.loop import FitTimer
    from ablate.cli.parser import main

    n, argv = int(argv[0]), argv[1:]
    run_cells = run_module.run_cells
    cells: list[dict] = []

    def timed_run_cells(*args, callbacks=(), **kw):  # the CLI imports run_cells at call time
        timer = FitTimer()  # `ablate train` without seed_parallel: one seed, one fit
        (result,) = run_cells(*args, callbacks=[*callbacks, timer], **kw)
        eval_s = time.time() - timer.fit_start_wall - timer.fit_s  # validate + test after fit
        cells.append({"fit_s": timer.fit_s, "fit_start": timer.fit_start_wall, "steps": result.steps})
        cells[-1]["eval_s"] = eval_s
        return [result]

    run_module.run_cells = timed_run_cells
    out = argv.index("--out") + 1
    code = 0
    for i in range(n):
        start = time.time()
        cell_argv = [*argv[:out], f"{argv[out]}-{i}", *argv[out + 1 :]]
        code = code or main(cell_argv)
        cells[-1].update(start=start, wall_s=time.time() - start)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    Path(os.environ[REPORT_ENV]).write_text(json.dumps({"cells": cells, "peak_rss_mb": peak_kb / 1024}))
    return code


def phase_table(run_dir: Path) -> dict:
    """Per phase, the median seconds over a run folder's cells (the first of each worker apart),
    and the median cell's non-step share."""
    import statistics

    from ablate.experiments.runner.phases import RUNNER_PHASES, WORKER_PHASES, non_step_share

    docs = [json.loads(p.read_text()) for p in sorted((run_dir / "cells").glob("*/metrics.json"))]
    docs = [d for d in docs if d.get("phases")]
    if not docs:
        raise SystemExit(
            f"error: {run_dir}: no cell with phases in its metrics.json (made before they were recorded?)"
        )
    out: dict = {
        "run": str(run_dir),
        "cells": len(docs),
        "steps": statistics.median(d["steps"] for d in docs),
    }
    for group, cells in (("later", [d for d in docs if not d.get("first_in_worker")]),
                         ("first", [d for d in docs if d.get("first_in_worker")])):  # fmt: skip
        if cells:
            names = [n for n in (*RUNNER_PHASES, *WORKER_PHASES) if any(n in d["phases"] for d in cells)]
            out[group] = {
                "cells": len(cells),
                "median_s": {
                    n: round(statistics.median(d["phases"].get(n, 0.0) for d in cells), 3) for n in names
                },
                "non_step_share": round(statistics.median(non_step_share(d["phases"]) for d in cells), 3),
            }
    return out


def _phases(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ablate.benchmarks.cell phases")
    parser.add_argument("run_dirs", nargs="+", type=Path, help="finished sweep run folders")
    parser.add_argument("--out", type=Path, help="write the tables as JSON")
    args = parser.parse_args(argv)
    tables = [phase_table(r) for r in args.run_dirs]
    for t in tables:
        for group in ("later", "first"):
            if g := t.get(group):
                phases = "  ".join(f"{n} {s:.2f}" for n, s in g["median_s"].items())
                print(f"{t['run']} ({group} cells: {g['cells']}, {t['steps']:g} steps): non-step share "
                      f"{g['non_step_share']:.0%}; median s: {phases}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(tables, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(_phases(argv[1:]) if argv[:1] == ["phases"] else _child(argv))
