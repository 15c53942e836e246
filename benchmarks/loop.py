"""``lightning_vs_raw``: ``run_trial``'s fit loop against a plain PyTorch loop over the same parts.

Same config, ``LitClassifier`` (its model, ``configure_optimizers``: AdamW, warmup-cosine
schedule), the same ``ClassificationDataModule`` train loader, the same gradient clipping and
determinism setting. Data is generated and cached once, before either side runs. Only the
training loop is timed: Lightning from ``on_train_start`` to ``on_train_end`` minus the
validation it runs in between; the raw loop around its steps.
"""

from __future__ import annotations

import tempfile
import time

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger

from ablate.benchmarks.timing import interleave, summarize
from ablate.datamodules import ClassificationDataModule
from ablate.experiments.runner.cells import run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.lit_modules.systems.classifier import LitClassifier, train_losses


class FitTimer(Callback):
    """Wall time of the fit loop and of the validation runs inside it."""

    def __init__(self) -> None:
        self.fit_s = 0.0
        self.val_s = 0.0
        self.fit_start_wall = 0.0  # time.time() at fit start, comparable across processes
        self._t0 = self._v0 = 0.0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.fit_start_wall = time.time()
        self._t0 = time.perf_counter()

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.fit_s = time.perf_counter() - self._t0

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._v0 = time.perf_counter()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.training or self.fit_s == 0.0:  # only validation inside fit
            self.val_s += time.perf_counter() - self._v0

    @property
    def train_s(self) -> float:
        return self.fit_s - self.val_s


def lightning_steps_s(cfg: TrainConfig, dm: ClassificationDataModule) -> float:
    """With a CSVLogger, as ``ablate train`` runs it."""
    timer = FitTimer()
    with tempfile.TemporaryDirectory(prefix="ablate-bench-") as tmp:
        logger = CSVLogger(tmp, name="", version="")
        result = run_trial(cfg, datamodule=dm, callbacks=[timer], logger=logger)
    return result.steps / timer.train_s


def raw_steps_s(cfg: TrainConfig, dm: ClassificationDataModule) -> float:
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    lit = LitClassifier(
        cfg.model,
        cfg.optim,
        vocab_size=dm.vocab_size,
        n_classes=dm.n_classes,
        max_steps=cfg.trainer.max_steps,
        seed=cfg.seed,
    )
    opt_cfg = lit.configure_optimizers()
    optimizer, schedule = opt_cfg["optimizer"], opt_cfg["lr_scheduler"]["scheduler"]
    params = list(lit.parameters())
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(cfg.trainer.deterministic)  # as the Trainer does
    lit.train()
    steps = 0
    t0 = time.perf_counter()
    try:
        while steps < cfg.trainer.max_steps:
            for batch in dm.train_dataloader():
                key = (lit.seeds[0], steps)  # the same keyed dropout as training_step
                logits = lit.model(batch["input_ids"], batch["attention_mask"], key=key).logits
                loss = train_losses(logits, batch["labels"])
                if not torch.isfinite(loss):
                    break
                loss.backward()
                if cfg.optim.grad_clip:
                    torch.nn.utils.clip_grad_norm_(params, cfg.optim.grad_clip)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                schedule.step()
                steps += 1
                if steps == cfg.trainer.max_steps:
                    break
        elapsed = time.perf_counter() - t0
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
    return steps / elapsed


def lightning_vs_raw(cfg: TrainConfig, *, rounds: int) -> dict:
    dm = ClassificationDataModule(cfg.data, shuffle_seed=cfg.seed)
    dm.prepare_data()  # generate and cache once, outside every timing
    dm.setup("fit")
    lightning_steps_s(cfg, dm)  # warm up both paths (first-call allocations, lazy imports)
    raw_steps_s(cfg, dm)
    ra, rb = interleave(lambda: lightning_steps_s(cfg, dm), lambda: raw_steps_s(cfg, dm), rounds)
    return {
        **summarize("lightning_steps_s", ra, "raw_steps_s", rb),
        "max_steps": cfg.trainer.max_steps,
        "rounds": rounds,
    }
