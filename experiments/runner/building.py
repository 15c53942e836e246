"""Building a cell's model: a component whose ``__init__`` raises is a ConfigError that names it.

A component's ``check(cfg)`` runs when the config is built; its ``__init__`` runs only here, when
the model is built (one seed alone or a stack). What it raises there (a ``RuntimeError`` of a
plugin's, a built-in's ``ValueError`` on options it cannot serve) is the user's to fix, not a bug
of the suite: one line that names the component (its kind, config key and name), where it raised
and the error, exit 2 in ``ablate train`` and the cell's recorded error in a sweep. An error
raised outside every active component's code stays what it is, with its traceback.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TypeVar

from ablate.errors import ConfigError
from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig

T = TypeVar("T")


def build_model(cfg: ModelConfig, build: Callable[[], T]) -> T:
    """``build()`` (a LightningModule of ``cfg``); a component's error as ``component_error``."""
    try:
        return build()
    except ConfigError:
        raise
    except Exception as err:
        named = component_error(cfg, err)
        if named is None:
            raise
        raise named from None


def component_error(cfg: ModelConfig, err: BaseException) -> ConfigError | None:
    """The ConfigError naming the active component of ``cfg`` in whose code ``err`` was raised: the
    innermost frame of its traceback that is a method of one (its ``self``); None when none is."""
    try:
        chosen = registry.active(cfg)
    except ConfigError:
        return None
    frames = list(traceback.walk_tb(err.__traceback__))
    for frame, _ in reversed(frames):
        owner = frame.f_locals.get("self")
        kind = next((k for k, cls in chosen.items() if owner is not None and isinstance(owner, cls)), None)
        if kind is None:
            continue
        return registry.component_failed(cfg, kind, chosen[kind], err, "failed to build")
    return None
