"""``ablate sweep``: run every (variant, seed) cell of an experiment, then report.

The driver process creates the study and its cells, starts ``--workers``
worker processes (``python -m ablate.sweeps.run.worker``), shows one progress bar for
the whole grid (sweeps/run/loop.py) and writes the report when the workers are done. Running the
same command again resumes: finished cells are kept, dead workers' cells are
rerun.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ablate.experiments.io import new_output_folder, write_json, write_yaml
from ablate.experiments.spec import ExperimentSpec
from ablate.sweeps.ledger.cells import CellStore, collect_rows, open_store
from ablate.sweeps.ledger.run_folder import check_run_folder, mark_run_folder
from ablate.sweeps.ledger.study_file import file_identity, file_lost
from ablate.sweeps.ledger.study_views import PLOT_FILE
from ablate.sweeps.report.build import report
from ablate.sweeps.run.launcher import Launcher
from ablate.sweeps.run.loop import console, prepare_run, run_workers
from ablate.sweeps.run.outcome import Outcome, grid_outcome


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

    args = ["--run-dir", str(run_dir), "--heartbeat", str(heartbeat_s)]  # the storage: STORAGE_ENV
    args += ["--grace", str(grace_s)] + (["--no-wandb"] if not use_wandb else [])
    run_workers(
        "ablate.sweeps.run.worker",
        args,
        run_dir,
        # No more workers than cells left to run: the rest would only wait for them.
        workers=max(1, min(workers, sum(c.state != "complete" for c in store.states().values()))),
        title=spec.name,
        total=len(spec.cells()),
        poll=poll,
        url=url,
        launcher=launcher,
    )


def _next_round(spec: ExperimentSpec, store: CellStore) -> ExperimentSpec | None:
    """Adaptive seeds: record this round's verdicts on the study; the grown spec, or None to stop."""
    from ablate.sweeps.run.adaptive import decide, grow

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
    retry_failed: bool = False,
) -> tuple[dict[str, Any], Outcome]:
    """Run (or resume) every cell, then report; the summary and the cell counts (complete, failed
    for good, missing). With adaptive seeds, in rounds (sweeps/run/adaptive.py). ``launcher``: where
    the workers run (sweeps/run/launcher.py; default ``--workers`` processes here). ``retry_failed``:
    run again the cells that failed for good (their cause fixed)."""
    url = prepare_run(run_dir, storage, workers)
    hb = {"heartbeat_interval": heartbeat_s, "grace_period": grace_s}
    with new_output_folder(run_dir):
        check_run_folder(run_dir, "sweep", spec.name)
        store = open_store(spec, url, create=True, **hb)
        mark_run_folder(run_dir, "sweep", spec.name)
    opened = file_identity(url)
    if retry_failed and (retried := store.retry_failed()):
        console.print(
            f"retrying {len(retried)} cell(s) that had failed for good: {', '.join(retried)}", markup=False
        )
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
            summary = report(spec, store, run_dir)
            if use_wandb and summary["cells"]["complete"]:  # the study's summary run beside its cells
                from ablate.sweeps.integrations import wandb_glue

                wandb_glue.log_summary(spec, summary, run_dir / PLOT_FILE, run_dir)
            outcome = grid_outcome(collect_rows(store))
            return summary, dataclasses.replace(outcome, lost=file_lost(url, opened))
        spec = grown
        store = open_store(spec, url, **hb)
