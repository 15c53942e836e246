"""Self-attention: the ``attention`` registry's contract and the built-in ``mha``.

The contract (``Attention``): ``__init__(cfg)``; ``forward(x, keep, pos, *, need_weights,
head_mask, key)`` with x (B, L, D), keep (B, L) bool (True = real token; padded keys must get no
weight), ``pos`` the positional encoding (``pos.rotate(q, k)``, ``pos.bias(L, device, dtype)``),
head_mask (H,) or None (scale each query head's output), ``key`` the dropout key (all randomness
through ``KeyedDropout``); returns the output (B, L, D) and, with ``need_weights``, the
probabilities (B, H, L, L) per query head, else None. Optional: ``check(cfg)``, and
``for_stack(cfg)``: the config it needs inside a vmapped seed-parallel stack.

``mha``: multi-head attention (Vaswani et al. 2017, 3.2.2) with ``model.n_kv_heads`` key-value
heads shared by groups of query heads (multi-query attention, Shazeer 2019; grouped-query
attention, Ainslie et al. 2023), and two paths:

- fused: ``F.scaled_dot_product_attention`` (Flash / memory-efficient kernels), for training;
- explicit: softmax(Q K^T / sqrt(Dh) + bias + mask) V, which also returns the per-head
  probabilities (heatmaps, probes). Both paths compute the same function.

Positional encodings enter only through ``pos.rotate`` (RoPE) and ``pos.bias`` (ALiBi).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Protocol

import torch.nn.functional as F
from torch import Tensor, nn

from ablate.errors import require
from ablate.lit_modules.model.dropout import KeyedDropout
from ablate.lit_modules.model.kinds import register
from ablate.lit_modules.model.positional import PositionalEncoding

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig


class Attention(Protocol):
    def __call__(
        self,
        x: Tensor,
        keep: Tensor,
        pos: PositionalEncoding,
        *,
        need_weights: bool = False,
        head_mask: Tensor | None = None,
        key: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]: ...


@register("attention", "mha")
class MultiHeadAttention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.kv_heads = cfg.kv_heads
        self.head_dim = cfg.head_dim
        self.scale = 1.0 / math.sqrt(cfg.head_dim)
        self.attn_dropout = KeyedDropout(cfg.attn_dropout)
        self.use_sdpa = cfg.attn_impl == "sdpa"
        # Packed q, k, v projections in that order, like torch's in_proj_weight; k and v have
        # kv_heads heads each (n_heads: the (D, 3D) projection of standard multi-head attention).
        self.qkv = nn.Linear(cfg.d_model, cfg.d_model + 2 * self.kv_heads * cfg.head_dim)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    @classmethod
    def check(cls, cfg: ModelConfig) -> None:
        require(
            cfg.n_heads % cfg.kv_heads == 0,
            f"model.n_kv_heads={cfg.n_kv_heads} must divide model.n_heads={cfg.n_heads} (each key-value "
            f"head serves a group of query heads); valid: {[h for h in range(1, cfg.n_heads + 1) if cfg.n_heads % h == 0]}",
        )

    @classmethod
    def for_stack(cls, cfg: ModelConfig) -> ModelConfig:
        """The explicit path in a seed-parallel stack: the fused CPU kernel has no vmap batching
        rule (vmap would loop over the members); both paths compute the same function."""
        return dataclasses.replace(cfg, attn_impl="eager")

    def forward(
        self,
        x: Tensor,
        keep: Tensor,
        pos: PositionalEncoding,
        *,
        need_weights: bool = False,
        head_mask: Tensor | None = None,
        key: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x: (B, L, D); keep: (B, L) bool, True = real token; head_mask: (H,) float;
        key: the dropout key (lit_modules/model/dropout.py).

        Returns the output (B, L, D) and, with ``need_weights``, the probabilities (B, H, L, L).
        """
        B, L, D = x.shape
        H, Hkv, Dh = self.n_heads, self.kv_heads, self.head_dim
        # (B, L, D + 2 Hkv Dh) -> (B, H + 2 Hkv, L, Dh): q heads, then k heads, then v heads
        # (for Hkv = H the same views, strides and offsets as (B, L, 3, H, Dh).permute(2, 0, 3, 1, 4))
        heads = self.qkv(x).view(B, L, H + 2 * Hkv, Dh).transpose(1, 2)
        q, k, v = heads[:, :H], heads[:, H : H + Hkv], heads[:, H + Hkv :]
        if Hkv != H:  # each key-value head serves H / Hkv consecutive query heads
            k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
        q, k = pos.rotate(q, k)  # (B, H, L, Dh) each

        # Mask keys only. A row with no real key (an all-pad example) keeps all its keys:
        # its output is meaningless but finite, instead of softmax(-inf, ...) = NaN.
        keep = keep.bool()
        keep = keep | ~keep.any(dim=1, keepdim=True)  # (B, L)
        key_keep = keep[:, None, None, :]  # (B, 1, 1, L): broadcast over heads and queries
        bias = pos.bias(L, x.device, q.dtype)  # (H, L, L) or None
        # The fused kernels draw dropout from torch's global generator: with a dropout key
        # (training with attention dropout) the explicit path applies the keyed mask instead.
        keyed_dropout = self.training and self.attn_dropout.p > 0 and key is not None
        probs: Tensor | None = None
        if self.use_sdpa and not need_weights and not keyed_dropout:
            dropout_p = self.attn_dropout.p if self.training else 0.0
            # bool (B, 1, 1, L), True = may attend; with ALiBi one float mask (B, H, L, L) holds both.
            mask = key_keep if bias is None else bias[None].masked_fill(~key_keep, float("-inf"))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        else:
            scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, L, L)
            if bias is not None:
                scores = scores + bias
            scores = scores.masked_fill(~key_keep, float("-inf"))
            probs = scores.softmax(dim=-1)  # (B, H, L, L), rows sum to 1, 0 on padded keys
            y = self.attn_dropout(probs, key) @ v  # (B, H, L, Dh)

        if head_mask is not None:
            # Michel et al. 2019: scale (e.g. zero) each head's output before the projection.
            y = y * head_mask.to(y.dtype).view(1, H, 1, 1)
        y = y.transpose(1, 2).reshape(B, L, D)  # (B, H, L, Dh) -> (B, L, H, Dh) -> (B, L, D)
        return self.out(y), (probs if need_weights else None)
