"""``run_trial``: the one function that trains and evaluates a configuration.

The train command, every sweep worker and the W&B agent call it; there is no
second training loop.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import Logger

from datamodules import ClassificationDataModule
from experiments.config import TrainConfig
from experiments.io import write_json, write_yaml
from lit_modules.classifier import LitClassifier
from lit_modules.config import ConfigError


@dataclass
class TrialResult:
    """Final metrics of one run. A diverged run is a result, not an exception."""

    metrics: dict[str, float]
    diverged: bool
    steps: int
    wall_s: float
    config: TrainConfig
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: a NaN metric (a diverged run) becomes null."""
        metrics = {k: (v if math.isfinite(v) else None) for k, v in self.metrics.items()}
        return {**metrics, "diverged": self.diverged, "steps": self.steps, "wall_s": round(self.wall_s, 3)}


def resolve_precision(cfg: TrainConfig) -> str:
    """``auto`` means bf16-mixed on a GPU that has bf16, full fp32 otherwise."""
    if cfg.trainer.precision != "auto":
        return cfg.trainer.precision
    wants_gpu = cfg.trainer.accelerator in ("auto", "gpu", "cuda")
    if wants_gpu and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return "bf16-mixed"
    return "32-true"


def check_lengths(cfg: TrainConfig) -> None:
    """The learned PE table has ``model.max_len`` rows: every input must fit."""
    longest = cfg.data.max_len * max(1, cfg.data.long_test_factor) + (cfg.model.pool == "cls")
    if cfg.data.task == "lookup":  # n_pairs pair tokens, then n_pairs query copies
        longest = 2 * cfg.data.n_pairs * max(1, cfg.data.long_test_factor) + (cfg.model.pool == "cls")
    if cfg.model.pe == "learned" and longest > cfg.model.max_len:
        raise ConfigError(
            f"model.pe='learned' has model.max_len={cfg.model.max_len} positions but inputs reach "
            f"{longest} tokens (data.max_len x long_test_factor, + [CLS]); raise model.max_len"
        )


def quiet_lightning() -> None:
    """Lightning's per-run banners drown a sweep's progress; keep warnings that matter."""
    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*GPU available but not used.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*anonymous setting has no effect.*")
    # LitClassifier moves its own batches (lit_modules.classifier.move_batch), on purpose.
    warnings.filterwarnings("ignore", message=".*overridden `transfer_batch_to_device`.*")


def make_trainer(
    cfg: TrainConfig,
    out_dir: str | Path | None,
    *,
    progress: bool,
    logger: Logger | bool,
    callbacks: Sequence[Callback] = (),
    clip: bool = True,
) -> L.Trainer:
    t = cfg.trainer
    return L.Trainer(
        max_steps=t.max_steps,
        accelerator=t.accelerator,
        devices=t.devices,
        precision=resolve_precision(cfg),
        deterministic=t.deterministic,
        gradient_clip_val=(cfg.optim.grad_clip or None) if clip else None,
        log_every_n_steps=t.log_every,
        # Validate every val_every steps across epoch boundaries; 0 = never during fit.
        val_check_interval=t.val_every or t.max_steps + 1,
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=progress,
        logger=logger,
        callbacks=list(callbacks),
        default_root_dir=str(out_dir) if out_dir else None,
    )


def _setup(
    cfg: TrainConfig, shuffle_seed: int, datamodule: ClassificationDataModule | None
) -> ClassificationDataModule:
    check_lengths(cfg)
    quiet_lightning()
    dm = datamodule or ClassificationDataModule(cfg.data, shuffle_seed=shuffle_seed)
    dm.prepare_data()
    dm.setup("fit")
    if torch.cuda.is_available():
        torch.set_float32_matmul_precision("high")
    return dm


def evaluate(trainer: L.Trainer, lit: L.LightningModule, dm: ClassificationDataModule) -> dict[str, float]:
    """Validation, test and (if the data has one) the long test split; the logged metrics."""
    metrics: dict[str, float] = {}
    splits = [("val", dm.val_dataloader()), ("test", dm.test_dataloader())]
    if "test_long" in dm.splits:
        splits.append(("test_long", dm.dataloader("test_long")))
    for prefix, loader in splits:
        lit.test_prefix = prefix
        run = trainer.validate if prefix == "val" else trainer.test
        for found in run(lit, dataloaders=loader, verbose=False):
            metrics.update(found)
    lit.test_prefix = "test"
    return metrics


def run_trial(
    cfg: TrainConfig,
    out_dir: str | Path | None = None,
    *,
    progress: bool = False,
    logger: Logger | bool = False,
    callbacks: Sequence[Callback] = (),
    datamodule: ClassificationDataModule | None = None,
) -> TrialResult:
    """Build data, model and Trainer from ``cfg``; train, validate, test.

    With ``out_dir`` the resolved config, ``metrics.json`` and the tokenizer
    are written there. The seed fixes model init, data order and dropout;
    ``cfg.data.seed`` alone fixes the data set.
    """
    start = time.perf_counter()
    dm = _setup(cfg, cfg.seed, datamodule)
    # Seed after data preparation so init does not depend on what data loading drew.
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    lit = LitClassifier(
        cfg.model,
        cfg.optim,
        vocab_size=dm.vocab_size,
        n_classes=dm.n_classes,
        max_steps=cfg.trainer.max_steps,
    )
    if cfg.trainer.compile:
        lit.model = torch.compile(lit.model)
    trainer = make_trainer(cfg, out_dir, progress=progress, logger=logger, callbacks=callbacks)
    trainer.fit(lit, datamodule=dm)
    metrics = evaluate(trainer, lit, dm)
    result = TrialResult(
        metrics={k: float(v) for k, v in sorted(metrics.items())},
        diverged=lit.diverged,
        steps=trainer.global_step,
        wall_s=time.perf_counter() - start,
        config=cfg,
    )
    result.extras.update(lit=lit, model=lit.model, datamodule=dm)
    if out_dir is not None:
        out = Path(out_dir)
        write_yaml(out / "config.yaml", cfg.to_dict())
        write_json(out / "metrics.json", result.to_dict())
        dm.save_tokenizer(out)
    return result


def run_seed_parallel(
    cfg: TrainConfig,
    seeds: Sequence[int],
    out_dirs: Sequence[str | Path] | None = None,
    *,
    progress: bool = False,
    callbacks: Sequence[Callback] = (),
    datamodule: ClassificationDataModule | None = None,
) -> list[TrialResult]:
    """Train ``cfg`` for every seed at once as one vectorized model; one result per seed.

    Member k gets what ``run_trial(cfg with seed=seeds[k])`` gets: its init, its data order,
    its clipping and divergence; with dropout 0 the same weights to float tolerance (tested).
    ``wall_s`` of each result is its share of the joint run.
    """
    from lit_modules.seed_parallel import LitSeedParallel

    seeds = list(seeds)
    start = time.perf_counter()
    dm = _setup(cfg, seeds[0], datamodule)
    lit = LitSeedParallel(
        cfg.model,
        cfg.optim,
        vocab_size=dm.vocab_size,
        n_classes=dm.n_classes,
        max_steps=cfg.trainer.max_steps,
        seeds=seeds,
    )
    trainer = make_trainer(cfg, None, progress=progress, logger=False, callbacks=callbacks, clip=False)
    # A list of loaders: Lightning zips them, so a training batch is one batch per member.
    loaders = [dm.dataloader("train", shuffle=True, seed=s) for s in seeds]
    trainer.fit(lit, train_dataloaders=loaders, val_dataloaders=dm.val_dataloader())
    evaluate(trainer, lit, dm)  # per-member results land in lit.results
    wall = time.perf_counter() - start
    diverged, diverged_at = lit.diverged.tolist(), lit.diverged_at.tolist()
    results = []
    for k, seed in enumerate(seeds):
        result = TrialResult(
            metrics=dict(sorted(lit.results[k].items())),
            diverged=diverged[k],
            steps=diverged_at[k] if diverged[k] else trainer.global_step,
            wall_s=wall / len(seeds),
            config=cfg.override({"seed": seed}),
        )
        curve = [{"step": h["step"], **h["metrics"][k]} for h in lit.history]
        result.extras.update(model=lit.model.member(k), datamodule=dm, curve=curve)
        if out_dirs is not None:
            out = Path(out_dirs[k])
            write_yaml(out / "config.yaml", result.config.to_dict())
            write_json(out / "metrics.json", result.to_dict())
            write_json(out / "val_curve.json", curve)
            dm.save_tokenizer(out)
        results.append(result)
    return results
