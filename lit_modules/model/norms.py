"""Normalization layers: the ``norm`` registry's contract and built-ins.

The contract (``Norm``): ``__init__(cfg)``; ``forward(x)`` maps (B, L, D) to (B, L, D), each
position on its own (padding must not reach a real position's output). ``model.norm`` places the
layer (Pre-LN or Post-LN, lit_modules/model/encoder.py); ``model.norm_layer`` names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from torch import Tensor, nn

from ablate.lit_modules.model.kinds import register

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig

EPS = 1e-5  # both built-ins; torch.nn.TransformerEncoderLayer's LayerNorm default


class Norm(Protocol):
    """The ``norm`` contract: ``__init__(cfg)`` (``cfg.d_model``); ``forward(x)``: x (B, L, D)
    float -> (B, L, D) in x's dtype, each position on its own: no statistic over L or B, so
    padding never reaches a real position. It gets no dropout key: no randomness. ``model.norm``
    places it (Pre-LN: before each sublayer and once at the end; Post-LN: after each residual
    sum); each site builds its own. The encoder sets ``nn.LayerNorm`` / ``nn.RMSNorm`` gains to 1
    and re-initialises ``nn.Linear``; other parameters keep the init you give them."""

    def __call__(self, x: Tensor) -> Tensor: ...


@register("norm", "layernorm")
class LayerNorm(nn.LayerNorm):
    """LayerNorm (Ba et al. 2016): centre and scale each position, then a gain and a bias."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg.d_model, eps=EPS)


@register("norm", "rmsnorm")
class RMSNorm(nn.RMSNorm):
    """RMSNorm (Zhang & Sennrich 2019): x / RMS(x) times a gain; no centring, no bias."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg.d_model, eps=EPS)
