"""The component kinds, their tables, and the one way in: ``register``.

The built-ins (positional.py, attention.py, norms.py, ffn.py, blocks.py, pooling.py) and a user's components register
here the same way; registry.py looks them up, after importing the built-ins. This module imports
no component, so that every component can import it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TypeVar

from ablate.errors import ConfigError, documented, setting

KINDS = ("positional", "attention", "norm", "ffn", "block", "pooling")
# The ModelConfig field that names each kind's component.
CONFIG_KEYS = {
    "positional": "pe",
    "attention": "attention",
    "norm": "norm_layer",
    "ffn": "ffn",
    "block": "block",
    "pooling": "pool",
}
# The ModelConfig field that holds each kind's options (``options``): ``model.<key>_options``.
OPTIONS_KEYS = {kind: f"{key}_options" for kind, key in CONFIG_KEYS.items()}
NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")  # fullmatch

# kind -> name -> class: what is registered in this process so far.
TABLES: dict[str, dict[str, type]] = {kind: {} for kind in KINDS}
C = TypeVar("C", bound=type)


def register(kind: str, name: str) -> Callable[[C], C]:
    """Class decorator: ``cls`` is the ``kind`` component called ``name`` (lower case).

    ``cls(cfg)`` is built with the resolved ``ModelConfig`` and keeps its kind's contract, the
    docstring of ``PositionalEncoding`` (positional.py), ``Attention`` (attention.py), ``Norm``
    (norms.py), ``FFN`` (ffn.py), ``Block`` (blocks.py) or ``Pooling`` (pooling.py); ``ablate check-component KIND NAME`` checks it.
    """
    if kind not in KINDS:
        raise ConfigError(f"components.register: unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ConfigError(
            f"components.register({kind!r}, {name!r}): a name is lower-case letters, digits, '_', '-', '.'"
        )

    def decorate(cls: C) -> C:
        known = TABLES[kind].get(name)
        if known is not None and qualname(known) != qualname(cls):
            raise ConfigError(
                f"the {kind} component {name!r} is registered twice: by {qualname(known)} and by "
                f"{qualname(cls)}; give one of them another name"
            )
        TABLES[kind][name] = cls
        return cls

    return decorate


def options(cls: C) -> C:
    """Class decorator for a component's own options, its nested ``Options`` class::

        @components.register("norm", "scalenorm")
        class ScaleNorm(nn.Module):
            @components.options
            class Options:
                eps: float = components.option(1e-5, "floor of the norm", Range(0, 1, lo_open=True))

            def __init__(self, cfg):
                self.eps = cfg.options("norm").eps

    A frozen, keyword-only dataclass whose fields are ``option(default, meaning, Range)``
    (a ``Literal`` annotation lists the valid values, as in the config's own fields). A config
    sets them under the kind's one key, ``model.<key>_options`` (``model.norm_layer`` ->
    ``model.norm_layer_options.eps``; ``OPTIONS_KEYS``); they are type- and range-checked,
    filled with their defaults in the resolved config, and part of the study's identity.
    """
    return documented(dataclasses.dataclass(frozen=True, kw_only=True)(cls))


option = setting  # a field of an ``Options`` class: option(default, meaning, Range)


def qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
