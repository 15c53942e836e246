"""Synthetic tasks, one module each, behind one string-keyed registry.

Every task answers the same small interface: ``vocab(cfg)`` (its fixed token list, for a WordLevel
tokenizer), ``generate(cfg, rng, n, scale)`` -> (whitespace-joined texts, int labels), where ``scale``
multiplies the lengths (the ``test_long`` split), ``longest(cfg)`` (the tokens of its longest example
at scale 1), ``check(cfg, scale)`` (a ConfigError for sizes it cannot generate) and ``N_CLASSES``.
"""

from __future__ import annotations

from types import ModuleType

from ablate.datamodules.tasks import listops, lookup, order

TASKS: dict[str, ModuleType] = {"order": order, "lookup": lookup, "listops": listops}

__all__ = ["TASKS"]
