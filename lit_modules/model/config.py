"""Configuration dataclasses shared by the model, the data and the trainer.

Configs are data: frozen, keyword-only dataclasses validated in
``__post_init__``. A switch is a ``Literal`` field (its valid values are read
from the annotation), or, for a component a user may add (``pe``, ``attention``,
``norm_layer``, ``ffn``), a name in that kind's registry (lit_modules/model/registry.py),
whose components check the configurations they cannot serve themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ablate.errors import Range, require, validate_fields
from ablate.lit_modules.model.registry import check_config


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
        "n_kv_heads": Range(1, 1024),
    }
    # One line per field: what it means to a user (docs/pages/reference/config.md shows it).
    DOCS = {
        "d_model": "model width",
        "n_layers": "encoder blocks",
        "n_heads": "attention heads; must divide d_model (head_dim = d_model / n_heads)",
        "d_ff": "FFN hidden width (d_model → d_ff → d_model)",
        "dropout": "residual, FFN and embedding dropout",
        "attn_dropout": "dropout on attention probabilities",
        "pe": "positional encoding: a registered positional component (built in: `none`, `sinusoidal`, "
        "`learned`, `rope`, `alibi`)",
        "alibi": "with `pe: alibi`: −m·|i−j| for every head, or even heads look left and odd heads right",
        "norm": "Pre-LN `x + f(LN(x))` with a final LayerNorm, or Post-LN `LN(x + f(x))`",
        "pool": "[CLS] token or masked mean over real tokens",
        "attn_impl": (
            "fused `scaled_dot_product_attention` or the explicit path (heatmaps always use the "
            "explicit path)"
        ),
        "activation": "FFN nonlinearity; with `ffn: glu`, `silu` is SwiGLU and `gelu` GEGLU",
        "max_len": (
            "rows of the learned PE table ([CLS] included); longer inputs are an error with `pe: "
            "learned` (the other PEs compute any position)"
        ),
        "scale_embeddings": "multiply token embeddings by √d_model (Vaswani et al. 2017, 3.4)",
        "init_std": "std of linear and embedding weights",
        "attention": "self-attention: a registered attention component (built in: `mha`, multi-head "
        "with grouped key-value heads)",
        "norm_layer": "the normalization layer (`model.norm` places it): a registered norm component "
        "(built in: `layernorm`, `rmsnorm`)",
        "ffn": "feed-forward block: a registered ffn component (built in: `mlp`, `glu` at the `mlp`'s "
        "parameter count)",
        "n_kv_heads": "key-value heads of `attention: mha` (grouped-query attention); null: one per query "
        "head; 1: multi-query; must divide n_heads",
    }

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 128
    dropout: float = 0.1
    attn_dropout: float = 0.0
    # A registered positional component (lit_modules/model/positional.py has the built-ins).
    pe: str = "sinusoidal"
    # pe=alibi only. symmetric: bias -m|i-j| (cannot tell left from right); directional: even
    # heads see only keys at or left of the query, odd heads only at or right (positional.py).
    alibi: Literal["symmetric", "directional"] = "symmetric"
    norm: Literal["pre", "post"] = "pre"
    pool: Literal["cls", "mean"] = "cls"
    attn_impl: Literal["sdpa", "eager"] = "sdpa"
    activation: Literal["gelu", "relu", "silu"] = "gelu"
    # Rows of the learned PE table ([CLS] included); longer inputs are an error
    # with pe=learned. Sinusoidal, RoPE and ALiBi compute any position.
    max_len: int = 256
    # Multiply token embeddings by sqrt(d_model) (Vaswani et al. 2017, 3.4).
    scale_embeddings: bool = True
    init_std: float = 0.02
    # Registered attention, norm and ffn components (lit_modules/model/registry.py).
    attention: str = "mha"
    norm_layer: str = "layernorm"
    ffn: str = "mlp"
    # Key-value heads of the built-in attention (Shazeer 2019; Ainslie et al. 2023); None = n_heads.
    n_kv_heads: int | None = None

    def __post_init__(self) -> None:
        validate_fields(self)
        require(
            self.d_model % self.n_heads == 0,
            f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}; "
            f"valid n_heads: {[h for h in range(1, self.d_model + 1) if self.d_model % h == 0]}",
        )
        check_config(self)  # the components' own rules (lit_modules/model/registry.py)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def embed_rms(self) -> float:
        """Per-element RMS of the (scaled) token embedding at init; the positional scale rule uses it."""
        return self.init_std * (math.sqrt(self.d_model) if self.scale_embeddings else 1.0)


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
