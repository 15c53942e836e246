"""Synthetic tasks, one module each, behind one string-keyed registry.

Every task answers the same small interface: ``vocab(cfg)`` (its fixed token list, for a WordLevel
tokenizer), ``generate(cfg, rng, n, scale)`` -> (whitespace-joined texts, int labels), where ``scale``
multiplies the lengths (the ``test_long`` split), ``longest(cfg)`` (the tokens of its longest example
at scale 1), ``check(cfg, scale)`` (a ConfigError for sizes it cannot generate), ``FIELDS`` (the
``DataConfig`` fields it reads besides the examples per split), ``SUMMARY`` (a few words for the
config reference) and ``N_CLASSES``.

The registry is where the task names live: ``data.task``'s choices are ``TASK_NAMES``, the
synthetic tasks and ``text`` (a data set read from the hub or local files, datamodules/text.py).
"""

from __future__ import annotations

from types import ModuleType

from ablate.datamodules.tasks import listops, lookup, order

TASKS: dict[str, ModuleType] = {"order": order, "lookup": lookup, "listops": listops}
TEXT = "text"
TASK_NAMES: tuple[str, ...] = (*TASKS, TEXT)

__all__ = ["TASKS", "TASK_NAMES", "TEXT"]
