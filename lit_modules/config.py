"""Configuration dataclasses shared by the model, the data and the trainer.

Configs are data: frozen, keyword-only dataclasses validated in
``__post_init__``. A switch is a ``Literal`` field; its valid values are read
from the annotation, so the error message and the README cannot drift from
the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ablate.errors import require, validate_fields

PE = Literal["none", "sinusoidal", "learned", "rope", "alibi"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelConfig:
    """The encoder classifier. ``vocab_size`` and ``n_classes`` come from the data."""

    SECTION = "model"

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 128
    dropout: float = 0.1
    attn_dropout: float = 0.0
    pe: PE = "sinusoidal"
    norm: Literal["pre", "post"] = "pre"
    pool: Literal["cls", "mean"] = "cls"
    attn_impl: Literal["sdpa", "eager"] = "sdpa"
    activation: Literal["gelu", "relu"] = "gelu"
    # Rows of the learned PE table ([CLS] included); longer inputs are an error
    # with pe=learned. Sinusoidal, RoPE and ALiBi compute any position.
    max_len: int = 256
    # Multiply token embeddings by sqrt(d_model) (Vaswani et al. 2017, 3.4).
    scale_embeddings: bool = True
    init_std: float = 0.02

    def __post_init__(self) -> None:
        validate_fields(self)
        for name in ("d_model", "n_layers", "n_heads", "d_ff", "max_len"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")
        require(
            self.d_model % self.n_heads == 0,
            f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}; "
            f"valid n_heads: {[h for h in range(1, self.d_model + 1) if self.d_model % h == 0]}",
        )
        require(
            self.pe != "rope" or self.head_dim % 2 == 0,
            f"model.pe='rope' rotates pairs of dimensions and needs an even head_dim; "
            f"d_model/n_heads = {self.d_model}/{self.n_heads} = {self.head_dim}",
        )
        for name in ("dropout", "attn_dropout"):
            value = getattr(self, name)
            require(0.0 <= value < 1.0, f"model.{name} must be in [0, 1), got {value}")
        require(self.init_std > 0, f"model.init_std must be > 0, got {self.init_std}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True, kw_only=True, slots=True)
class OptimConfig:
    """AdamW with linear warmup then cosine decay to ``min_lr_ratio * lr``."""

    SECTION = "optim"

    lr: float = 2e-3
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    min_lr_ratio: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-8
    # Clip the global gradient norm; 0 turns clipping off.
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        validate_fields(self)
        require(self.lr > 0, f"optim.lr must be > 0, got {self.lr}")
        require(self.weight_decay >= 0, f"optim.weight_decay must be >= 0, got {self.weight_decay}")
        require(0 <= self.warmup_ratio < 1, f"optim.warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        require(0 <= self.min_lr_ratio <= 1, f"optim.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        require(0 <= self.beta1 < 1 and 0 <= self.beta2 < 1, "optim.beta1 and optim.beta2 must be in [0, 1)")
        require(self.grad_clip >= 0, f"optim.grad_clip must be >= 0, got {self.grad_clip}")
