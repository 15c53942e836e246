"""Counter-based dropout: every mask is a pure function of (seed, step, site, coordinates).

Torch's dropout draws from one global generator, so under ``vmap`` the members of a
seed-parallel stack share (and order-depend on) one stream, and a cell's value would
depend on which seeds it was stacked with. Here, as with JAX's functional keys
(and Salmon et al. 2011's counter-based generators), a mask element is a hash of

    key = (seed, step)        the member's run seed and the optimizer step
    site                      which dropout in the model (numbered at construction)
    coordinates               the element's index along each dimension

so the single model and member k of any stack draw the same masks, and the extra
padding of a stacked batch (a longer L) leaves the masks of real positions unchanged.
The hash is integer arithmetic: bit-identical on every device. A model called without
a key (plain ``nn.Module`` use outside the Lightning systems) falls back to torch's dropout.

A key comes as an int64 tensor (2,) (inside a seed-parallel stack, batched by vmap) or as a
tuple of Python ints (a single model: ``LitClassifier``). For a tuple on the CPU the mask is
built in one native pass (lit_modules/model/dropout_native.py) from the site hash computed in Python;
both paths give the same bits.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.lit_modules.model import dropout_native

_M32 = 0xFFFFFFFF


def _mix(x: Tensor) -> Tensor:
    """A 32-bit avalanche hash (xor-shift-multiply rounds) on int64 values in [0, 2^32).

    The multipliers are odd and below 2^31, so no product leaves int64's range: no overflow,
    no platform-dependent wrap-around.
    """
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x68E31DA5) & _M32
    x = x ^ (x >> 16)
    x = (x * 0x2C1B3C6D) & _M32
    return x ^ (x >> 16)


def _mix_int(x: int) -> int:
    """``_mix`` on a Python int in [0, 2^32): the same arithmetic, no tensors."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _M32
    x ^= x >> 15
    x = (x * 0x68E31DA5) & _M32
    x ^= x >> 16
    x = (x * 0x2C1B3C6D) & _M32
    return x ^ (x >> 16)


def site_hash(seed: int, step: int, site: int) -> int:
    """``site_key`` for a key of Python ints (seed, step >= 0)."""
    h = _mix_int(seed & _M32)
    h = _mix_int(h ^ ((seed >> 32) & _M32))
    h = _mix_int(h ^ (step & _M32))
    return _mix_int(h ^ site)


def threshold(p: float) -> int:
    """The integer form of ``u >= p``: u = m / 2^24 and torch compares it with p rounded to
    float32, so the element keeps iff m >= ceil(float32(p) * 2^24) (exact in float64)."""
    return math.ceil(float(np.float32(p)) * (1 << 24))


def site_key(key: Tensor, site: int) -> Tensor:
    """key: int64 (2,) = (seed, step) -> one int64 hash for this dropout site, in [0, 2^32)."""
    seed, step = key[0], key[1]
    h = _mix(seed & _M32)
    h = _mix(h ^ ((seed >> 32) & _M32))
    h = _mix(h ^ (step & _M32))
    return _mix(h ^ site)


def keep_mask(key: Tensor, site: int, shape: torch.Size, p: float, device: torch.device) -> Tensor:
    """Bool mask of ``shape``, True with probability 1 - p, from (key, site, coordinates)."""
    h = site_key(key, site)
    for dim, size in enumerate(shape):
        # Broadcast one coordinate axis at a time: only the last mix runs at full size.
        coord = torch.arange(size, device=device, dtype=torch.int64).view(
            *([1] * dim), size, *([1] * (len(shape) - dim - 1))
        )
        h = _mix(h ^ coord)
    u = (h >> 8).to(torch.float32) * (1.0 / (1 << 24))  # 24 uniform bits: exact in float32
    return u >= p


class KeyedDropout(nn.Module):
    """``nn.Dropout`` whose mask comes from ``keep_mask(key, self.site, ...)``.

    ``site`` is set by the model that owns it (``number_sites``), once, at construction.
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p
        self.site = -1

    def forward(self, x: Tensor, key: Tensor | tuple[int, int] | None) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if key is None:
            return F.dropout(x, self.p, training=True)
        if isinstance(key, tuple):
            if x.device.type == "cpu" and x.dtype == torch.float32 and dropout_native.available():
                keep = dropout_native.keep_mask(site_hash(*key, self.site), x.shape, threshold(self.p))
                return x * keep * (1.0 / (1.0 - self.p))
            key = torch.tensor(key, dtype=torch.int64, device=x.device)
        keep = keep_mask(key, self.site, x.shape, self.p, x.device)
        return x * keep.to(x.dtype) * (1.0 / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}, site={self.site}"


def number_sites(model: nn.Module) -> None:
    """Give every ``KeyedDropout`` of ``model`` its own site number, in module order."""
    for site, m in enumerate(m for m in model.modules() if isinstance(m, KeyedDropout)):
        m.site = site
