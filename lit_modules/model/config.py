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
from typing import Any, Literal

from ablate.errors import Range, documented, require, setting, validate_fields
from ablate.lit_modules.model.registry import check_config


@documented
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelConfig:
    """The encoder classifier. ``vocab_size`` and ``n_classes`` come from the data."""

    SECTION = "model"
    # Older names of keys, still accepted in configs, specs and overrides (experiments/schema/config.py).
    ALIASES = {"norm": "block", "alibi": "pe_options.form", "n_kv_heads": "attention_options.n_kv_heads"}
    # An older key moved into a component's options, at the value it had before the option
    # existed: a config that gives it there means nothing (a study recorded alibi: symmetric always).
    ALIAS_DEFAULTS = {"alibi": "symmetric", "n_kv_heads": None}

    # Each field: default, its meaning to a user (docs/pages/reference/config.md), valid range.
    d_model: int = setting(64, "model width", Range(1, 8192))
    n_layers: int = setting(2, "encoder blocks", Range(1, 256))
    n_heads: int = setting(
        4, "attention heads; must divide d_model (head_dim = d_model / n_heads)", Range(1, 1024)
    )
    d_ff: int = setting(128, "FFN hidden width (d_model → d_ff → d_model)", Range(1, 65536))
    dropout: float = setting(0.1, "residual, FFN and embedding dropout", Range(0, 1, hi_open=True))
    attn_dropout: float = setting(0.0, "dropout on attention probabilities", Range(0, 1, hi_open=True))
    pe: str = setting(
        "sinusoidal",
        "positional encoding: a registered positional component (built in: `none`, `sinusoidal`, "
        "`learned`, `rope`, `alibi`)",
    )
    block: str = setting(
        "pre",
        "the residual arrangement of each layer: a registered block component (built in: `pre`, "
        "Pre-LN `x + f(LN(x))` with a final norm; `post`, Post-LN `LN(x + f(x))`; `sandwich`; "
        "`parallel` attention + FFN; `rezero`); `model.norm` is its older name, still accepted",
    )
    pool: str = setting(
        "cls",
        "pooling: a registered pooling component (built in: `cls` token, masked `mean`, masked "
        "`max`, learned `attention` pooling)",
    )
    attn_impl: Literal["sdpa", "eager"] = setting(
        "sdpa",
        "fused `scaled_dot_product_attention` or the explicit path (heatmaps always use the explicit path)",
    )
    activation: Literal["gelu", "relu", "silu"] = setting(
        "gelu", "FFN nonlinearity; with `ffn: glu`, `silu` is SwiGLU and `gelu` GEGLU"
    )
    max_len: int = setting(
        256,
        "rows of the learned PE table ([CLS] included); longer inputs are an error with `pe: "
        "learned` (the other PEs compute any position)",
        Range(1, 65536),
    )
    scale_embeddings: bool = setting(True, "multiply token embeddings by √d_model (Vaswani et al. 2017, 3.4)")
    init_std: float = setting(0.02, "std of linear and embedding weights", Range(0, 10, lo_open=True))
    attention: str = setting(
        "mha",
        "self-attention: a registered attention component (built in: `mha`, multi-head "
        "with grouped key-value heads)",
    )
    norm_layer: str = setting(
        "layernorm",
        "the normalization layer (`model.block` places it): a registered norm component "
        "(built in: `layernorm`, `rmsnorm`)",
    )
    ffn: str = setting(
        "mlp",
        "feed-forward block: a registered ffn component (built in: `mlp`, `glu` at the `mlp`'s "
        "parameter count)",
    )
    # Each component's own options (kinds.options): model.<key>_options, checked and filled in with
    # the defaults of the component the config names (registry.resolve_options).
    pe_options: dict = setting(
        doc="options of the `pe` component (e.g. `rope`: `base`; `alibi`: `form`)", factory=dict
    )
    attention_options: dict = setting(
        doc="options of the `attention` component (`mha`: `n_kv_heads`, grouped-query attention)",
        factory=dict,
    )
    norm_layer_options: dict = setting(doc="options of the `norm_layer` component", factory=dict)
    ffn_options: dict = setting(doc="options of the `ffn` component", factory=dict)
    block_options: dict = setting(doc="options of the `block` component", factory=dict)
    pool_options: dict = setting(doc="options of the `pool` component", factory=dict)

    def __post_init__(self) -> None:
        validate_fields(self)
        require(
            self.d_model % self.n_heads == 0,
            f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}; "
            f"valid n_heads: {[h for h in range(1, self.d_model + 1) if self.d_model % h == 0]}",
        )
        check_config(self)  # the components' own rules (lit_modules/model/registry.py)

    @property
    def cls_token(self) -> bool:
        """Whether the encoder prepends a [CLS] token: its pooling reads one (``uses_cls``)."""
        from ablate.lit_modules.model.registry import get

        return bool(getattr(get("pooling", self.pool), "uses_cls", False))

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def options(self, kind: str) -> Any:
        """The options of this config's ``kind`` component: its ``Options``, as this config sets them."""
        from ablate.lit_modules.model.kinds import CONFIG_KEYS, OPTIONS_KEYS
        from ablate.lit_modules.model.registry import get

        options = get(kind, getattr(self, CONFIG_KEYS[kind])).Options
        return options(**getattr(self, OPTIONS_KEYS[kind]))

    @property
    def n_kv_heads(self) -> int | None:
        """``attention_options.n_kv_heads`` (null where the attention has no such option)."""
        return self.attention_options.get("n_kv_heads")

    @property
    def kv_heads(self) -> int:
        """Key-value heads: ``n_kv_heads``, or one per query head."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def embed_rms(self) -> float:
        """Per-element RMS of the (scaled) token embedding at init; the positional scale rule uses it."""
        return self.init_std * (math.sqrt(self.d_model) if self.scale_embeddings else 1.0)


@documented
@dataclass(frozen=True, kw_only=True, slots=True)
class OptimConfig:
    """AdamW with linear warmup then cosine decay to ``min_lr_ratio * lr``."""

    SECTION = "optim"

    lr: float = setting(2e-3, "peak learning rate (AdamW)", Range(0, 1, lo_open=True))
    weight_decay: float = setting(
        0.01, "decay of linear weights (embeddings, PE, biases, LayerNorm: none)", Range(0, 10)
    )
    warmup_ratio: float = setting(
        0.1,
        "share of max_steps for linear warmup (0 allowed), then cosine decay",
        Range(0, 1, hi_open=True),
    )
    min_lr_ratio: float = setting(0.0, "cosine floor as a share of lr", Range(0, 1))
    beta1: float = setting(0.9, "AdamW β₁", Range(0, 1, hi_open=True))
    beta2: float = setting(0.98, "AdamW β₂", Range(0, 1, hi_open=True))
    eps: float = setting(1e-8, "AdamW ε", Range(0, 1, lo_open=True))
    grad_clip: float = setting(1.0, "clip the global gradient norm; 0 turns clipping off", Range(0, 1e6))

    def __post_init__(self) -> None:
        validate_fields(self)
