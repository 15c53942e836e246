"""Components of your own: register them, and the contracts they keep (``ablate.components``).

    from torch import nn
    from ablate import components

    @components.register("norm", "scalenorm")      # kinds: positional, attention, norm, ffn
    class ScaleNorm(nn.Module):
        def __init__(self, cfg): ...                # cfg: the resolved ModelConfig
        def forward(self, x): ...                   # (B, L, D) -> (B, L, D)

Declare the module (or the .py file) under ``plugins:`` in the train config or the experiment
spec, select it by name (``model.norm_layer: scalenorm``), and check it with
``ablate check-component norm scalenorm --plugins my_norm.py``. The contracts, each documented
on its class (``help(components.Attention)``: the arguments' shapes and dtypes, what ``pos``
offers and when to call it, ``head_mask``, grouped-query attention): ``PositionalEncoding``
(subclass it), ``Attention``, ``Norm``, ``FFN`` (Protocols), and ``KeyedDropout``, the only
randomness a component may use. The how-to page: your own component; examples/ in the
repository holds one of each (scalenorm.py, qknorm.py, t5bias.py).
"""

from __future__ import annotations

from typing import Any

from ablate.lit_modules.model.registry import CONFIG_KEYS, KINDS, get, names, register

_CONTRACTS = ("PositionalEncoding", "Attention", "Norm", "FFN", "KeyedDropout")
__all__ = ["CONFIG_KEYS", "KINDS", "get", "names", "register", *_CONTRACTS]


def __getattr__(name: str) -> Any:  # the contracts import torch: only when asked for
    if name not in _CONTRACTS:
        raise AttributeError(f"module 'ablate.components' has no attribute {name!r}")
    from ablate.lit_modules.model.attention import Attention
    from ablate.lit_modules.model.dropout import KeyedDropout
    from ablate.lit_modules.model.ffn import FFN
    from ablate.lit_modules.model.norms import Norm
    from ablate.lit_modules.model.positional import PositionalEncoding

    contracts = {"PositionalEncoding": PositionalEncoding, "Attention": Attention, "Norm": Norm}
    return {**contracts, "FFN": FFN, "KeyedDropout": KeyedDropout}[name]
