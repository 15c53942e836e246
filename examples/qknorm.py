"""QK-norm attention (Henry et al. 2020, "Query-Key Normalization for Transformers"; per-head RMSNorm
as in Dehghani et al. 2023, ViT-22B, and OLMo 2): an attention component of your own.

    q, k <- RMSNorm(q), RMSNorm(k)            each head, over its Dh dimensions, a learned gain
    y = softmax(q k^T / sqrt(Dh) + bias + mask) v

Normalising queries and keys bounds the attention logits, the growth that destabilises training
at high learning rates (ViT-22B). Everything else is what the built-in ``mha`` does, and what
every attention owes a study: grouped key-value heads (``model.n_kv_heads``), RoPE through
``pos.rotate`` (after the norm: a rotation keeps it), ALiBi through ``pos.bias``, no weight on
padded keys, ``head_mask`` on each head's output, and dropout only through ``KeyedDropout``. One
path, the explicit one: ``model.attn_impl`` changes nothing here.

Registered as the attention ``qknorm``; examples/qknorm.yaml measures it against mha, and
``ablate check-component attention qknorm --plugins examples/qknorm.py`` checks it.
"""

from __future__ import annotations

import math

from torch import Tensor, nn

from ablate import components
from ablate.errors import ConfigError


@components.register("attention", "qknorm")
class QKNormAttention(nn.Module):
    Options = components.KVHeadsOptions  # model.attention_options.n_kv_heads, as mha's

    def __init__(self, cfg) -> None:  # cfg: the resolved ModelConfig
        super().__init__()
        self.n_heads, self.kv_heads, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        # Packed projections as mha's: H query heads, then kv_heads key and kv_heads value heads.
        self.qkv = nn.Linear(cfg.d_model, cfg.d_model + 2 * self.kv_heads * cfg.head_dim)
        self.q_norm = nn.RMSNorm(cfg.head_dim, eps=1e-5)  # one gain per head dimension
        self.k_norm = nn.RMSNorm(cfg.head_dim, eps=1e-5)
        self.dropout = components.KeyedDropout(cfg.attn_dropout)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    @classmethod
    def check(cls, cfg) -> None:
        if cfg.n_heads % cfg.kv_heads:
            raise ConfigError(
                f"model.attention_options.n_kv_heads={cfg.n_kv_heads} must divide model.n_heads={cfg.n_heads}"
            )

    def forward(
        self,
        x: Tensor,
        keep: Tensor,
        pos: components.PositionalEncoding,
        *,
        need_weights: bool = False,
        head_mask: Tensor | None = None,
        key: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, L, D), keep (B, L) bool -> (B, L, D) and, with need_weights, (B, H, L, L)."""
        B, L, D = x.shape
        H, G, Dh = self.n_heads, self.kv_heads, self.head_dim
        heads = self.qkv(x).view(B, L, H + 2 * G, Dh).transpose(1, 2)  # (B, H + 2G, L, Dh)
        q, k, v = heads[:, :H], heads[:, H : H + G], heads[:, H + G :]
        q, k = self.q_norm(q), self.k_norm(k)
        if G != H:  # each key-value head serves H / G consecutive query heads
            k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        q, k = pos.rotate(q, k)  # (B, H, L, Dh) each; a no-op unless pe: rope
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(Dh)  # (B, H, L, L)
        bias = pos.bias(L, x.device, scores.dtype)  # (H, L, L) or None; ALiBi
        if bias is not None:
            scores = scores + bias
        # Padded keys get no weight; an example with no real key keeps all (finite, never pooled).
        keep = keep | ~keep.any(dim=1, keepdim=True)
        probs = scores.masked_fill(~keep[:, None, None, :], float("-inf")).softmax(dim=-1)
        y = self.dropout(probs, key) @ v  # (B, H, L, Dh)
        if head_mask is not None:  # (H,): scale each head's output (Michel et al. 2019)
            y = y * head_mask.to(y.dtype).view(1, H, 1, 1)
        y = y.transpose(1, 2).reshape(B, L, D)
        return self.out(y), (probs if need_weights else None)
