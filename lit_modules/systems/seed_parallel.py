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

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import Logger
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap
from torch.nn.utils import get_total_norm

from ablate.lit_modules.model.config import ModelConfig, OptimConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.model.registry import get
from ablate.lit_modules.systems.classifier import (
    Batch,
    adamw_warmup_cosine,
    classification_metrics,
    decay_groups,
    dropout_keys,
    move_batch,
    train_losses,
)
from ablate.lit_modules.systems.ulp import perturb_ulp


def stack_config(cfg: ModelConfig) -> ModelConfig:
    """The config a member runs with inside the stack: the attention component's ``for_stack``."""
    for_stack = getattr(get("attention", cfg.attention), "for_stack", None)
    return for_stack(cfg) if for_stack is not None else cfg


class StackedEncoder(nn.Module):
    """``len(seeds)`` encoders with stacked weights; ``forward`` returns logits (K, B, C)."""

    def __init__(
        self,
        cfg: ModelConfig,
        *,
        vocab_size: int,
        n_classes: int,
        seeds: list[int],
        numerics: list[int] | None = None,
    ) -> None:
        """``seeds``: each member's init seed; ``numerics``: its numerics level (default 0)."""
        super().__init__()
        self.cfg, self.vocab_size, self.n_classes = cfg, vocab_size, n_classes
        members = []
        for seed, level in zip(seeds, numerics or [0] * len(seeds), strict=True):
            L.seed_everything(seed, verbose=False)  # the init of a run with this seed alone
            member = EncoderClassifier(cfg, vocab_size=vocab_size, n_classes=n_classes)
            perturb_ulp(member, level)  # as the run alone: after its init, before training
            members.append(member)
        params, _ = stack_module_state(members)
        self.names = list(params)
        # Module attribute names cannot hold dots; the order of ``names`` maps them back.
        self.weights = nn.ParameterList(params[n] for n in self.names)  # each (K, *shape)
        for name, buf in members[0].named_buffers():  # position tables: the same for every member
            self.register_buffer(name.replace(".", "__"), buf, persistent=False)
        self.buffer_names = [n for n, _ in members[0].named_buffers()]
        # What the attention component needs under vmap (for mha the explicit path: the fused CPU
        # kernel has no batching rule; both paths compute the same function, tested).
        with torch.device("meta"):
            template = EncoderClassifier(stack_config(cfg), vocab_size=vocab_size, n_classes=n_classes)
        self._template = [template]  # a list: not a submodule, its meta weights are never used

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, keys: Tensor | None = None, *, shared: bool = False
    ) -> Tensor:
        """input_ids, attention_mask: (K, B, L), or (B, L) for every member with ``shared``;
        keys: (K, 2) dropout keys (needed in training mode). Returns logits (K, B, C)."""
        params = dict(zip(self.names, self.weights, strict=True))
        buffers = {n: getattr(self, n.replace(".", "__")) for n in self.buffer_names}
        template = self._template[0]
        if template.training != self.training:
            # Dropout on/off follows this module. Set here, not in train(): Lightning restores
            # modes after validation by assigning `.training`, which never reaches the template.
            template.train(self.training)

        def member(p: dict[str, Tensor], ids: Tensor, mask: Tensor, key: Tensor | None) -> Tensor:
            return functional_call(template, (p, buffers), (ids, mask), {"key": key}).logits

        data_dim = None if shared else 0
        key_dim = None if keys is None else 0
        return vmap(member, in_dims=(0, data_dim, data_dim, key_dim), randomness="error")(
            params, input_ids, attention_mask, keys
        )

    def member(self, k: int) -> EncoderClassifier:
        """Member k as an ordinary model (same config, its weights copied): for heatmaps and probes."""
        model = EncoderClassifier(self.cfg, vocab_size=self.vocab_size, n_classes=self.n_classes)
        state = {n: w[k].detach().clone() for n, w in zip(self.names, self.weights, strict=True)}
        model.load_state_dict(state, strict=False)  # buffers are rebuilt by the constructor
        return model.to(self.weights[0].device).eval()


def stack_batches(batches: list[dict[str, Tensor]], length: int) -> tuple[Tensor, Tensor, Tensor]:
    """K member batches (B, L_k) -> ids, mask (K, B, length), labels (K, B).

    ``length`` is fixed by the data (its longest training example), never by the other members'
    batches: a padded length that depended on the group would change a member's float reductions.
    Extra padding changes nothing else: keys are masked and pooling skips pads (tested).
    """
    ids = torch.stack([F.pad(b["input_ids"], (0, length - b["input_ids"].shape[1])) for b in batches])
    mask = torch.stack(
        [F.pad(b["attention_mask"], (0, length - b["attention_mask"].shape[1])) for b in batches]
    )
    return ids, mask, torch.stack([b["labels"] for b in batches])


def clip_per_member(grads: list[Tensor], max_norm: float) -> Tensor:
    """Scale each member's gradients to a total 2-norm of at most ``max_norm`` (as
    ``torch.nn.utils.clip_grad_norm_`` does for one model); returns the norms (K,).

    Each member's norm is taken over its own slices (foreach norms of 1-D-contiguous tensors):
    a reduction over all but the member dim would sum in another order for a stack of one.
    """
    norms = torch.stack([get_total_norm([g[k] for g in grads]) for k in range(grads[0].shape[0])])
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))
    return norms


class LitSeedParallel(L.LightningModule):
    """Trains a ``StackedEncoder``: the same steps as ``LitClassifier``, once per member.

    Training batches come as a list of K member batches (one shuffled loader per seed),
    padded to ``pad_to``; validation and test batches are shared by all members. Every
    metric is logged through Lightning as ``name@k`` for member k (``MemberLogger`` routes
    it to that member's own logger as ``name``).
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
        pad_to: int,
        init_seeds: list[int] | None = None,
        numerics: list[int] | None = None,
    ) -> None:
        """``seeds`` key the members' dropout; ``init_seeds`` (default: the same) their init;
        ``numerics`` (default: 0 each) their numerics levels (lit_modules/systems/ulp.py)."""
        super().__init__()
        self.optim_cfg, self.max_steps, self.seeds, self.pad_to = optim_cfg, max_steps, list(seeds), pad_to
        self.model = StackedEncoder(
            model_cfg,
            vocab_size=vocab_size,
            n_classes=n_classes,
            seeds=init_seeds or list(seeds),
            numerics=numerics,
        )
        K = len(seeds)
        self.register_buffer("seed_t", torch.tensor(seeds, dtype=torch.int64), persistent=False)
        self.train_metrics = nn.ModuleList(classification_metrics(n_classes) for _ in range(K))
        self.eval_metrics = nn.ModuleList(classification_metrics(n_classes) for _ in range(K))
        self.register_buffer("diverged", torch.zeros(K, dtype=torch.bool), persistent=False)
        self.register_buffer("diverged_at", torch.full((K,), -1, dtype=torch.long), persistent=False)
        self.test_prefix = "test"

    def transfer_batch_to_device(self, batch: Batch, device: torch.device, dataloader_idx: int) -> Batch:
        return move_batch(batch, device)

    def member_model(self, k: int) -> EncoderClassifier:
        return self.model.member(k)

    def diverged_steps(self) -> list[int | None]:
        return [
            int(s) if d else None
            for d, s in zip(self.diverged.tolist(), self.diverged_at.tolist(), strict=True)
        ]

    def train_losses(self, logits: Tensor, labels: Tensor) -> Tensor:
        return train_losses(logits, labels)

    def training_step(self, batch: list[dict[str, Tensor]], batch_idx: int) -> Tensor:
        ids, mask, labels = stack_batches(batch, self.pad_to)
        logits = self.model(ids, mask, dropout_keys(self.seed_t, self.global_step))  # (K, B, C)
        losses = self.train_losses(logits, labels)  # (K,)
        # On the device, without a host sync: a member whose loss is not finite is diverged from
        # now on, and optimizer_step keeps its weights and optimizer state where they are.
        newly = ~torch.isfinite(losses) & ~self.diverged
        self.diverged_at.copy_(torch.where(newly, self.global_step, self.diverged_at))
        self.diverged |= newly
        if (self.global_step + 1) % self.trainer.log_every_n_steps == 0:
            alive = (~self.diverged).tolist()  # one sync per logged step, not per step
            B = labels.shape[1]
            for k in (k for k, a in enumerate(alive) if a):  # a diverged single run logs no more
                values = self.train_metrics[k](logits[k].detach(), labels[k])  # this batch only
                self.train_metrics[k].reset()
                logged = {"train/loss": losses[k], **{f"train/{n}": v for n, v in values.items()}}
                self.log_dict({f"{n}@{k}": v for n, v in logged.items()}, on_step=True, batch_size=B)
            if not any(alive):
                self.trainer.should_stop = True
        return torch.where(self.diverged, 0.0, losses).sum()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.optim_cfg.grad_clip:
            clip_per_member(
                [w.grad for w in self.model.weights if w.grad is not None], self.optim_cfg.grad_clip
            )

    def optimizer_step(self, epoch: int, batch_idx: int, optimizer, optimizer_closure=None) -> None:
        """The divergence rule of ``LitClassifier``, per member: a member whose loss became
        non-finite keeps the weights and AdamW moments it had before that step (weight decay and
        momentum would otherwise keep moving it), so it reports what the single run reports."""
        opt = getattr(optimizer, "optimizer", optimizer)
        weights = list(self.model.weights)
        before = [w.detach().clone() for w in weights]
        moments = [{n: v.clone() for n, v in opt.state[w].items() if v.dim() > 0} for w in weights]
        optimizer.step(closure=optimizer_closure)  # runs training_step, which flags divergence
        with torch.no_grad():
            for w, old, old_moments in zip(weights, before, moments, strict=True):
                frozen = self.diverged.view(-1, *([1] * (w.dim() - 1)))
                w.copy_(torch.where(frozen, old, w))
                for name, value in opt.state[w].items():
                    if value.dim() > 0:  # exp_avg, exp_avg_sq: zeros before AdamW's first step
                        value.copy_(torch.where(frozen, old_moments.get(name, 0.0), value))

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        self._eval_step(batch, self.test_prefix)

    def _eval_step(self, batch: dict[str, Tensor], prefix: str) -> None:
        logits = self.model(batch["input_ids"], batch["attention_mask"], shared=True)  # (K, B, C)
        labels = batch["labels"]
        losses = train_losses(logits, labels.expand(len(self.seeds), -1))  # (K,)
        n = len(labels)
        for k, metrics in enumerate(self.eval_metrics):
            metrics.update(logits[k], labels)
            self.log(f"{prefix}/loss@{k}", losses[k], on_epoch=True, batch_size=n)
            self.log_dict(
                {f"{prefix}/{name}@{k}": m for name, m in metrics.items()}, on_epoch=True, batch_size=n
            )

    def configure_optimizers(self) -> dict:
        params = dict(zip(self.model.names, self.model.weights, strict=True))
        decayed = decay_groups(self.model._template[0])  # the same names as one member's
        return adamw_warmup_cosine(params, decayed, self.optim_cfg, self.max_steps)


def member_metrics(logged: dict[str, float], n_members: int) -> list[dict[str, float]]:
    """Split what a run logged into one dict per member: ``name@k`` goes to member k as ``name``;
    a name without ``@`` (the single path, one member) goes to every member."""
    out: list[dict[str, float]] = [{} for _ in range(n_members)]
    for name, value in logged.items():
        base, sep, k = name.rpartition("@")
        for m in [int(k)] if sep else range(n_members):
            out[m][base if sep else name] = value
    return out


class MemberLogger(Logger):
    """Member k's view of a stacked run: forwards only ``name@k`` metrics, as ``name``, to the
    member's own logger (its W&B run, its CSV), so each member gets its own curves."""

    def __init__(self, inner: Logger, k: int) -> None:
        super().__init__()
        self.inner, self.suffix = inner, f"@{k}"

    @property
    def name(self) -> str | None:
        return self.inner.name

    @property
    def version(self) -> int | str | None:
        return self.inner.version

    @property
    def save_dir(self) -> str | None:
        return self.inner.save_dir

    @property
    def experiment(self):  # noqa: ANN201 (whatever the inner logger's experiment is)
        return self.inner.experiment

    def log_hyperparams(self, params, *args, **kwargs) -> None:  # noqa: ANN001 (Logger's signature)
        self.inner.log_hyperparams(params, *args, **kwargs)

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        mine = {n.removesuffix(self.suffix): v for n, v in metrics.items() if n.endswith(self.suffix)}
        if mine:
            self.inner.log_metrics(mine, step)

    def save(self) -> None:
        self.inner.save()

    def finalize(self, status: str) -> None:
        self.inner.finalize(status)
