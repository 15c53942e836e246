"""LitClassifier: the thin Lightning system around ``EncoderClassifier``.

It wires loss, metrics, optimizer and schedule; the architecture lives in
``encoder.py``. Metric names follow ``stage/metric`` (``train/loss``,
``val/acc``, ``test/f1``) with one torchmetrics collection per stage.
"""

from __future__ import annotations

import math

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from ablate.lit_modules.model.config import ModelConfig, OptimConfig
from ablate.lit_modules.model.encoder import EncoderClassifier


def warmup_cosine(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """LR multiplier: linear warmup from 0 over ``warmup`` steps, then cosine to ``min_ratio``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


Batch = dict[str, torch.Tensor] | list[dict[str, torch.Tensor]]


def move_batch(batch: Batch, device: torch.device) -> Batch:
    """The loaders build CPU tensors (pinned on a GPU machine): nothing to do on a CPU, and on a GPU
    a non-blocking copy. Lightning's generic recursive walk costs about a millisecond per step."""
    if device.type == "cpu":
        return batch
    if isinstance(batch, list):
        return [move_batch(b, device) for b in batch]  # type: ignore[misc]
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def decay_groups(model: nn.Module) -> set[str]:
    """Names of the parameters AdamW decays: the matrices of linear layers. Embeddings,
    positional tables, [CLS], biases and LayerNorm are not decayed (as in GPT-2/BERT)."""
    return {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, nn.Linear)}


def classification_metrics(n_classes: int) -> MetricCollection:
    """What every stage reports: accuracy and macro-F1."""
    return MetricCollection(
        {
            "acc": MulticlassAccuracy(num_classes=n_classes, average="micro"),
            "f1": MulticlassF1Score(num_classes=n_classes, average="macro"),
        }
    )


def adamw_warmup_cosine(
    params: dict[str, nn.Parameter], decayed: set[str], cfg: OptimConfig, max_steps: int
) -> dict:
    """AdamW with two groups (weight decay only on ``decayed``) and a per-step warmup-cosine
    schedule, as ``configure_optimizers`` returns them."""
    groups = [
        {"params": [p for n, p in params.items() if n in decayed], "weight_decay": cfg.weight_decay},
        {"params": [p for n, p in params.items() if n not in decayed], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    warmup = round(cfg.warmup_ratio * max_steps)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine(step, warmup, max_steps, cfg.min_lr_ratio)
    )
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


def train_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the batch (the last two dims of logits (..., B, C)): a scalar for
    one model, (K,) for a stack. Both Lightning systems compute their losses here.

    One reduction per member: a reduction over everything but the member dim takes another
    kernel (another summation order) when there is one member, and a stack of one must give
    the bits of any other stack.
    """
    per_example = F.cross_entropy(logits.float().flatten(0, -2), labels.flatten(), reduction="none")
    rows = per_example.view(-1, labels.shape[-1])  # (K, B)
    return torch.stack([row.mean() for row in rows]).view(labels.shape[:-1])


def dropout_keys(seeds: torch.Tensor, step: int) -> torch.Tensor:
    """(K,) seeds -> (K, 2) int64 dropout keys (seed, step): lit_modules/model/dropout.py."""
    return torch.stack([seeds, torch.full_like(seeds, step)], dim=-1)


class LitClassifier(L.LightningModule):
    def __init__(
        self,
        model_cfg: ModelConfig,
        optim_cfg: OptimConfig,
        *,
        vocab_size: int,
        n_classes: int,
        max_steps: int,
        seed: int,
    ) -> None:
        super().__init__()
        self.model_cfg = model_cfg
        self.optim_cfg = optim_cfg
        self.max_steps = max_steps
        self.seeds = [seed]
        self.model = EncoderClassifier(model_cfg, vocab_size=vocab_size, n_classes=n_classes)
        metrics = classification_metrics(n_classes)
        # "train" is an nn.Module method name, so the keys carry a suffix.
        self.metrics = nn.ModuleDict({f"{s}_m": metrics.clone() for s in ("train", "val", "test")})
        self.diverged_at: int | None = None  # the step whose loss was not finite
        # Set by run_trial to log a second test split (e.g. "test_long").
        self.test_prefix = "test"

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.model(batch["input_ids"], batch["attention_mask"]).logits

    def member_model(self, k: int) -> EncoderClassifier:
        """The trained model of seed ``self.seeds[k]`` (one seed here; the stack has K)."""
        return self.model

    def diverged_steps(self) -> list[int | None]:
        """Per seed: the step whose loss was not finite, or None."""
        return [self.diverged_at]

    def transfer_batch_to_device(self, batch: Batch, device: torch.device, dataloader_idx: int) -> Batch:
        return move_batch(batch, device)

    def model_step(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(batch)  # (B, C)
        return F.cross_entropy(logits.float(), batch["labels"]), logits

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor | None:
        # The key as Python ints: the mask's native one-pass path (the same bits as the tensor key).
        key = (self.seeds[0], self.global_step)
        logits = self.model(batch["input_ids"], batch["attention_mask"], key=key).logits  # (B, C)
        loss = self.train_losses(logits, batch["labels"])
        if not torch.isfinite(loss):
            # The divergence rule (both paths): the weights stay at their last finite state and the
            # run stops; returning None skips this step's backward and optimizer step.
            self.diverged_at = self.global_step
            self.trainer.should_stop = True
            return None
        # The logger writes only every log_every_n_steps, and each self.log call and metric update
        # costs Lightning bookkeeping or a sync: log the loss and the accuracy of that step's batch.
        if (self.global_step + 1) % self.trainer.log_every_n_steps == 0:
            n = len(batch["labels"])
            self.log("train/loss", loss, on_step=True, batch_size=n)
            metrics = self.metrics["train_m"]
            values = metrics(logits.detach(), batch["labels"])  # this batch only
            metrics.reset()
            self.log_dict({f"train/{k}": v for k, v in values.items()}, on_step=True, batch_size=n)
        return loss

    def train_losses(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return train_losses(logits, labels)

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, "val", "val_m")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, self.test_prefix, "test_m")

    def _eval_step(self, batch: dict[str, torch.Tensor], prefix: str, key: str) -> None:
        loss, logits = self.model_step(batch)
        metrics = self.metrics[key]
        metrics.update(logits, batch["labels"])
        n = len(batch["labels"])
        # sync_dist and torchmetrics' own reduction keep the values right under DDP.
        self.log(f"{prefix}/loss", loss, on_epoch=True, batch_size=n, sync_dist=True)
        self.log_dict({f"{prefix}/{k}": m for k, m in metrics.items()}, on_epoch=True, batch_size=n)

    def configure_optimizers(self) -> dict:
        params = dict(self.model.named_parameters())
        return adamw_warmup_cosine(params, decay_groups(self.model), self.optim_cfg, self.max_steps)
