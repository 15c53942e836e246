"""``ablate sweep``: run every (variant, seed) cell of an experiment, then report.

The driver process creates the study and its cells, starts ``--workers``
worker processes (``python -m ablate.sweeps.worker``), shows one progress bar for
the whole grid (sweeps/loop.py) and writes the report when the workers are done. Running the
same command again resumes: finished cells are kept, dead workers' cells are
rerun.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.io import new_output_folder, write_json, write_yaml
from ablate.experiments.spec import ExperimentSpec
from ablate.sweeps.launcher import Launcher
from ablate.sweeps.loop import default_storage, prepare_run, run_workers
from ablate.sweeps.outcome import Outcome, grid_outcome
from ablate.sweeps.run_folder import read_run_spec, require_study
from ablate.sweeps.store import CellStore, open_storage, open_store, retry_db, storage_where
from ablate.sweeps.study_file import file_identity, file_lost


def collect_rows(store: CellStore) -> list[dict[str, Any]]:
    """One row per cell, in spec order: state, metrics and provenance of its canonical trial."""
    from ablate.sweeps.study_views import trial_metrics

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
                **trial_metrics(attrs),
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
    from ablate.sweeps.study_views import PLOT_FILE, name_objective, publish_report

    rows = collect_rows(store)

    def stats(metric: str) -> dict[str, Any]:
        return summarize(
            rows,
            experiment=spec.name,
            metric=metric,
            direction=spec.direction,
            baseline=spec.baseline,
            variants=list(spec.variants),
            seeds=spec.all_seeds(),
            overrides=spec.variants,  # pairing: a variant that changes the data is compared unpaired
        )

    summary = stats(spec.metric)
    if spec.extra_metrics:
        summary["extra_metrics"] = {m: stats(m)["variants"] for m in spec.extra_metrics}
    if spec.tuned:
        summary["tuned"] = spec.tuned  # each variant's parameters from `ablate search`
    if spec.seed_factors:
        from ablate.sweeps.stats import spec_cells, variance_components

        a, b = spec.seed_factors["init"], spec.seed_factors["data_order"]
        cells = spec_cells(spec, rows)
        summary["seed_factors"] = spec.seed_factors
        summary["variance"] = {v: variance_components(c, a, b) for v, c in cells.items()}
    if spec.adaptive is not None:
        summary["adaptive"] = {
            **spec.adaptive.to_dict(),
            "level": spec.adaptive.level,
            "looks": spec.adaptive.looks,
        }
        summary["rounds"] = store.study.user_attrs.get("rounds", [])
        summary["stop_reason"] = store.study.user_attrs.get("stop_reason")
    summary["provenance"] = provenance()  # the code's git commit and the package versions
    files = write_report(run_dir, summary, rows, tuned=spec.tuned)
    plot = plot_metric(summary, rows) if summary["cells"]["complete"] else None
    # optuna-dashboard: the objective's name, report.md as the study note, report.html and metric.png
    name_objective(store.study, spec.metric)
    publish_report(store.study, run_dir, files, plot)
    if use_wandb and plot is not None:
        from ablate.sweeps import wandb_glue

        wandb_glue.log_summary(spec, summary, run_dir / PLOT_FILE, run_dir)
    return summary


def open_run(run_dir: Path, storage: str | None = None) -> tuple[ExperimentSpec, CellStore]:
    """Reopen a sweep's run folder (``report``, ``power``, ``aggregate``); its study must exist."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "Using an existing study" line
    spec = read_run_spec(run_dir)
    url = storage or default_storage(run_dir)
    if url == default_storage(run_dir) and not (run_dir / "study.db").is_file():
        raise ConfigError(f"no study.db in {run_dir}; pass --storage URL if the study lives elsewhere")
    rdb = open_storage(url)
    require_study(rdb, spec.name, storage_where(rdb))
    return spec, retry_db(
        f"cannot open study {spec.name!r} in {storage_where(rdb)}", lambda: CellStore(spec, rdb)
    )


def _run_round(
    spec: ExperimentSpec,
    store: CellStore,
    run_dir: Path,
    url: str,
    *,
    workers: int,
    use_wandb: bool,
    heartbeat_s: int,
    grace_s: int,
    launcher: Launcher | None,
) -> None:
    """Write the spec the workers read, enqueue its cells, run workers until none is left."""
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
        launcher=launcher,
    )


def _next_round(spec: ExperimentSpec, store: CellStore) -> ExperimentSpec | None:
    """Adaptive seeds: record this round's verdicts on the study; the grown spec, or None to stop."""
    from ablate.sweeps.adaptive import decide, grow

    verdicts = decide(spec, collect_rows(store))
    undecided = [v for v, e in verdicts.items() if not e["decided"]]
    seeds = {v: sum(w == v for w, _ in spec.cells()) for v in spec.variants}
    entry = {"seeds": seeds, "undecided": undecided, "ci": {v: e["ci"] for v, e in verdicts.items()}}
    rounds = list(store.study.user_attrs.get("rounds", []))
    if rounds and rounds[-1]["seeds"] == seeds:
        rounds[-1] = entry  # a rerun of a round already judged: judge it again, do not repeat it
    else:
        rounds.append(entry)
    grown = grow(spec, undecided) if undecided else None
    store.study.set_user_attr("rounds", rounds)
    if grown is None:
        reason = "every comparison decided" if not undecided else f"max seeds ({spec.adaptive.max}) reached"
        store.study.set_user_attr("stop_reason", reason)
    else:
        store.study.set_user_attr("extra_seeds", {v: list(s) for v, s in grown.extra_seeds.items()})
    return grown


def sweep(
    spec: ExperimentSpec,
    run_dir: Path,
    *,
    storage: str | None = None,
    workers: int = 1,
    use_wandb: bool = True,
    heartbeat_s: int = 10,
    grace_s: int = 30,
    launcher: Launcher | None = None,
) -> tuple[dict[str, Any], Outcome]:
    """Run (or resume) every cell, then report; the summary and the cell counts (complete, failed
    for good, missing). With adaptive seeds, in rounds (sweeps/adaptive.py). ``launcher``: where
    the workers run (sweeps/launcher.py; default ``--workers`` processes here)."""
    url = prepare_run(run_dir, storage, workers)
    hb = {"heartbeat_interval": heartbeat_s, "grace_period": grace_s}
    with new_output_folder(run_dir):
        store = open_store(spec, url, create=True, **hb)
    opened = file_identity(url)
    if spec.adaptive is not None:  # resume: the seeds earlier rounds added
        added = store.study.user_attrs.get("extra_seeds", {})
        spec = dataclasses.replace(spec, extra_seeds={v: tuple(s) for v, s in added.items()})
        store = open_store(spec, url, **hb)
    opts = {"workers": workers, "use_wandb": use_wandb, "heartbeat_s": heartbeat_s, "grace_s": grace_s}
    opts["launcher"] = launcher
    while True:
        _run_round(spec, store, run_dir, url, **opts)
        grown = _next_round(spec, store) if spec.adaptive is not None else None
        if grown is None:
            summary = report(spec, store, run_dir, use_wandb=use_wandb)
            outcome = grid_outcome(collect_rows(store))
            return summary, dataclasses.replace(outcome, lost=file_lost(url, opened))
        spec = grown
        store = open_store(spec, url, **hb)
