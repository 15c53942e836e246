"""The encoder classifier: embed, [CLS], positional encoding, blocks, pool, head.

Each kind's component comes from its registry (lit_modules/model/registry.py): the blocks
(``model.block``: blocks.py; ``pre`` and ``post`` reproduce ``torch.nn.TransformerEncoderLayer``
with norm_first=True/False given the same weights, tests/unit/lit_modules/model/test_model.py),
their attention, ffn and norms, the positional encoding and the pooling (pooling.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from ablate.lit_modules.model.dropout import KeyedDropout, number_sites
from ablate.lit_modules.model.registry import get

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig

PAD_ID = 0


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
        # [CLS] (Devlin et al. 2019) at position 0, for a pooling that reads it.
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_model)) if cfg.cls_token else None
        self.pe = get("positional", cfg.pe)(cfg)
        self.dropout = KeyedDropout(cfg.dropout)
        block = get("block", cfg.block)
        self.blocks = nn.ModuleList(block(cfg) for _ in range(cfg.n_layers))
        # Pre-LN leaves the residual stream un-normalised; a final norm closes it.
        self.norm = get("norm", cfg.norm_layer)(cfg) if block.final_norm else nn.Identity()
        self.head = nn.Linear(cfg.d_model, n_classes)
        # Registered after the head, so that a pooling's parameters leave the others' init as it was.
        self.pool = get("pooling", cfg.pool)(cfg)
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
        pooled = self.pool(x, keep)  # (B, D)
        return EncoderOutput(self.head(pooled), tuple(attentions) if return_attention else None)
