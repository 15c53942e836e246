"""The encoder classifier: embed, [CLS], positional encoding, blocks, pool, head.

``EncoderBlock`` reproduces ``torch.nn.TransformerEncoderLayer`` (norm_first=False/True)
given the same weights; ``tests/unit/lit_modules/model/test_model.py`` proves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from ablate.lit_modules.model.dropout import KeyedDropout, number_sites
from ablate.lit_modules.model.positional import PositionalEncoding
from ablate.lit_modules.model.registry import get

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig

PAD_ID = 0


class EncoderBlock(nn.Module):
    """Post-LN (Vaswani et al. 2017) or Pre-LN (Xiong et al. 2020) residual block, of the
    attention, norm and ffn components the config names (lit_modules/model/registry.py)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.attn = get("attention", cfg.attention)(cfg)
        self.ffn = get("ffn", cfg.ffn)(cfg)
        self.norm1 = get("norm", cfg.norm_layer)(cfg)
        self.norm2 = get("norm", cfg.norm_layer)(cfg)
        # Residual dropout, one site each: the two sublayers get independent masks.
        self.drop_attn = KeyedDropout(cfg.dropout)
        self.drop_ffn = KeyedDropout(cfg.dropout)

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
        """x: (B, L, D), keep: (B, L) bool -> (B, L, D) and probabilities (B, H, L, L) or None."""
        kw = {"need_weights": need_weights, "head_mask": head_mask, "key": key}
        if self.pre_norm:
            a, probs = self.attn(self.norm1(x), keep, pos, **kw)
            x = x + self.drop_attn(a, key)
            x = x + self.drop_ffn(self.ffn(self.norm2(x), key), key)
        else:
            a, probs = self.attn(x, keep, pos, **kw)
            x = self.norm1(x + self.drop_attn(a, key))
            x = self.norm2(x + self.drop_ffn(self.ffn(x, key), key))
        return x, probs


@dataclass
class EncoderOutput:
    logits: Tensor  # (B, C)
    attentions: tuple[Tensor, ...] | None = None  # per layer (B, H, L', L'); L' includes [CLS]


class EncoderClassifier(nn.Module):
    def __init__(self, cfg: ModelConfig, vocab_size: int, n_classes: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed_scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
        self.embed_rms = cfg.embed_rms  # the positional scale rule uses it
        self.embed = nn.Embedding(vocab_size, cfg.d_model, padding_idx=PAD_ID)
        # [CLS] (Devlin et al. 2019) at position 0; mean pooling has none.
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_model)) if cfg.pool == "cls" else None
        self.pe = get("positional", cfg.pe)(cfg)
        self.dropout = KeyedDropout(cfg.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))
        # Pre-LN leaves the residual stream un-normalised; a final norm closes it.
        self.norm = get("norm", cfg.norm_layer)(cfg) if cfg.norm == "pre" else nn.Identity()
        self.head = nn.Linear(cfg.d_model, n_classes)
        self._init_weights()
        number_sites(self)

    def _init_weights(self) -> None:
        std = self.cfg.init_std
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, std)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, 0.0, std)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.RMSNorm):
                nn.init.ones_(m.weight)
        with torch.no_grad():
            self.embed.weight[PAD_ID].zero_()  # keep nn.Embedding's padding_idx convention
        if self.cls is not None:
            # Parametrized like a token embedding (and the learned PE table): stored at
            # init_std, scaled by embed_scale in forward, so it learns at the tokens' rate.
            nn.init.normal_(self.cls, 0.0, std)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        *,
        return_attention: bool = False,
        head_mask: Tensor | None = None,
        key: Tensor | None = None,
    ) -> EncoderOutput:
        """input_ids: (B, L) long; attention_mask: (B, L) bool, True = real token;
        head_mask: (n_layers, n_heads) float; key: int64 (2,) = (seed, step), the dropout key
        (lit_modules/model/dropout.py). Returns logits (B, C) and, optionally, attentions."""
        keep = attention_mask.bool()  # (B, L)
        x = self.embed(input_ids) * self.embed_scale  # (B, L, D)
        if self.cls is not None:
            B = x.shape[0]
            cls = (self.cls * self.embed_scale).expand(B, -1, -1).to(x.dtype)  # (B, 1, D)
            x = torch.cat([cls, x], dim=1)  # (B, 1 + L, D)
            keep = torch.cat([keep.new_ones(B, 1), keep], dim=1)  # (B, 1 + L)
        x = self.dropout(self.pe.add(x), key)

        attentions: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            layer_mask = head_mask[i] if head_mask is not None else None
            x, probs = block(x, keep, self.pe, need_weights=return_attention, head_mask=layer_mask, key=key)
            if probs is not None:
                attentions.append(probs)
        x = self.norm(x)  # (B, L', D)

        if self.cls is not None:
            pooled = x[:, 0]  # (B, D)
        else:
            # Mean over real tokens only; an all-pad example divides by 1, not 0.
            w = keep.to(x.dtype).unsqueeze(-1)  # (B, L, 1)
            pooled = (x * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)
        return EncoderOutput(self.head(pooled), tuple(attentions) if return_attention else None)
