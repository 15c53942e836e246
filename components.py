"""Components of your own: register them, and the contracts they keep (``ablate.components``).

    from torch import nn
    from ablate import components

    @components.register("norm", "scalenorm")      # kinds: positional, attention, norm, ffn, block, pooling
    class ScaleNorm(nn.Module):
        @components.options                         # options of its own: model.norm_layer_options.eps
        class Options:
            eps: float = components.option(1e-5, "floor of the norm", components.Range(0, 1, lo_open=True))

        def __init__(self, cfg): ...                # cfg: the resolved ModelConfig; cfg.options("norm").eps
        def forward(self, x): ...                   # (B, L, D) -> (B, L, D)

Declare the module (or the .py file) under ``plugins:`` in the train config or the experiment
spec, select it by name (``model.norm_layer: scalenorm``), and check it with
``ablate check-component norm scalenorm --plugins my_norm.py``. The contracts, each documented
on its class (``help(components.Attention)``: the arguments' shapes and dtypes, what ``pos``
offers and when to call it, ``head_mask``, grouped-query attention): ``PositionalEncoding``
(subclass it), ``Attention``, ``Norm``, ``FFN``, ``Block``, ``Pooling`` (Protocols), and
``KeyedDropout``, the only randomness a component may use. The how-to page: your own component; examples/ in the
repository holds one of each (scalenorm.py, qknorm.py, t5bias.py).
"""

from __future__ import annotations

from typing import Any

from ablate.errors import Range
from ablate.lit_modules.model.kinds import OPTIONS_KEYS, option, options
from ablate.lit_modules.model.registry import CONFIG_KEYS, KINDS, get, names, register

_CONTRACTS = (
    "PositionalEncoding",
    "Attention",
    "Norm",
    "FFN",
    "Block",
    "Pooling",
    "KeyedDropout",
    "KVHeadsOptions",
)
__all__ = [
    "CONFIG_KEYS",
    "KINDS",
    "OPTIONS_KEYS",
    "Range",
    "get",
    "names",
    "option",
    "options",
    "register",
    *_CONTRACTS,
]


def __getattr__(name: str) -> Any:  # the contracts import torch: only when asked for
    if name not in _CONTRACTS:
        raise AttributeError(f"module 'ablate.components' has no attribute {name!r}")
    from ablate.lit_modules.model import attention, blocks, dropout, ffn, norms, pooling, positional

    homes = {
        "PositionalEncoding": positional,
        "Attention": attention,
        "KVHeadsOptions": attention,
        "Norm": norms,
        "FFN": ffn,
        "Block": blocks,
        "Pooling": pooling,
        "KeyedDropout": dropout,
    }
    return getattr(homes[name], name)
