"""``ablate sweep``: run every (variant, seed) cell of an experiment, then report.

The driver process creates the study and its cells, starts ``--workers``
worker processes (``python -m ablate.sweeps.worker``), shows one progress bar for
the whole grid (sweeps/loop.py) and writes the report when the workers are done. Running the
same command again resumes: finished cells are kept, dead workers' cells are
rerun.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.io import write_json, write_yaml
from ablate.experiments.spec import ExperimentSpec, spec_from_resolved
from ablate.sweeps.loop import default_storage, prepare_run, run_workers
from ablate.sweeps.store import CellStore, open_store


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
    from ablate.sweeps.provenance import provenance
    from ablate.sweeps.report import plot_metric, write_report
    from ablate.sweeps.stats import summarize

    rows = collect_rows(store)

    def stats(metric: str) -> dict[str, Any]:
        return summarize(
            rows,
            experiment=spec.name,
            metric=metric,
            direction=spec.direction,
            baseline=spec.baseline,
            variants=list(spec.variants),
            seeds=list(spec.seeds),
            overrides=spec.variants,  # pairing: a variant that changes the data is compared unpaired
        )

    summary = stats(spec.metric)
    if spec.extra_metrics:
        summary["extra_metrics"] = {m: stats(m)["variants"] for m in spec.extra_metrics}
    if spec.tuned:
        summary["tuned"] = spec.tuned  # each variant's parameters from `ablate search`
    summary["provenance"] = provenance()  # the code's git commit and the package versions
    write_report(run_dir, summary, rows, tuned=spec.tuned)
    if use_wandb and summary["cells"]["complete"]:
        from ablate.experiments.io import atomic_write_bytes
        from ablate.sweeps import wandb_glue

        plot = run_dir / "metric.png"
        atomic_write_bytes(plot, plot_metric(summary, rows))
        wandb_glue.log_summary(spec, summary, plot, run_dir)
    return summary


def open_run(run_dir: Path, storage: str | None = None) -> tuple[ExperimentSpec, CellStore]:
    """Reopen a sweep's run folder (for ``ablate report`` and ``ablate power``)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "Using an existing study" line
    spec_file = run_dir / "spec.json"
    if not spec_file.is_file():
        raise ConfigError(f"{run_dir} is not a sweep run folder: no spec.json (run `ablate sweep` first)")
    spec = spec_from_resolved(json.loads(spec_file.read_text()))
    url = storage or default_storage(run_dir)
    if url == default_storage(run_dir) and not (run_dir / "study.db").is_file():
        raise ConfigError(f"no study.db in {run_dir}; pass --storage URL if the study lives elsewhere")
    return spec, open_store(spec, url)


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
    url = prepare_run(run_dir, storage, workers)
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
        "ablate.sweeps.worker",
        args,
        run_dir,
        workers=workers,
        title=spec.name,
        total=len(spec.cells()),
        poll=poll,
        url=url,
    )
    return report(spec, store, run_dir, use_wandb=use_wandb)
