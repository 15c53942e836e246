"""``encoder_vs_torch``: our ``EncoderClassifier`` against one built on ``nn.TransformerEncoder``.

Both share everything but the blocks: scaled embedding, [CLS] (or mean pooling), the sinusoidal
table, embedding dropout, the final LayerNorm (Pre-LN) and the linear head. Training steps/s:
forward + backward + AdamW step on CPU, warmup steps excluded.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.benchmarks.timing import interleave, summarize
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import PAD_ID, EncoderClassifier

VOCAB, N_CLASSES = 20, 2


class TorchReferenceClassifier(nn.Module):
    """The same classifier with ``torch.nn.TransformerEncoder`` blocks (batch_first, norm_first matched)."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, n_classes: int) -> None:
        super().__init__()
        ours = EncoderClassifier(cfg, vocab_size, n_classes)  # borrow embedding, [CLS], PE, head
        self.cfg = cfg
        self.embed_scale = ours.embed_scale
        self.embed, self.cls, self.pe, self.head = ours.embed, ours.cls, ours.pe, ours.head
        self.dropout = nn.Dropout(cfg.dropout)
        layer = nn.TransformerEncoderLayer(
            cfg.d_model,
            cfg.n_heads,
            dim_feedforward=cfg.d_ff,
            dropout=cfg.dropout,
            activation=cfg.activation,
            batch_first=True,
            norm_first=cfg.block == "pre",
        )
        final_norm = nn.LayerNorm(cfg.d_model) if cfg.block == "pre" else None
        self.encoder = nn.TransformerEncoder(layer, cfg.n_layers, norm=final_norm, enable_nested_tensor=False)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        keep = attention_mask.bool()  # (B, L)
        x = self.embed(input_ids) * self.embed_scale  # (B, L, D)
        if self.cls is not None:
            B = x.shape[0]
            x = torch.cat([self.cls.expand(B, -1, -1), x], dim=1)  # (B, 1 + L, D)
            keep = torch.cat([keep.new_ones(B, 1), keep], dim=1)
        x = self.encoder(self.dropout(self.pe.add(x)), src_key_padding_mask=~keep)
        if self.cls is not None:
            pooled = x[:, 0]
        else:
            w = keep.to(x.dtype).unsqueeze(-1)  # (B, L, 1)
            pooled = (x * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)
        return self.head(pooled)  # (B, C)


def make_batches(n: int, batch: int, length: int, seed: int = 0) -> list[dict[str, Tensor]]:
    """Random tokens, right-padded to ``length`` with lengths in [3/4 length, length]."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(PAD_ID + 1, VOCAB, (batch, length), generator=g)
        lengths = torch.randint(3 * length // 4, length + 1, (batch,), generator=g)
        mask = torch.arange(length)[None, :] < lengths[:, None]  # (B, L)
        out.append(
            {
                "input_ids": ids.masked_fill(~mask, PAD_ID),
                "attention_mask": mask,
                "labels": torch.randint(0, N_CLASSES, (batch,), generator=g),
            }
        )
    return out


def _stepper(model: nn.Module, logits_of, batches: list[dict[str, Tensor]]):
    """One timed block of len(batches) training steps; returns steps/s."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()

    def step(b: dict[str, Tensor]) -> None:
        loss = F.cross_entropy(logits_of(model, b), b["labels"])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def block() -> float:
        t0 = time.perf_counter()
        for b in batches:
            step(b)
        return len(batches) / (time.perf_counter() - t0)

    return step, block


def encoder_vs_torch(*, steps: int, rounds: int, warmup: int, pool: str = "cls", norm: str = "pre") -> dict:
    """d_model 64, 4 heads, d_ff 128, 2 layers, dropout 0.1, batch 64, length 33 ([CLS] + 32)."""
    cfg = ModelConfig(d_model=64, n_heads=4, d_ff=128, n_layers=2, dropout=0.1, pool=pool, block=norm)
    length = 32 if pool == "cls" else 33  # tokens the blocks see: 33 either way
    batches = make_batches(steps, 64, length)
    torch.manual_seed(0)
    ours = EncoderClassifier(cfg, VOCAB, N_CLASSES)
    ref = TorchReferenceClassifier(cfg, VOCAB, N_CLASSES)
    step_a, block_a = _stepper(ours, lambda m, b: m(b["input_ids"], b["attention_mask"]).logits, batches)
    step_b, block_b = _stepper(ref, lambda m, b: m(b["input_ids"], b["attention_mask"]), batches)
    for b in batches[:warmup]:
        step_a(b)
        step_b(b)
    ra, rb = interleave(block_a, block_b, rounds)
    return {**summarize("ours_steps_s", ra, "torch_steps_s", rb), "steps_per_round": steps, "rounds": rounds}
