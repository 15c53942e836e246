"""Encoder blocks: the ``block`` registry's contract and built-ins (``model.block``).

A block is the residual arrangement of one encoder layer: where its attention, feed-forward and
norm components (``model.attention``, ``model.ffn``, ``model.norm_layer``) sit and how their
outputs join the residual stream. ``pre`` and ``post`` are what ``model.norm`` named before
(still accepted as ``model.norm``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol

import torch
from torch import Tensor, nn

from ablate.lit_modules.model.dropout import KeyedDropout
from ablate.lit_modules.model.kinds import TABLES, register

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig
    from ablate.lit_modules.model.positional import PositionalEncoding


class Block(Protocol):
    """The ``block`` contract: ``__init__(cfg)`` builds the layer's components with
    ``registry.get(kind, name)(cfg)`` (so ``model.attention``, ``model.ffn`` and
    ``model.norm_layer`` keep their meaning); ``forward(x, keep, pos, *, need_weights, head_mask,
    key)``: x (B, L, D) float, keep (B, L) bool (True = a real token), ``pos`` the positional
    encoding, ``head_mask`` (H,) float or None, ``key`` the dropout key -> (x' (B, L, D), the
    attention's probabilities (B, H, L, L) or None). Pass ``keep``, ``pos``, ``need_weights``,
    ``head_mask`` and ``key`` on to the attention unchanged, ``key`` to the ffn and to every
    ``KeyedDropout``: no other random draw. Padding must never reach a real position.

    ``final_norm`` (class attribute): whether the encoder closes the residual stream with one
    more norm after the last block (Pre-LN leaves it un-normalised; Post-LN does not).
    """

    final_norm: ClassVar[bool]

    def __call__(
        self,
        x: Tensor,
        keep: Tensor,
        pos: PositionalEncoding,
        *,
        need_weights: bool = False,
        head_mask: Tensor | None = None,
        key: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]: ...


class ResidualBlock(nn.Module):
    """The parts every built-in block has, registered in one order (it fixes the init's draws):
    attention, ffn, ``norms`` norm layers, and one residual dropout per sublayer. The config
    was checked, so each name is registered (``TABLES``: this module imports no registry)."""

    final_norm: ClassVar[bool] = True
    norms: ClassVar[int] = 2

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn = TABLES["attention"][cfg.attention](cfg)
        self.ffn = TABLES["ffn"][cfg.ffn](cfg)
        for i in range(1, self.norms + 1):
            setattr(self, f"norm{i}", TABLES["norm"][cfg.norm_layer](cfg))
        # Residual dropout, one site each: the two sublayers get independent masks.
        self.drop_attn = KeyedDropout(cfg.dropout)
        self.drop_ffn = KeyedDropout(cfg.dropout)

    def forward(
        self,
        x: Tensor,
        keep: Tensor,
        pos: PositionalEncoding,
        *,
        need_weights: bool = False,
        head_mask: Tensor | None = None,
        key: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x: (B, L, D), keep: (B, L) bool -> (B, L, D) and probabilities (B, H, L, L) or None."""
        return self.arrange(
            x, lambda h: self.attn(h, keep, pos, need_weights=need_weights, head_mask=head_mask, key=key), key
        )

    def arrange(self, x: Tensor, attend, key: Tensor | None) -> tuple[Tensor, Tensor | None]:
        raise NotImplementedError


@register("block", "pre")
class PreLN(ResidualBlock):
    """Pre-LN (Xiong et al. 2020): ``x + f(LN(x))`` per sublayer, one more norm after the last block."""

    def arrange(self, x: Tensor, attend, key: Tensor | None) -> tuple[Tensor, Tensor | None]:
        a, probs = attend(self.norm1(x))
        x = x + self.drop_attn(a, key)
        return x + self.drop_ffn(self.ffn(self.norm2(x), key), key), probs


@register("block", "post")
class PostLN(ResidualBlock):
    """Post-LN (Vaswani et al. 2017): ``LN(x + f(x))`` per sublayer."""

    final_norm = False

    def arrange(self, x: Tensor, attend, key: Tensor | None) -> tuple[Tensor, Tensor | None]:
        a, probs = attend(x)
        x = self.norm1(x + self.drop_attn(a, key))
        return self.norm2(x + self.drop_ffn(self.ffn(x, key), key)), probs


@register("block", "sandwich")
class SandwichLN(ResidualBlock):
    """Sandwich-LN (Ding et al. 2021, CogView): ``x + LN(f(LN(x)))``: Pre-LN with a second norm on
    each sublayer's output before it joins the stream; one more norm after the last block."""

    norms = 4

    def arrange(self, x: Tensor, attend, key: Tensor | None) -> tuple[Tensor, Tensor | None]:
        a, probs = attend(self.norm1(x))
        x = x + self.drop_attn(self.norm3(a), key)
        return x + self.drop_ffn(self.norm4(self.ffn(self.norm2(x), key)), key), probs


@register("block", "parallel")
class Parallel(ResidualBlock):
    """Parallel attention and FFN (Wang & Komatsuzaki 2021, GPT-J; Chowdhery et al. 2022, PaLM):
    ``x + attn(LN(x)) + ffn(LN(x))`` with one shared norm; one more norm after the last block."""

    norms = 1

    def arrange(self, x: Tensor, attend, key: Tensor | None) -> tuple[Tensor, Tensor | None]:
        h = self.norm1(x)
        a, probs = attend(h)
        return x + self.drop_attn(a, key) + self.drop_ffn(self.ffn(h, key), key), probs


@register("block", "rezero")
class ReZero(ResidualBlock):
    """ReZero (Bachlechner et al. 2020): ``x + α·f(x)`` per sublayer, no norm, one scalar α per
    block shared by its two sublayers and initialised to 0, so each block starts as the identity."""

    final_norm = False
    norms = 0

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.alpha = nn.Parameter(torch.zeros(()))

    def arrange(self, x: Tensor, attend, key: Tensor | None) -> tuple[Tensor, Tensor | None]:
        a, probs = attend(x)
        x = x + self.alpha * self.drop_attn(a, key)
        return x + self.alpha * self.drop_ffn(self.ffn(x, key), key), probs
