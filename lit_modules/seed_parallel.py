"""Seed-parallel training: K independent copies of the encoder trained as one vectorized model.

A small encoder is launch-bound on a GPU (a step is microseconds of arithmetic),
so the seeds of one variant are trained together: the members' weights are
stacked with a leading member dimension (``torch.func.stack_module_state``)
and the unchanged ``EncoderClassifier`` runs under ``torch.func.vmap``, so every
op runs once for all K members. Each member keeps its own init (built after
seeding with its seed, exactly as a run alone), its own data order (its own
shuffled loader), its own dropout masks (``randomness="different"``), its own
gradient clipping and its own divergence flag. AdamW is element-wise, so one
AdamW over the stack is K AdamWs.
"""

from __future__ import annotations

import dataclasses

import lightning as L
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from lit_modules.classifier import (
    Batch,
    adamw_warmup_cosine,
    classification_metrics,
    decay_groups,
    move_batch,
)
from lit_modules.config import ModelConfig, OptimConfig
from lit_modules.encoder import EncoderClassifier


class StackedEncoder(nn.Module):
    """``len(seeds)`` encoders with stacked weights; ``forward`` returns logits (K, B, C)."""

    def __init__(self, cfg: ModelConfig, *, vocab_size: int, n_classes: int, seeds: list[int]) -> None:
        super().__init__()
        self.cfg, self.vocab_size, self.n_classes = cfg, vocab_size, n_classes
        members = []
        for seed in seeds:
            L.seed_everything(seed, verbose=False)  # the init of a run with this seed alone
            members.append(EncoderClassifier(cfg, vocab_size=vocab_size, n_classes=n_classes))
        params, _ = stack_module_state(members)
        self.names = list(params)
        # Module attribute names cannot hold dots; the order of ``names`` maps them back.
        self.weights = nn.ParameterList(params[n] for n in self.names)  # each (K, *shape)
        for name, buf in members[0].named_buffers():  # position tables: the same for every member
            self.register_buffer(name.replace(".", "__"), buf, persistent=False)
        self.buffer_names = [n for n, _ in members[0].named_buffers()]
        # The explicit attention path: the fused CPU kernel has no vmap batching rule (vmap would
        # loop over the members); both paths compute the same function (tests/test_model.py).
        with torch.device("meta"):
            template = EncoderClassifier(
                dataclasses.replace(cfg, attn_impl="eager"), vocab_size=vocab_size, n_classes=n_classes
            )
        self._template = [template]  # a list: not a submodule, its meta weights are never used

    def train(self, mode: bool = True) -> StackedEncoder:
        super().train(mode)
        self._template[0].train(mode)  # dropout on/off follows this module
        return self

    def forward(self, input_ids: Tensor, attention_mask: Tensor, *, shared: bool = False) -> Tensor:
        """input_ids, attention_mask: (K, B, L), or (B, L) for every member with ``shared``."""
        params = dict(zip(self.names, self.weights, strict=True))
        buffers = {n: getattr(self, n.replace(".", "__")) for n in self.buffer_names}
        template = self._template[0]

        def member(p: dict[str, Tensor], ids: Tensor, mask: Tensor) -> Tensor:
            return functional_call(template, (p, buffers), (ids, mask)).logits

        data_dim = None if shared else 0
        return vmap(member, in_dims=(0, data_dim, data_dim), randomness="different")(
            params, input_ids, attention_mask
        )

    def member(self, k: int) -> EncoderClassifier:
        """Member k as an ordinary model (same config, its weights copied): for heatmaps and probes."""
        model = EncoderClassifier(self.cfg, vocab_size=self.vocab_size, n_classes=self.n_classes)
        state = {n: w[k].detach().clone() for n, w in zip(self.names, self.weights, strict=True)}
        model.load_state_dict(state, strict=False)  # buffers are rebuilt by the constructor
        return model.to(self.weights[0].device).eval()


def stack_batches(batches: list[dict[str, Tensor]]) -> tuple[Tensor, Tensor, Tensor]:
    """K member batches (B, L_k) -> ids, mask (K, B, L) padded to the longest, labels (K, B).

    Extra padding changes nothing: keys are masked and pooling skips pads (tested).
    """
    length = max(b["input_ids"].shape[1] for b in batches)
    ids = torch.stack([F.pad(b["input_ids"], (0, length - b["input_ids"].shape[1])) for b in batches])
    mask = torch.stack(
        [F.pad(b["attention_mask"], (0, length - b["attention_mask"].shape[1])) for b in batches]
    )
    return ids, mask, torch.stack([b["labels"] for b in batches])


def clip_per_member(grads: list[Tensor], max_norm: float) -> Tensor:
    """Scale each member's gradients to a total 2-norm of at most ``max_norm`` (as
    ``torch.nn.utils.clip_grad_norm_`` does for one model); returns the norms (K,)."""
    norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0).sqrt()  # (K,)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))
    return norms


class LitSeedParallel(L.LightningModule):
    """Trains a ``StackedEncoder``; per-member metrics, clipping and divergence.

    Training batches come as a list of K member batches (one shuffled loader per
    seed); validation and test batches are shared by all members. Final metrics
    land in ``results[k]``, validation curves during training in ``history``.
    """

    def __init__(
        self,
        model_cfg: ModelConfig,
        optim_cfg: OptimConfig,
        *,
        vocab_size: int,
        n_classes: int,
        max_steps: int,
        seeds: list[int],
    ) -> None:
        super().__init__()
        self.optim_cfg, self.max_steps, self.seeds = optim_cfg, max_steps, list(seeds)
        self.model = StackedEncoder(model_cfg, vocab_size=vocab_size, n_classes=n_classes, seeds=seeds)
        K = len(seeds)
        self.eval_metrics = nn.ModuleList(classification_metrics(n_classes) for _ in range(K))
        self.register_buffer("diverged", torch.zeros(K, dtype=torch.bool), persistent=False)
        self.register_buffer("diverged_at", torch.full((K,), -1, dtype=torch.long), persistent=False)
        self.register_buffer("loss_sum", torch.zeros(K), persistent=False)
        self.n_eval = 0
        self.test_prefix = "test"
        self.results: list[dict[str, float]] = [{} for _ in range(K)]
        self.history: list[dict] = []  # {"step": s, "metrics": [{"val/acc": ...} per member]}

    def transfer_batch_to_device(self, batch: Batch, device: torch.device, dataloader_idx: int) -> Batch:
        return move_batch(batch, device)

    def training_step(self, batch: list[dict[str, Tensor]], batch_idx: int) -> Tensor:
        ids, mask, labels = stack_batches(batch)
        logits = self.model(ids, mask)  # (K, B, C)
        K, B, C = logits.shape
        losses = F.cross_entropy(logits.float().reshape(K * B, C), labels.reshape(-1), reduction="none")
        losses = losses.view(K, B).mean(1)  # (K,)
        # On the device, without a host sync: a member whose loss is not finite is diverged from
        # now on; its gradients are zeroed before every step and its loss leaves the sum.
        newly = ~torch.isfinite(losses) & ~self.diverged
        self.diverged_at.copy_(torch.where(newly, self.global_step, self.diverged_at))
        self.diverged |= newly
        alive = ~self.diverged
        if (self.global_step + 1) % self.trainer.log_every_n_steps == 0:
            mean = torch.where(alive, losses, 0).sum() / alive.sum().clamp(min=1)
            self.log("train/loss", mean, on_step=True, batch_size=B)
            if not alive.any():  # one sync per logged step, not per step
                self.trainer.should_stop = True
        return torch.where(alive, losses, 0.0).sum()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        grads = [w.grad for w in self.model.weights if w.grad is not None]
        alive = ~self.diverged
        for g in grads:  # where, not multiply: a diverged member's NaN gradients become 0
            g.copy_(torch.where(alive.view(-1, *([1] * (g.dim() - 1))), g, 0.0))
        if self.optim_cfg.grad_clip:
            clip_per_member(grads, self.optim_cfg.grad_clip)

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        self._eval_step(batch)

    def test_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        self._eval_step(batch)

    def _eval_step(self, batch: dict[str, Tensor]) -> None:
        logits = self.model(batch["input_ids"], batch["attention_mask"], shared=True)  # (K, B, C)
        labels = batch["labels"]
        for k, metrics in enumerate(self.eval_metrics):
            metrics.update(logits[k], labels)
        K, B, C = logits.shape
        losses = F.cross_entropy(logits.float().reshape(K * B, C), labels.repeat(K), reduction="none")
        self.loss_sum += losses.view(K, B).sum(1)
        self.n_eval += len(labels)

    def on_validation_epoch_end(self) -> None:
        self._eval_end("val")

    def on_test_epoch_end(self) -> None:
        self._eval_end(self.test_prefix)

    def _eval_end(self, prefix: str) -> None:
        losses = (self.loss_sum / max(1, self.n_eval)).tolist()
        per_member = []
        for k, metrics in enumerate(self.eval_metrics):
            values = {f"{prefix}/{name}": float(v) for name, v in metrics.compute().items()}
            per_member.append({**values, f"{prefix}/loss": losses[k]})
            metrics.reset()
        self.loss_sum.zero_()
        self.n_eval = 0
        if self.trainer.state.fn == "fit":
            self.history.append({"step": self.global_step, "metrics": per_member})
            # The progress bar and the logger see the members' median.
            values = torch.tensor([m[f"{prefix}/acc"] for m in per_member])
            self.log(f"{prefix}/acc", values.median(), batch_size=1)
        else:
            for result, values in zip(self.results, per_member, strict=True):
                result.update(values)

    def configure_optimizers(self) -> dict:
        params = dict(zip(self.model.names, self.model.weights, strict=True))
        decayed = decay_groups(self.model._template[0])  # the same names as one member's
        return adamw_warmup_cosine(params, decayed, self.optim_cfg, self.max_steps)
