"""What every check of the conformance kit shares: the tiny model, its batch, a check's result.

Odd sizes catch shape bugs (Hugging Face's tiny test models): batch 3, length 7, d_model 16,
4 heads of 4 dimensions, two blocks, dropout on. conformance.py runs the checks in order;
conformance_attention.py holds those only an attention has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import PAD_ID, EncoderClassifier

TINY = {
    "d_model": 16,
    "n_layers": 2,
    "n_heads": 4,
    "d_ff": 24,
    "dropout": 0.1,
    "attn_dropout": 0.1,
    "max_len": 32,
}
VOCAB, CLASSES, LENGTHS = 13, 3, (7, 5, 2)  # batch 3, one full row, two padded rows
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Result:
    contract: str
    ok: bool | None  # None: does not apply (with the reason in detail) or an information line
    detail: str = ""

    def line(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[self.ok]
        return f"{mark} {self.contract}" + (f": {self.detail}" if self.detail else "")


def tiny_config(kind: str, name: str, **over: object) -> ModelConfig:
    """The kit's model config with the component ``name`` as the ``kind``."""
    return ModelConfig(**{**TINY, registry.CONFIG_KEYS[kind]: name, **over})  # type: ignore[arg-type]


def batch(length: int = 7, lengths: tuple[int, ...] = LENGTHS) -> tuple[Tensor, Tensor]:
    """Fixed ids (3, length) padded on the right to the rows' ``lengths``, and their mask."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, VOCAB, (3, length), generator=g)
    mask = torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]
    return ids.masked_fill(~mask, PAD_ID), mask


def model(cfg: ModelConfig, seed: int = 0) -> EncoderClassifier:
    torch.manual_seed(seed)
    return EncoderClassifier(cfg, vocab_size=VOCAB, n_classes=CLASSES)


def diff(a: Tensor, b: Tensor) -> float:
    """max |a - b|; inf when the shapes differ or either holds a NaN (NaN compares as no difference)."""
    if a.shape != b.shape or bool(a.isnan().any() or b.isnan().any()):
        return math.inf
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def same(what: str, a: Tensor, b: Tensor, tol: float = TOLERANCE) -> Result:
    d = diff(a, b)
    return Result(what, d <= tol, f"max |Δ logits| {d:.2e}" + ("" if d <= tol else f" > {tol:g}"))
