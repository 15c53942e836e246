"""The numerics seed factor: level j of ``seed_factors.numerics`` moves the initial weights by one ulp.

Float rounding (the kernels, the reduction order) moves a trained cell as much as a new seed:
Summers & Dinneen (2021) change one bit of one initial weight and get a run as different as one
with another seed. A numerics level is a reproducible stand-in for "other rounding": the same
init, the same data order, the same dropout masks, and every weight one ulp away.

The rule, applied after the init and before training, on the single path and to each member of a
seed-parallel stack alike:

- level 0: nothing (so a study without numerics and level 0 run the same cell);
- level j > 0: ``g = torch.Generator().manual_seed(j)``; for every floating parameter in
  ``model.named_parameters()`` order, ``up = torch.randint(0, 2, p.shape, generator=g) == 1``
  (drawn on the CPU) and ``p = torch.nextafter(p, where(up, +inf, -inf))``: each element moves to
  the adjacent float above or below it (a zero to the smallest subnormal, +-1.4e-45 in fp32).

The directions depend on j alone, not on the init seed, so that level j is the same treatment in
every (init, order) cell: a crossed factor. Buffers (positional tables) are not touched.
"""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def perturb_ulp(model: nn.Module, level: int) -> None:
    """Move every floating parameter element of ``model`` one ulp, up or down as level ``level``
    draws it (level 0: nothing). In place."""
    if level == 0:
        return
    g = torch.Generator().manual_seed(level)
    for p in model.parameters():
        if not p.is_floating_point():
            continue
        up = torch.randint(0, 2, p.shape, generator=g) == 1
        toward = torch.where(up, torch.inf, -torch.inf).to(device=p.device, dtype=p.dtype)
        p.copy_(torch.nextafter(p, toward))
