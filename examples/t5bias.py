"""T5's relative position bias (Raffel et al. 2020, section 2.1): a positional encoding of your own.

One learned scalar per head and per bucket of relative distance, added to the attention scores:

    scores[h, i, j] += table[h, bucket(j - i)]

T5's bidirectional buckets: half of them for keys left of the query, half for keys right of it;
in each half the first quarter of the buckets are exact distances 0, 1, 2, ..., the rest grow
logarithmically up to ``MAX_DISTANCE``, beyond which every distance shares the last bucket. It
acts through ``bias`` alone, as ALiBi does: any attention that adds ``pos.bias(L, device, dtype)``
to its scores uses it (the conformance kit checks that ``mha`` and ``qknorm`` do); it adds nothing
to the embeddings and rotates nothing. It encodes any length.

Registered as the positional encoding ``t5-bias``; examples/t5bias.yaml measures it against
sinusoidal, RoPE and ALiBi, and
``ablate check-component positional t5-bias --plugins examples/t5bias.py`` checks it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ablate import components

N_BUCKETS, MAX_DISTANCE = 32, 128  # T5's defaults


def relative_buckets(length: int, device: torch.device) -> Tensor:
    """(L, L) long: the bucket of key j for query i."""
    pos = torch.arange(length, device=device)
    rel = pos[None, :] - pos[:, None]  # (L, L): key minus query
    half = N_BUCKETS // 2
    side = (rel > 0).long() * half  # keys right of the query: the upper half
    dist = rel.abs()
    exact = half // 2
    log_ratio = torch.log(dist.float().clamp(min=1) / exact) / math.log(MAX_DISTANCE / exact)
    wide = (exact + (log_ratio * (half - exact)).long()).clamp(max=half - 1)
    return side + torch.where(dist < exact, dist, wide)


@components.register("positional", "t5-bias")
class T5RelativeBias(components.PositionalEncoding):
    def __init__(self, cfg) -> None:  # cfg: the resolved ModelConfig
        super().__init__(cfg)
        # (H, N_BUCKETS) at N(0, 1 / d_model): Hugging Face's T5 init for this table.
        self.table = nn.Parameter(torch.randn(cfg.n_heads, N_BUCKETS) / math.sqrt(cfg.d_model))

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        """(H, L, L): each head's learned bias for each (query, key) pair."""
        return self.table[:, relative_buckets(length, device)].to(dtype)
