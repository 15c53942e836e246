"""Configuration dataclasses shared by the model, the data and the trainer.

Configs are data: frozen, keyword-only dataclasses validated in
``__post_init__``. A switch is a ``Literal`` field; its valid values are read
from the annotation, so the error message and the README cannot drift from
the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ablate.errors import Range, require, validate_fields

PE = Literal["none", "sinusoidal", "learned", "rope", "alibi"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelConfig:
    """The encoder classifier. ``vocab_size`` and ``n_classes`` come from the data."""

    SECTION = "model"
    RANGES = {
        "d_model": Range(1, 8192),
        "n_layers": Range(1, 256),
        "n_heads": Range(1, 1024),
        "d_ff": Range(1, 65536),
        "dropout": Range(0, 1, hi_open=True),
        "attn_dropout": Range(0, 1, hi_open=True),
        "max_len": Range(1, 65536),
        "init_std": Range(0, 10, lo_open=True),
    }
    # One line per field: what it means to a user (docs/pages/reference/config.md shows it).
    DOCS = {
        "d_model": "model width",
        "n_layers": "encoder blocks",
        "n_heads": "attention heads; must divide d_model (head_dim = d_model / n_heads)",
        "d_ff": "FFN hidden width (d_model → d_ff → d_model)",
        "dropout": "residual, FFN and embedding dropout",
        "attn_dropout": "dropout on attention probabilities",
        "pe": "positional encoding",
        "alibi": "with `pe: alibi`: −m·|i−j| for every head, or even heads look left and odd heads right",
        "norm": "Pre-LN `x + f(LN(x))` with a final LayerNorm, or Post-LN `LN(x + f(x))`",
        "pool": "[CLS] token or masked mean over real tokens",
        "attn_impl": (
            "fused `scaled_dot_product_attention` or the explicit path (heatmaps always use the "
            "explicit path)"
        ),
        "activation": "FFN activation",
        "max_len": (
            "rows of the learned PE table ([CLS] included); longer inputs are an error with `pe: "
            "learned` (the other PEs compute any position)"
        ),
        "scale_embeddings": "multiply token embeddings by √d_model (Vaswani et al. 2017, 3.4)",
        "init_std": "std of linear and embedding weights",
    }

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 128
    dropout: float = 0.1
    attn_dropout: float = 0.0
    pe: PE = "sinusoidal"
    # pe=alibi only. symmetric: bias -m|i-j| (cannot tell left from right); directional: even
    # heads see only keys at or left of the query, odd heads only at or right (positional.py).
    alibi: Literal["symmetric", "directional"] = "symmetric"
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
        require(
            self.alibi == "symmetric" or self.pe == "alibi",
            f"model.alibi={self.alibi!r} applies to model.pe='alibi' only (model.pe={self.pe!r})",
        )
        require(
            self.alibi == "symmetric" or self.n_heads >= 2,
            "model.alibi='directional' splits the heads into left- and right-looking ones; "
            "it needs model.n_heads >= 2",
        )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True, kw_only=True, slots=True)
class OptimConfig:
    """AdamW with linear warmup then cosine decay to ``min_lr_ratio * lr``."""

    SECTION = "optim"
    RANGES = {
        "lr": Range(0, 1, lo_open=True),
        "weight_decay": Range(0, 10),
        "warmup_ratio": Range(0, 1, hi_open=True),
        "min_lr_ratio": Range(0, 1),
        "beta1": Range(0, 1, hi_open=True),
        "beta2": Range(0, 1, hi_open=True),
        "eps": Range(0, 1, lo_open=True),
        "grad_clip": Range(0, 1e6),
    }
    # One line per field: what it means to a user (docs/pages/reference/config.md shows it).
    DOCS = {
        "lr": "peak learning rate (AdamW)",
        "weight_decay": "decay of linear weights (embeddings, PE, biases, LayerNorm: none)",
        "warmup_ratio": "share of max_steps for linear warmup (0 allowed), then cosine decay",
        "min_lr_ratio": "cosine floor as a share of lr",
        "beta1": "AdamW β₁",
        "beta2": "AdamW β₂",
        "eps": "AdamW ε",
        "grad_clip": "clip the global gradient norm; 0 turns clipping off",
    }

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
