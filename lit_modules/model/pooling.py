"""Pooling: the ``pooling`` registry's contract and built-ins (``model.pool``).

The encoder's last hidden states (B, L', D) become one vector per example (B, D) for the
classification head. ``cls`` reads a [CLS] token the encoder prepends; the others pool the real
tokens (no [CLS] is added for them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol

import torch
from torch import Tensor, nn

from ablate.lit_modules.model.kinds import register

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig


class Pooling(Protocol):
    """The ``pooling`` contract: ``__init__(cfg)``; ``forward(x, keep)``: x (B, L', D) float, keep
    (B, L') bool (True = a real token; with ``uses_cls`` position 0 is the [CLS] token) ->
    (B, D). Padded positions must not change the result, and an example with no real token
    must give a finite vector. No randomness.

    ``uses_cls`` (class attribute): whether the encoder prepends a learned [CLS] token.
    Parameters: the encoder re-initialises every ``nn.Linear`` (N(0, init_std), bias 0), and
    AdamW decays their weights.
    """

    uses_cls: ClassVar[bool]

    def __call__(self, x: Tensor, keep: Tensor) -> Tensor: ...


class _Pool(nn.Module):
    uses_cls: ClassVar[bool] = False

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()


@register("pooling", "cls")
class ClsPool(_Pool):
    """The [CLS] token's final state (Devlin et al. 2019)."""

    uses_cls = True

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        return x[:, 0]


@register("pooling", "mean")
class MeanPool(_Pool):
    """The mean over real tokens; an example with none divides by 1, not 0."""

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        w = keep.to(x.dtype).unsqueeze(-1)  # (B, L, 1)
        return (x * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)


@register("pooling", "max")
class MaxPool(_Pool):
    """The element-wise maximum over real tokens (Collobert et al. 2011; Conneau et al. 2017's
    InferSent); 0 for an example with none."""

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        m = keep.unsqueeze(-1)  # (B, L, 1)
        top = x.masked_fill(~m, float("-inf")).amax(dim=1)  # (B, D)
        return torch.where(m.any(dim=1), top, torch.zeros_like(top))


@register("pooling", "attention")
class AttentionPool(_Pool):
    """A learned query scores each real token (one linear map D -> 1) and the softmax of the
    scores weighs them (Lin et al. 2017's self-attentive pooling with one hop); 0 for an example
    with no real token."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        # Built without drawing from the global generator (the encoder re-initialises it after
        # the others), so that the rest of the model draws the weights it draws with `mean`.
        with torch.random.fork_rng(devices=[]):
            self.score = nn.Linear(cfg.d_model, 1)

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        s = self.score(x).squeeze(-1)  # (B, L)
        s = s.masked_fill(~keep, torch.finfo(s.dtype).min)  # finite: an all-pad row stays finite
        w = torch.softmax(s, dim=-1) * keep.to(s.dtype)  # padded keys: exactly 0
        return torch.einsum("bl,bld->bd", w, x)
