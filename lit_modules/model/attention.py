"""Self-attention: the ``attention`` registry's contract and the built-in ``mha``.

The contract is ``Attention``'s docstring (``components.Attention``): ``__init__(cfg)``;
``forward(x, keep, pos, *, need_weights, head_mask, key)`` -> the output (B, L, D) and, with
``need_weights``, the probabilities (B, H, L, L) per query head, else None; the shapes and dtypes,
what ``pos`` offers and when to call it, ``head_mask``, grouped-query attention, the randomness.

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

from ablate.errors import Range, require
from ablate.lit_modules.model.dropout import KeyedDropout
from ablate.lit_modules.model.kinds import option, options, register
from ablate.lit_modules.model.positional import PositionalEncoding

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig


class Attention(Protocol):
    """The ``attention`` contract: what the encoder calls, and what a study reads back.

    ``__init__(cfg)``: the resolved ``ModelConfig``: ``d_model`` (D), ``n_heads`` (H),
    ``head_dim`` (Dh = D / H), ``kv_heads`` (``n_kv_heads``, or H when null), ``attn_dropout``,
    ``attn_impl``. Torch's generator is seeded before: draw the init from it, and keep no state
    outside parameters and deterministic buffers (a seed-parallel stack shares member 0's
    buffers). The encoder re-initialises every ``nn.Linear`` (N(0, init_std), bias 0) and
    ``nn.Embedding``, and sets ``nn.LayerNorm`` / ``nn.RMSNorm`` gains to 1.

    ``forward(x, keep, pos, *, need_weights=False, head_mask=None, key=None)``, every call:

    - ``x``: (B, L, D) float, the block's input (normalized first with Pre-LN); L counts [CLS];
    - ``keep``: (B, L) bool, True = real token, False = padding (always on the right). Padded
      keys get no weight and add nothing to any real position; a padded query's row may hold
      anything finite; an example with no real key must stay finite (``mha`` lets it attend to
      every key);
    - ``pos``: the ``PositionalEncoding`` of the config. Call both of its attention hooks on
      every forward, whichever encoding is active (each is a no-op unless it acts inside
      attention): ``q, k = pos.rotate(q, k)`` on the projected queries and keys, (B, H, L, Dh)
      each, keys already expanded to the H query heads (RoPE); and
      ``bias = pos.bias(L, x.device, scores.dtype)``, (H, L, L) or None, added to the scores
      (B, H, L, L) before the key mask and the softmax (ALiBi). Never ``pos.add``: the encoder
      did that;
    - ``need_weights``: return the probabilities too;
    - ``head_mask``: (H,) float or None: multiply query head h's output (B, H, L, Dh, before the
      output projection) by ``head_mask[h]``: ones change nothing, 0 removes exactly head h
      (Michel et al. 2019; the report's head importance);
    - ``key``: the dropout key. Every random draw is a ``KeyedDropout(p)`` called with it (none in
      eval mode); ``torch.rand*``, ``nn.Dropout`` and ``F.dropout`` fail in a seed-parallel stack.

    Returns ``(y, probs)``: y (B, L, D) in x's dtype; with ``need_weights`` the probabilities
    (B, H, L, L) per query head (heatmaps, entropy, probes read them): finite, >= 0, each row
    summing to 1 over the keys, 0 on padded keys; else None. y is one function on every path:
    with and without ``need_weights``, with ``attn_impl`` sdpa and eager.

    Grouped-query attention (Ainslie et al. 2023): ``n_kv_heads`` < H, a divisor of H, asks for
    ``cfg.kv_heads`` key-value heads, each serving H / kv_heads consecutive query heads
    (``mha`` repeats them with ``repeat_interleave``); probabilities stay per query head. An
    attention that does not share key-value heads refuses the field in ``check(cfg)``.

    Optional, on the class: ``check(cfg)`` (classmethod: raise ``ConfigError`` for a config it
    cannot serve), ``OPTIONS`` (the config fields only it reads), ``for_stack(cfg)`` (classmethod:
    the config it needs inside a vmapped seed-parallel stack; ``mha``: the explicit path).
    ``ablate check-component attention NAME`` checks every point above.
    """

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


# Grouped-query attention: Shazeer 2019 (multi-query); Ainslie et al. 2023 (GQA).
@options
class KVHeadsOptions:
    """The option of an attention with grouped key-value heads (``mha``'s; a plugin that shares
    key-value heads declares ``Options = components.KVHeadsOptions`` and reads ``cfg.kv_heads``)."""

    n_kv_heads: int | None = option(
        None,
        "key-value heads (grouped-query attention); null: one per query head; 1: multi-query; "
        "must divide n_heads (`model.n_kv_heads` is its older name)",
        Range(1, 1024),
    )


@register("attention", "mha")
class MultiHeadAttention(nn.Module):
    Options = KVHeadsOptions

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
            f"model.attention_options.n_kv_heads={cfg.n_kv_heads} must divide model.n_heads={cfg.n_heads} (each key-value "
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
