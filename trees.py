"""Nested mappings as flat dotted keys: the one ``flatten`` of configs, specs and summaries.

Layer 0 (beside ``errors``): imports nothing of ablate, so every layer can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten(tree: Mapping[str, Any], *, depth: int | None = None) -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": 2}`` -> ``{"a.b": 1, "c": 2}``, in the tree's order.

    An empty mapping is a value, never dropped: ``{"variants": {"baseline": {}}}`` ->
    ``{"variants.baseline": {}}`` (a variant without overrides is still named, a key that holds
    ``{}`` differs from one that is absent). ``depth``: how many levels to join (None: all), so
    ``flatten(config, depth=1)`` gives ``model.d_model`` and leaves a field whose value is a
    mapping whole, as a dotted override names it. Keys become strings (``str(key)``).
    """
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping) and value and depth != 0:
            inner = flatten(value, depth=None if depth is None else depth - 1)
            out.update({f"{key}.{k}": v for k, v in inner.items()})
        else:
            out[str(key)] = value
    return out
