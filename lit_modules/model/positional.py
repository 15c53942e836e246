"""Positional encodings: the ``positional`` registry's contract and built-ins.

Every encoding answers three questions, each a no-op by default, so that the
attention and the encoder never ask which encoding is active:

- ``add(x)``: add a positional signal to the embeddings (sinusoidal, learned);
- ``rotate(q, k)``: rotate queries and keys by position (RoPE);
- ``bias(L, device, dtype)``: an additive bias on the attention scores (ALiBi);

and, as class attributes: ``order_free`` (True only for an encoding that gives no position
information, so the conformance kit checks that the encoder is permutation-invariant with it),
``max_positions(cfg)`` (the longest input it can encode, None for any) and ``check(cfg)``.
A user's encoding subclasses ``PositionalEncoding`` and registers with
``@components.register("positional", NAME)``.

Scale rule (one choice for every *additive* encoding): at init the positional
signal has the same per-element RMS as the token embedding, ``embed_rms``
(``init_std * sqrt(d_model)`` with ``scale_embeddings``, else ``init_std``).
The sinusoidal closed form has RMS ``sqrt(1/2)`` and is multiplied by
``embed_rms / sqrt(1/2)``. The learned table is parametrized like the token
embeddings: stored at ``N(0, init_std)`` and multiplied by the same factor
(``sqrt(d_model)``) in the forward pass. Adam moves every parameter by about
``lr`` per step whatever its scale, so a table stored at ``N(0, embed_rms)``
and added as it is would move ``sqrt(d_model)`` times slower than the tokens
in input units (measured 7.7x at d_model = 64); with the shared multiplier
both move at the same rate (``tests/unit/lit_modules/model/test_model.py`` pins it within 20 %).
So neither additive encoding starts drowned by, or drowning, the tokens, nor
learns at another speed. RoPE and ALiBi add nothing to the embeddings, so the
rule does not apply to them: RoPE is a norm-preserving rotation and ALiBi acts
on the scores.

Positions are 0..L-1 of the sequence the encoder builds, [CLS] included
(it sits at position 0). Padding is on the right, so padding never moves
the position of a real token.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import torch
from torch import Tensor, nn

from ablate.errors import Range, require
from ablate.lit_modules.model.kinds import option, options, register

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig


class PositionalEncoding(nn.Module):
    """The ``positional`` contract, each part a no-op by default; as itself it is ``pe: none``.

    Subclass it and override what the encoding does. ``__init__(cfg)`` takes the resolved
    ``ModelConfig`` (call ``super().__init__(cfg)``: it sets ``d_model``, ``n_heads``,
    ``embed_rms``). On every forward, whichever encoding is active, the encoder calls ``add``
    and every attention ``rotate`` and ``bias``:

    - ``add(x)``: x (B, L, D) embeddings, [CLS] at position 0 included -> (B, L, D) with the
      positional signal added (sinusoidal, learned); the encoder calls it once, before the blocks;
    - ``rotate(q, k)``: q, k (B, H, L, Dh), keys expanded to the H query heads -> the same shapes,
      rotated by position (RoPE); each attention calls it after projecting;
    - ``bias(L, device, dtype)``: (H, L, L) added to every example's attention scores (row: the
      query, column: the key), or None (ALiBi); each attention adds it before the key mask.

    Positions are 0..L-1 with padding on the right: a real position's encoding must not depend
    on L (a longer padded batch gives it the same). Parameters are trained like any other;
    buffers must be deterministic (a seed-parallel stack shares member 0's), non-persistent
    when they are recomputed. Class attributes: ``order_free`` (True only for an encoding that
    gives no position information: the kit then checks the encoder is permutation-invariant),
    ``max_positions(cfg)``, ``check(cfg)``, ``OPTIONS``.
    """

    order_free = False  # True: the encoder stays permutation-invariant with it (pe: none)

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.d_model = cfg.d_model
        self.n_heads = cfg.n_heads
        self.embed_rms = cfg.embed_rms

    @classmethod
    def check(cls, cfg: ModelConfig) -> None:
        """Raise ConfigError for a configuration this encoding cannot serve."""

    @classmethod
    def max_positions(cls, cfg: ModelConfig) -> int | None:
        """The most positions ([CLS] included) it can encode; None for any length."""
        return None

    def add(self, x: Tensor) -> Tensor:
        """x: (B, L, D) embeddings -> (B, L, D) with the positional signal added."""
        return x

    def rotate(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """q, k: (B, H, L, Dh) -> the same shapes, rotated by position."""
        return q, k

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> Tensor | None:
        """An additive score bias of shape (H, L, L), or None."""
        return None


@register("positional", "none")
class NoPositional(PositionalEncoding):
    """``pe: none``: the encoder is permutation-invariant (a bag of tokens)."""

    order_free = True


def sinusoid_table(length: int, d_model: int) -> Tensor:
    """Vaswani et al. 2017, 3.5: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same). (L, D)."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    angle = pos / 10000.0 ** (two_i / d_model)  # (L, ceil(D/2))
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd D: the last cos column does not exist
    return table.float()


@register("positional", "sinusoidal")
class SinusoidalPositional(PositionalEncoding):
    """Fixed sinusoids, scaled to the token embedding's RMS; any length, not limited by max_len."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        # The closed form has per-element RMS sqrt(1/2) (sin^2 + cos^2 = 1 per pair).
        self.scale = self.embed_rms / math.sqrt(0.5)
        # Non-persistent: not in checkpoints, recomputed (and grown) on demand.
        self.register_buffer("table", sinusoid_table(cfg.max_len, cfg.d_model), persistent=False)

    def add(self, x: Tensor) -> Tensor:
        length = x.shape[1]
        if length > self.table.shape[0]:
            self.table = sinusoid_table(length, self.d_model).to(self.table.device)
        return x + (self.scale * self.table[:length]).to(x.dtype)  # (L, D) broadcast over B


@register("positional", "learned")
class LearnedPositional(PositionalEncoding):
    """A trained table of ``max_len`` rows, one per position, parametrized like the token embedding.

    Stored at ``N(0, init_std)`` and multiplied by ``embed_rms / init_std`` (the token
    embedding's ``sqrt(d_model)``) when added: RMS ``embed_rms`` at init, and the same
    per-step movement in input units as the tokens under Adam (the scale rule above).

    Positions count the sequence the encoder builds, so with ``pool: cls`` the [CLS]
    vector uses row 0 and at most ``max_len - 1`` tokens fit. Longer inputs raise
    ``ValueError``: there is no row for them. Length extrapolation rule: rows beyond
    the longest training input exist but were never trained and keep their random
    init, so evaluating on longer inputs (up to max_len) uses untrained rows; the
    suite measures what that does rather than hiding it.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.scale = self.embed_rms / cfg.init_std  # the token embedding's forward multiplier
        self.table = nn.Parameter(torch.randn(cfg.max_len, cfg.d_model) * cfg.init_std)  # (max_len, D)

    @classmethod
    def max_positions(cls, cfg: ModelConfig) -> int | None:
        return cfg.max_len  # the table's rows: there is no row for a longer input

    def add(self, x: Tensor) -> Tensor:
        length = x.shape[1]
        if length > self.table.shape[0]:
            raise ValueError(
                f"input of {length} positions ([CLS] included) is longer than model.max_len="
                f"{self.table.shape[0]}, the rows of the learned positional table; raise model.max_len"
            )
        return x + (self.scale * self.table[:length]).to(x.dtype)


@register("positional", "rope")
class RotaryPositional(PositionalEncoding):
    """RoPE (Su et al. 2021), rotate-half convention: q.k depends on i - j only."""

    @options
    class Options:
        base: float = option(
            10000.0, "the frequencies' base: pair j turns by position / base^(2j / head_dim)", Range(1, 1e9)
        )

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        head_dim = cfg.head_dim  # even (check)
        base = cfg.options("positional").base
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (Dh/2,)

    def rotate(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        length = q.shape[-2]
        pos = torch.arange(length, device=q.device, dtype=torch.float32)
        angle = torch.outer(pos, self.inv_freq)  # (L, Dh/2)
        angle = torch.cat([angle, angle], dim=-1)  # (L, Dh): dim j and j + Dh/2 form one pair
        cos, sin = angle.cos().to(q.dtype), angle.sin().to(q.dtype)
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin

    @classmethod
    def check(cls, cfg: ModelConfig) -> None:
        require(
            cfg.head_dim % 2 == 0,
            f"model.pe='rope' rotates pairs of dimensions and needs an even head_dim; "
            f"d_model/n_heads = {cfg.d_model}/{cfg.n_heads} = {cfg.head_dim}",
        )


def _rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)  # (..., Dh/2) each
    return torch.cat([-x2, x1], dim=-1)


def alibi_slopes(n_heads: int) -> list[float]:
    """Press et al. 2022: geometric 2^(-8/n), 2^(-16/n), ...; for n not a power of 2, the
    slopes of the closest smaller power of 2, then every other slope of twice that many."""
    if math.log2(n_heads).is_integer():
        start = 2.0 ** (-8.0 / n_heads)
        return [start ** (i + 1) for i in range(n_heads)]
    closest = 2 ** math.floor(math.log2(n_heads))
    return alibi_slopes(closest) + alibi_slopes(2 * closest)[0::2][: n_heads - closest]


@register("positional", "alibi")
class AlibiPositional(PositionalEncoding):
    """ALiBi (Press et al. 2022) for a bidirectional encoder, in one of two forms (the option
    ``model.pe_options.form``; ``model.alibi`` is its older name).

    - ``symmetric``: bias ``-m_h |i - j|``, the common encoder adaptation (the symmetric
      distance of Press's attention_with_linear_biases issue #5, MosaicBERT). It cannot tell
      left from right: with ``pool: mean`` and no [CLS], reversing the real tokens permutes
      queries and keys alike and leaves every logit unchanged (``tests/unit/lit_modules/model/test_model.py`` pins
      it), so on an order task only the [CLS] boundary at position 0 breaks the symmetry.
    - ``directional``: the heads split into two causal ALiBi halves reading in opposite
      directions, as a bidirectional RNN pairs a left-to-right and a right-to-left reader:
      even heads see keys at or left of the query (``j <= i``), odd heads keys at or right of
      it (``j >= i``), each with ``-m_h |i - j|`` on what it sees; the slopes are the
      symmetric form's, interleaved, so each direction gets steep and shallow heads. The
      other side gets a large finite penalty rather than ``-inf``, so a padded query with no
      key on its side stays finite (its output is never pooled).
    """

    # exp(-1e4) is 0 in float32 and bf16; finite, unlike -inf, for rows with no visible key.
    BLOCKED = -1.0e4

    @options
    class Options:
        form: Literal["symmetric", "directional"] = option(
            "symmetric", "−m·|i−j| for every head, or even heads look left and odd heads right"
        )

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.directional = cfg.options("positional").form == "directional"
        self.register_buffer("slopes", torch.tensor(alibi_slopes(cfg.n_heads)), persistent=False)  # (H,)

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        pos = torch.arange(length, device=device, dtype=torch.float32)
        offset = pos[None, :] - pos[:, None]  # (L, L): j - i, key minus query
        bias = -self.slopes.to(device)[:, None, None] * offset.abs()  # (H, L, L)
        if self.directional:
            looks_left = torch.arange(self.n_heads, device=device) % 2 == 0  # (H,)
            hidden = torch.where(looks_left[:, None, None], offset > 0, offset < 0)  # (H, L, L)
            bias = bias.masked_fill(hidden, self.BLOCKED)
        return bias.to(dtype)

    @classmethod
    def check(cls, cfg: ModelConfig) -> None:
        require(
            cfg.options("positional").form == "symmetric" or cfg.n_heads >= 2,
            "model.pe_options.form='directional' splits the heads into left- and right-looking ones; "
            "it needs model.n_heads >= 2",
        )
