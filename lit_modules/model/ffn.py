"""Feed-forward blocks: the ``ffn`` registry's contract and built-ins.

The contract (``FFN``): ``__init__(cfg)``; ``forward(x, key)`` maps (B, L, D) to (B, L, D) for
each position on its own; ``key`` is the dropout key (lit_modules/model/dropout.py): any dropout is a
``KeyedDropout`` called with it, so a seed-parallel member draws what its single run draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from torch import Tensor, nn

from ablate.lit_modules.model.dropout import KeyedDropout
from ablate.lit_modules.model.kinds import register

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig

# String-keyed activations, as in Hugging Face's ACT2FN. GELU is the exact (erf) form, like torch's.
ACTIVATIONS: dict[str, type[nn.Module]] = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}


class FFN(Protocol):
    """The ``ffn`` contract: ``__init__(cfg)`` (``d_model``, ``d_ff``, ``activation``, ``dropout``);
    ``forward(x, key=None)``: x (B, L, D) float -> (B, L, D), each position on its own (padding
    never reaches a real position). Any dropout is a ``KeyedDropout(p)`` called with ``key``: no
    other random draw. The encoder re-initialises every ``nn.Linear`` (N(0, init_std), bias 0)
    and AdamW decays their weights (and nothing else)."""

    def __call__(self, x: Tensor, key: Tensor | None = None) -> Tensor: ...


@register("ffn", "mlp")
class FeedForward(nn.Module):
    """Position-wise d_model -> d_ff -> d_model (Vaswani et al. 2017, 3.3)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.act = ACTIVATIONS[cfg.activation]()
        self.dropout = KeyedDropout(cfg.dropout)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model)

    def forward(self, x: Tensor, key: Tensor | None = None) -> Tensor:
        return self.fc2(self.dropout(self.act(self.fc1(x)), key))


def glu_hidden(d_model: int, d_ff: int) -> int:
    """The GLU's hidden width at the ``mlp``'s parameter count: the mlp has 2 d d_ff + d_ff + d
    parameters, the GLU 3 d h + 2 h + d, so h = d_ff (2d + 1) / (3d + 2), about 2/3 d_ff (Shazeer
    2020's rule), rounded to the nearest integer (never below 1)."""
    return max(1, round(d_ff * (2 * d_model + 1) / (3 * d_model + 2)))


@register("ffn", "glu")
class GatedFeedForward(nn.Module):
    """A gated linear unit FFN (Shazeer 2020, "GLU Variants Improve Transformer"): d_model -> two
    projections of width h, act(x W) * (x V), -> d_model. With ``activation: silu`` it is SwiGLU,
    with ``gelu`` GEGLU, with ``relu`` ReGLU. h keeps the ``mlp``'s parameter count (``glu_hidden``),
    so an ``ffn: glu`` variant changes the block's form, not its size."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        hidden = glu_hidden(cfg.d_model, cfg.d_ff)
        self.gate = nn.Linear(cfg.d_model, hidden)
        self.up = nn.Linear(cfg.d_model, hidden)
        self.act = ACTIVATIONS[cfg.activation]()
        self.dropout = KeyedDropout(cfg.dropout)
        self.down = nn.Linear(hidden, cfg.d_model)

    def forward(self, x: Tensor, key: Tensor | None = None) -> Tensor:
        return self.down(self.dropout(self.act(self.gate(x)) * self.up(x), key))
