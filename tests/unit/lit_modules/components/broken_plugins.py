"""Attention plugins for the conformance kit's tests (test_conformance.py): ``kit-reference`` keeps
every contract; each plugin after it breaks one contract the way a user's plugin did, so exactly
one check of the kit catches it (``CAUGHT_BY``). Loaded as a plugin file, as a user's would be:

    ablate check-component attention kit-ignores-rope \\
        --plugins tests/unit/lit_modules/components/broken_plugins.py

``kit-draws-randn`` and ``kit-ignores-key-mask`` break several checks at once; they pin the order
(the first FAIL names the cause).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor, nn

from ablate import components
from ablate.errors import ConfigError


@components.register("attention", "kit-reference")
class Reference(nn.Module):
    """Multi-head attention with grouped key-value heads (as ``mha``, explicit path only), in
    small steps that the broken plugins below override one at a time."""

    Options = components.KVHeadsOptions

    def __init__(self, cfg) -> None:
        super().__init__()
        self.n_heads, self.kv_heads, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, cfg.d_model + 2 * self.kv_heads * cfg.head_dim)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = components.KeyedDropout(cfg.attn_dropout)

    @classmethod
    def check(cls, cfg) -> None:
        if cfg.n_heads % cfg.kv_heads:
            raise ConfigError(
                f"model.attention_options.n_kv_heads={cfg.n_kv_heads} must divide model.n_heads={cfg.n_heads}"
            )

    def forward(self, x, keep, pos, *, need_weights=False, head_mask=None, key=None):
        B, L, D = x.shape
        q, k, v = self.project(x)  # (B, H, L, Dh) each
        q, k = self.rotate(pos, q, k)
        scores = (q @ k.transpose(-2, -1)) * self.scale(need_weights)  # (B, H, L, L)
        scores = self.mask(self.add_bias(pos, scores), keep)
        probs = self.normalize(scores)  # (B, H, L, L)
        y = self.scale_heads(self.attend(probs, v, key), head_mask)  # (B, H, L, Dh)
        y = y.transpose(1, 2).reshape(B, L, D)
        return self.out(y), (self.returned(probs) if need_weights else None)

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        B, L, _ = x.shape
        H, G = self.n_heads, self.kv_heads
        heads = self.qkv(x).view(B, L, H + 2 * G, self.head_dim).transpose(1, 2)
        q, k, v = heads[:, :H], heads[:, H : H + G], heads[:, H + G :]
        return q, k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)

    def rotate(self, pos, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        return pos.rotate(q, k)

    def scale(self, need_weights: bool) -> float:
        return 1.0 / math.sqrt(self.head_dim)

    def add_bias(self, pos, scores: Tensor) -> Tensor:
        bias = pos.bias(scores.shape[-1], scores.device, scores.dtype)  # (H, L, L) or None
        return scores if bias is None else scores + bias

    def mask(self, scores: Tensor, keep: Tensor) -> Tensor:
        return scores.masked_fill(~keep[:, None, None, :], float("-inf"))

    def normalize(self, scores: Tensor) -> Tensor:
        return scores.softmax(dim=-1)

    def attend(self, probs: Tensor, v: Tensor, key) -> Tensor:
        return self.dropout(probs, key) @ v

    def scale_heads(self, y: Tensor, head_mask: Tensor | None) -> Tensor:
        return y if head_mask is None else y * head_mask.view(1, -1, 1, 1)

    def returned(self, probs: Tensor) -> Tensor:
        return probs


@components.register("attention", "kit-needs-width")
class NeedsWidth(Reference):
    """Refuses any d_model under 32, so the kit's tiny model never builds."""

    @classmethod
    def check(cls, cfg) -> None:
        if cfg.d_model < 32:
            raise ConfigError("needs model.d_model >= 32")


@components.register("attention", "kit-head-averaged")
class HeadAveraged(Reference):
    """Returns head-averaged weights (B, L, L), as torch's nn.MultiheadAttention does by default."""

    def returned(self, probs: Tensor) -> Tensor:
        return probs.mean(dim=1)


@components.register("attention", "kit-torch-dropout")
class TorchDropout(Reference):
    """Drops attention weights with nn.Dropout (torch's global generator) instead of KeyedDropout."""

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self.torch_dropout = nn.Dropout(cfg.attn_dropout)

    def attend(self, probs: Tensor, v: Tensor, key) -> Tensor:
        return self.torch_dropout(probs) @ v


@components.register("attention", "kit-draws-randn")
class DrawsRandn(Reference):
    """Adds noise drawn with torch.randn to the values, in training and in eval."""

    def attend(self, probs: Tensor, v: Tensor, key) -> Tensor:
        return super().attend(probs, v + 0.01 * torch.randn_like(v), key)


@components.register("attention", "kit-ignores-key-mask")
class IgnoresKeyMask(Reference):
    """Never masks the padded keys."""

    def mask(self, scores: Tensor, keep: Tensor) -> Tensor:
        return scores


@components.register("attention", "kit-leaks-padding")
class LeaksPadding(Reference):
    """Masks the keys, then adds a summary of the values over every position, padding included."""

    def attend(self, probs: Tensor, v: Tensor, key) -> Tensor:
        return super().attend(probs, v, key) + v.mean(dim=2, keepdim=True)


@components.register("attention", "kit-own-positions")
class OwnPositions(Reference):
    """Hard-codes a distance penalty of its own: with ``pe: none`` the encoder still sees order."""

    def add_bias(self, pos, scores: Tensor) -> Tensor:
        L = scores.shape[-1]
        i = torch.arange(L, device=scores.device)
        return super().add_bias(pos, scores) - 0.5 * (i[None, :] - i[:, None]).abs()


@components.register("attention", "kit-talking-heads")
class TalkingHeads(Reference):
    """Talking-heads attention (Shazeer et al. 2020), post-softmax mix only, returning the mixed
    weights: a distribution at init (the mix is the identity), not after training."""

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self.mix = nn.Parameter(torch.eye(cfg.n_heads))  # (H, H)

    def normalize(self, scores: Tensor) -> Tensor:
        return torch.einsum("gh,bhij->bgij", self.mix, scores.softmax(dim=-1))


@components.register("attention", "kit-ignores-rope")
class IgnoresRope(Reference):
    """Never calls pos.rotate: with ``pe: rope`` it has no position information."""

    def rotate(self, pos, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        return q, k


@components.register("attention", "kit-ignores-alibi")
class IgnoresAlibi(Reference):
    """Never calls pos.bias: with ``pe: alibi`` it has no position information."""

    def add_bias(self, pos, scores: Tensor) -> Tensor:
        return scores


@components.register("attention", "kit-ignores-head-mask")
class IgnoresHeadMask(Reference):
    """Never reads head_mask: every head's importance would read 0."""

    def scale_heads(self, y: Tensor, head_mask: Tensor | None) -> Tensor:
        return y


@components.register("attention", "kit-masks-queries")
class MasksQueries(Reference):
    """Applies head_mask to the queries: a masked head attends uniformly instead of vanishing."""

    def forward(self, x, keep, pos, *, need_weights=False, head_mask=None, key=None):
        B, L, D = x.shape
        q, k, v = self.project(x)
        if head_mask is not None:
            q = q * head_mask.view(1, -1, 1, 1)
        q, k = pos.rotate(q, k)
        scores = self.add_bias(pos, (q @ k.transpose(-2, -1)) * self.scale(need_weights))
        probs = self.mask(scores, keep).softmax(dim=-1)
        y = self.attend(probs, v, key).transpose(1, 2).reshape(B, L, D)
        return self.out(y), (probs if need_weights else None)


@components.register("attention", "kit-ignores-kv-heads")
class IgnoresKvHeads(Reference):
    """Accepts model.n_kv_heads and keeps one key-value head per query head anyway."""

    def __init__(self, cfg) -> None:
        super().__init__(dataclasses.replace(cfg, attention_options={"n_kv_heads": None}))

    @classmethod
    def check(cls, cfg) -> None:
        pass


@components.register("attention", "kit-fast-path-scale")
class FastPathScale(Reference):
    """Scales the scores by 1/Dh instead of 1/sqrt(Dh) on the path without probabilities."""

    def scale(self, need_weights: bool) -> float:
        return 1.0 / math.sqrt(self.head_dim) if need_weights else 1.0 / self.head_dim


@components.register("attention", "kit-unsaved-temperature")
class UnsavedTemperature(Reference):
    """A learned temperature that its own _save_to_state_dict leaves out of the checkpoint."""

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self.temperature = nn.Parameter(torch.ones(()))

    def scale(self, need_weights: bool) -> Tensor:
        return self.temperature / math.sqrt(self.head_dim)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination.pop(prefix + "temperature")


# Each plugin above and the one check that catches it (the contract names of conformance.py).
@components.register("attention", "kit-writes-input")
class WritesInput(Reference):
    """Clamps its input in place: no value changes here, yet the caller's tensor is written."""

    def forward(self, x, keep, pos, **kw):
        x.clamp_(-1e4, 1e4)
        return super().forward(x, keep, pos, **kw)


@components.register("attention", "kit-batch-scaled")
class BatchScaled(Reference):
    """Scales its output by the batch size over 3: right at the kit's usual batch of 3 only."""

    def forward(self, x, keep, pos, **kw):
        y, probs = super().forward(x, keep, pos, **kw)
        return y * (x.shape[0] / 3), probs


@components.register("attention", "kit-hash-scaled")
class HashScaled(Reference):
    """Scales its output by a factor from Python's hash() of a string: one value in every check
    of a process, another in the next process (PYTHONHASHSEED is random per process)."""

    def forward(self, x, keep, pos, **kw):
        y, probs = super().forward(x, keep, pos, **kw)
        return y * (1 + hash("kit") % 1_000_003 / 1e6), probs


CAUGHT_BY = {
    "kit-hash-scaled": "process independence",
    "kit-writes-input": "inputs unchanged",
    "kit-batch-scaled": "batch independence",
    "kit-needs-width": "builds",
    "kit-head-averaged": "shapes",
    "kit-torch-dropout": "keyed randomness, stack independence",
    "kit-leaks-padding": "padding",
    "kit-own-positions": "permutation",
    "kit-talking-heads": "probabilities",
    "kit-ignores-rope": "positional encodings",
    "kit-ignores-alibi": "positional encodings",
    "kit-ignores-head-mask": "head mask",
    "kit-masks-queries": "head mask",
    "kit-ignores-kv-heads": "grouped-query attention",
    "kit-fast-path-scale": "fused vs explicit",
    "kit-unsaved-temperature": "state dict",
}
