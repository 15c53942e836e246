"""``ablate train``: one configuration trained into a run folder that appears complete or not at
all (``trainer.seed_parallel=K`` trains seeds seed..seed+K-1, one sub-folder each)."""

from __future__ import annotations

import time
from pathlib import Path

from ablate.experiments.runner.cells import TrialResult
from ablate.experiments.schema.config import TrainConfig
from ablate.files import atomic_dir


def default_out(cfg: TrainConfig) -> Path:
    return Path(f"runs/train/{cfg.data.task}-{time.strftime('%Y%m%d-%H%M%S')}")


def train(
    cfg: TrainConfig, out: Path, *, progress: bool = False, checkpoint: bool = True
) -> list[tuple[str, TrialResult]]:
    """Train and evaluate ``cfg`` into ``out`` (config.yaml, metrics.json, CSV curves, and the final
    weights as final.ckpt unless ``checkpoint`` is False); (name, result) per seed: ``value`` for
    one seed, ``seed<k>`` for each member of a seed-parallel stack."""
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    from ablate.experiments.runner.cells import run_cells

    with atomic_dir(out, claim=True) as tmp:
        seeds = list(range(cfg.seed, cfg.seed + cfg.trainer.seed_parallel))
        dirs = [tmp] if len(seeds) == 1 else [tmp / f"seed{s}" for s in seeds]
        loggers = [CSVLogger(d, name="", version="") for d in dirs]
        # The final weights (of the stack with seed_parallel > 1), saved once at max_steps.
        final = ModelCheckpoint(
            dirpath=tmp, filename="final", every_n_train_steps=cfg.trainer.max_steps, save_top_k=1
        )
        results = run_cells(
            cfg, seeds, dirs, progress=progress, loggers=loggers, callbacks=[final] if checkpoint else []
        )
    if len(seeds) == 1:
        return [("value", results[0])]
    return [(f"seed{s}", r) for s, r in zip(seeds, results, strict=True)]
