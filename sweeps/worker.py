"""A sweep worker: claim cells from the study and run them until none is left.

Run by ``ablate sweep`` (one process per ``--workers``), or by hand on other
machines against the same ``--storage``. Each cell calls ``run_trial``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import sys
import time
import traceback
from pathlib import Path

import optuna
from optuna.artifacts import FileSystemArtifactStore, upload_artifact
from optuna.trial import TrialState

from experiments.io import atomic_dir
from experiments.run import run_trial
from experiments.spec import ExperimentSpec, spec_from_resolved
from sweeps import wandb_glue
from sweeps.store import CellStore, heartbeat, open_store, retry_db

log = logging.getLogger("ablate.worker")
PROBE_SIZE = 4


def archive(trial: optuna.Trial, result, heat_dir: Path, artifacts: FileSystemArtifactStore) -> dict:
    """Attention heatmaps of the fixed probe batch, head entropy and importance; also Optuna artifacts."""
    from lit_modules.callbacks import archive_attention

    dm = result.extras["datamodule"]
    if heat_dir.exists():
        shutil.rmtree(heat_dir)  # left by a worker killed after writing it
    with atomic_dir(heat_dir) as tmp:
        heads = archive_attention(
            result.extras["lit"].model, dm.probe_batch(PROBE_SIZE), tmp, eval_batches=dm.test_dataloader()
        )
    for path in sorted(heat_dir.iterdir()):
        upload_artifact(artifact_store=artifacts, file_path=str(path), study_or_trial=trial)
    heads["pngs"] = [heat_dir / Path(p).name for p in heads["pngs"]]
    return heads


def run_cell(store: CellStore, trial: optuna.Trial, run_dir: Path, *, use_wandb: bool) -> None:
    spec = store.spec
    variant, seed = trial.params["variant"], trial.params["seed"]
    cfg = spec.cell_config(variant, seed)
    cell_dir = run_dir / "cells" / f"{variant}-s{seed}"
    for stale in cell_dir.parent.glob(f".{cell_dir.name}.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)  # a worker killed mid-cell left it
    if cell_dir.exists():
        shutil.rmtree(cell_dir)
    logger = wandb_glue.cell_logger(spec, variant, seed, cfg, run_dir) if use_wandb else False
    try:
        with atomic_dir(cell_dir) as tmp:
            result = run_trial(cfg, tmp, logger=logger)
        heads = None
        if seed in spec.heatmap_seeds:
            (run_dir / "artifacts").mkdir(exist_ok=True)
            artifacts = FileSystemArtifactStore(str(run_dir / "artifacts"))
            heads = archive(trial, result, run_dir / "heatmaps" / variant / f"seed{seed}", artifacts)
        wandb_id = wandb_glue.finish_cell(logger, result.to_dict(), heads) if logger else None
    except BaseException:
        if logger:  # else the next cell's logger would attach to this unfinished run
            logger.experiment.finish(exit_code=1)
        raise
    trial.set_user_attr("metrics", result.metrics)
    trial.set_user_attr("diverged", result.diverged)
    trial.set_user_attr("steps", result.steps)
    trial.set_user_attr("wall_s", round(result.wall_s, 3))
    trial.set_user_attr("config", cfg.flat())
    trial.set_user_attr("wandb_id", wandb_id)
    if heads is not None:
        trial.set_user_attr("heads", {k: heads.get(k) for k in ("entropy", "entropy_norm", "importance")})
    value = result.metrics.get(spec.metric, math.nan)
    if not math.isfinite(value):
        # Optuna fails NaN values; a diverged run is a result, so store the worst value.
        value = -math.inf if spec.direction == "maximize" else math.inf
    store.study.tell(trial, value)


def claim(store: CellStore) -> optuna.Trial | None:
    """Enqueue cells that need a (new) trial, then claim one."""
    store.ensure_cells()
    return store.pop()


def work(
    spec: ExperimentSpec,
    run_dir: Path,
    storage_url: str,
    *,
    use_wandb: bool,
    heartbeat_s: int,
    grace_s: int,
    poll_s: float = 2.0,
) -> int:
    """Run cells until every cell is complete (or failed for good); return how many ran here."""
    store = open_store(spec, storage_url, heartbeat_interval=heartbeat_s, grace_period=grace_s)
    storage = store.storage
    done = 0
    while True:
        trial = retry_db("cannot claim a cell", lambda: claim(store))
        if trial is None:
            if any(
                c.state in ("running", "waiting")
                for c in retry_db("cannot read cells", store.states).values()
            ):
                time.sleep(poll_s)  # others are running cells; take over if one of them dies
                continue
            return done
        cell = trial.user_attrs["cell"]
        log.info("cell %s: start (trial %d)", cell, trial.number)
        try:
            with heartbeat(storage, trial._trial_id):
                run_cell(store, trial, run_dir, use_wandb=use_wandb)
            done += 1
            log.info("cell %s: done", cell)
        except BaseException as err:  # Ctrl-C, SystemExit from Lightning, or a bug
            interrupted = isinstance(err, (KeyboardInterrupt, SystemExit))
            key = "interrupted" if interrupted else "error"
            try:
                trial.set_user_attr(key, "interrupted" if interrupted else f"{type(err).__name__}: {err}")
                store.study.tell(trial, state=TrialState.FAIL)
            except Exception:  # the storage may be gone too; heartbeats will expire the trial
                log.exception("could not mark trial %d failed", trial.number)
            if interrupted:
                raise KeyboardInterrupt from None
            log.error("cell %s failed:\n%s", cell, traceback.format_exc())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweeps.worker")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--no-wandb", action="store_true")
    parser.add_argument("--heartbeat", type=int, default=10)
    parser.add_argument("--grace", type=int, default=30)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d] %(message)s")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    run_dir = Path(args.run_dir)
    spec = spec_from_resolved(json.loads((run_dir / "spec.json").read_text()))
    try:
        work(
            spec,
            run_dir,
            args.storage,
            use_wandb=not args.no_wandb,
            heartbeat_s=args.heartbeat,
            grace_s=args.grace,
        )
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
