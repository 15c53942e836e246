"""ScaleNorm (Nguyen & Salazar 2019, "Transformers without Tears"): a norm component of your own.

    y = g * x / max(||x||, eps)

one learned scalar gain g per layer (initialised to sqrt(d_model)) instead of LayerNorm's
per-feature gain and bias (2 d_model - 1 fewer parameters per norm) and no centring.
Registered as the norm ``scalenorm``, with an option of its own (``eps``, set as
``model.norm_layer_options.eps``); ``examples/scalenorm.yaml`` measures it against LayerNorm
and RMSNorm, ``ablate check-component norm scalenorm --plugins examples/scalenorm.py`` checks it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ablate import components


@components.register("norm", "scalenorm")
class ScaleNorm(nn.Module):
    # Options of its own, set as model.norm_layer_options.eps and swept like any key.
    @components.options
    class Options:
        eps: float = components.option(1e-5, "floor of the norm", components.Range(0, 1, lo_open=True))

    def __init__(self, cfg) -> None:  # cfg: the resolved ModelConfig
        super().__init__()
        self.eps = cfg.options("norm").eps
        self.gain = nn.Parameter(torch.tensor(math.sqrt(cfg.d_model)))

    def forward(self, x: Tensor) -> Tensor:
        """(B, L, D) -> (B, L, D): each position scaled to norm ``gain``."""
        return self.gain * x / x.norm(dim=-1, keepdim=True).clamp(min=self.eps)
