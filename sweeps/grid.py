"""``ablate sweep``: run every (variant, seed) cell of an experiment, then report.

The driver process creates the study and its cells, starts ``--workers``
worker processes (``python -m sweeps.worker``), shows one progress bar for
the whole grid and writes the report when the workers are done. Running the
same command again resumes: finished cells are kept, dead workers' cells are
rerun.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from experiments.io import write_json, write_yaml
from experiments.spec import ExperimentSpec, spec_from_resolved
from lit_modules.config import ConfigError
from sweeps.store import CellStore, open_store, sqlite_url

console = Console(stderr=True)


def default_storage(run_dir: Path) -> str:
    return sqlite_url(run_dir / "study.db")


def collect_rows(store: CellStore) -> list[dict[str, Any]]:
    """One row per cell, in spec order: state, metrics and provenance of its canonical trial."""
    rows = []
    for cell in store.states().values():
        t = cell.trial
        attrs = t.user_attrs if t is not None and cell.state == "complete" else {}
        rows.append(
            {
                "variant": cell.variant,
                "seed": cell.seed,
                "state": cell.state,
                "diverged": attrs.get("diverged"),
                "wall_s": attrs.get("wall_s"),
                "trial": t.number if t is not None else None,
                "wandb_id": attrs.get("wandb_id"),
                "error": cell.errors[-1] if cell.errors and cell.state != "complete" else None,
                **attrs.get("metrics", {}),
            }
        )
    return rows


def report(
    spec: ExperimentSpec, store: CellStore, run_dir: Path, *, use_wandb: bool = False
) -> dict[str, Any]:
    """Write summary.json, results.csv, report.md and report.html (and the W&B summary run)."""
    from sweeps.report import plot_metric, write_report
    from sweeps.stats import summarize

    rows = collect_rows(store)

    def stats(metric: str) -> dict[str, Any]:
        return summarize(
            rows,
            experiment=spec.name,
            metric=metric,
            direction=spec.direction,
            baseline=spec.baseline,
            variants=list(spec.variants),
        )

    summary = stats(spec.metric)
    if spec.extra_metrics:
        summary["extra_metrics"] = {m: stats(m)["variants"] for m in spec.extra_metrics}
    if spec.tuned:
        summary["tuned"] = spec.tuned  # each variant's parameters from `ablate search`
    write_report(run_dir, summary, rows, tuned=spec.tuned)
    if use_wandb and summary["cells"]["complete"]:
        from experiments.io import atomic_write_bytes
        from sweeps import wandb_glue

        plot = run_dir / "metric.png"
        atomic_write_bytes(plot, plot_metric(summary, rows))
        wandb_glue.log_summary(spec, summary, plot, run_dir)
    return summary


def open_run(run_dir: Path, storage: str | None = None) -> tuple[ExperimentSpec, CellStore]:
    """Reopen a sweep's run folder (for ``ablate report``)."""
    spec_file = run_dir / "spec.json"
    if not spec_file.is_file():
        raise ConfigError(f"{run_dir} is not a sweep run folder: no spec.json (run `ablate sweep` first)")
    spec = spec_from_resolved(json.loads(spec_file.read_text()))
    url = storage or default_storage(run_dir)
    if url == default_storage(run_dir) and not (run_dir / "study.db").is_file():
        raise ConfigError(f"no study.db in {run_dir}; pass --storage URL if the study lives elsewhere")
    return spec, open_store(spec, url)


def _worker_env(index: int, n_workers: int) -> dict[str, str]:
    env = dict(os.environ)
    import torch

    gpus = torch.cuda.device_count()
    if gpus > 1 and "CUDA_VISIBLE_DEVICES" not in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = str(index % gpus)  # one worker per GPU
    if not gpus:
        # Share the CPU cores instead of oversubscribing them.
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // n_workers))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_workers(
    module: str,
    worker_args: list[str],
    run_dir: Path,
    *,
    workers: int,
    title: str,
    total: int,
    poll: Callable[[], tuple[int, str]],
    url: str,
) -> None:
    """Start ``workers`` processes of ``python -m module`` and show one progress bar until they exit.

    ``poll()`` returns (units done, a status text). Ctrl-C is passed on to the workers, which mark
    their running trial failed so that the same command resumes it.
    """
    (run_dir / "logs").mkdir(exist_ok=True)
    procs = []
    stem = module.rsplit(".", 1)[-1]
    for i in range(workers):
        log = open(run_dir / "logs" / f"{stem}-{i}.log", "a")  # noqa: SIM115 (lives as long as the worker)
        cmd = [sys.executable, "-m", module, *worker_args]
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_worker_env(i, workers)))
    try:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[state]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as bar:
            done, state = poll()
            task = bar.add_task(title, total=total, completed=done, state=state)
            while any(p.poll() is None for p in procs):
                time.sleep(1.0)
                done, state = poll()
                bar.update(task, completed=done, state=state)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            p.wait()
        console.print(f"interrupted: finished work is stored in {url}; run the same command again to resume")
        raise
    bad = [p.returncode for p in procs if p.returncode not in (0,)]
    if bad:
        console.print(f"[yellow]{len(bad)} worker(s) exited with errors; see {run_dir / 'logs'}")


def sweep(
    spec: ExperimentSpec,
    run_dir: Path,
    *,
    storage: str | None = None,
    workers: int = 1,
    use_wandb: bool = True,
    heartbeat_s: int = 10,
    grace_s: int = 30,
) -> dict[str, Any]:
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    run_dir.mkdir(parents=True, exist_ok=True)
    url = storage or default_storage(run_dir)
    store = open_store(spec, url, heartbeat_interval=heartbeat_s, grace_period=grace_s)
    write_json(run_dir / "spec.json", spec.to_dict())
    write_yaml(run_dir / "spec.yaml", spec.to_dict())
    store.ensure_cells()

    def poll() -> tuple[int, str]:
        states = list(store.states().values())
        running = sum(c.state == "running" for c in states)
        failed = sum(c.state == "failed" for c in states)
        done = sum(c.state == "complete" for c in states)
        return done, f"{running} running" + (f", {failed} failed" if failed else "")

    args = ["--run-dir", str(run_dir), "--storage", url, "--heartbeat", str(heartbeat_s)]
    args += ["--grace", str(grace_s)] + (["--no-wandb"] if not use_wandb else [])
    run_workers(
        "sweeps.worker",
        args,
        run_dir,
        workers=workers,
        title=spec.name,
        total=len(spec.cells()),
        poll=poll,
        url=url,
    )
    return report(spec, store, run_dir, use_wandb=use_wandb)
