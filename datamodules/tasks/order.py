"""Order-only task: one ``A`` and one ``B`` among filler symbols; label 1 iff A comes before B.

Each random bag of tokens yields two examples, A-before-B (label 1) and the same sequence with A and B
swapped (label 0), so both classes hold exactly the same multiset of token bags. A model that cannot
see order (``pe='none'`` with [CLS] or mean pooling is permutation-invariant) is then at chance by
construction, not merely in expectation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ablate.errors import ConfigError

if TYPE_CHECKING:  # annotations only: DataConfig reads this registry (tasks/__init__.py)
    import numpy as np

    from ablate.datamodules.config import DataConfig

# The DataConfig fields this task reads besides the examples per split (SYNTHETIC_FIELDS).
FIELDS = ("min_len", "n_symbols")
SUMMARY = "order-only: is A before B"  # what data.task's reference line says of it
N_CLASSES = 2


def longest(cfg: DataConfig) -> int:
    """Tokens of the longest example at length scale 1."""
    return cfg.max_len


def check(cfg: DataConfig, scale: int = 1) -> None:
    """A ConfigError for sizes the task cannot generate (DataConfig checks them when it is built)."""
    if cfg.max_len * scale < 2:
        raise ConfigError(f"task 'order' needs data.max_len >= 2 (room for A and B), got {cfg.max_len}")


def vocab(cfg: DataConfig) -> list[str]:
    return ["A", "B", *(f"s{i}" for i in range(cfg.n_symbols))]


def generate(
    cfg: DataConfig, rng: np.random.Generator, n: int, scale: int = 1
) -> tuple[list[str], list[int]]:
    """``n`` examples (rounded up to even, since they come in pairs), lengths in [min_len, max_len] * scale."""
    import numpy as np  # here: the config schema (and so the CLI's start-up) never loads it

    check(cfg, scale)
    lo, hi = max(2, cfg.min_len * scale), cfg.max_len * scale
    n_pairs = (n + 1) // 2
    names = np.array([f"s{i}" for i in range(cfg.n_symbols)], dtype=object)
    lengths = rng.integers(lo, hi + 1, size=n_pairs)
    fill = rng.integers(cfg.n_symbols, size=(n_pairs, hi))
    # Two distinct positions per bag without a per-row rng.choice: q skips over p.
    p = (rng.random(n_pairs) * lengths).astype(np.int64)
    q = (rng.random(n_pairs) * (lengths - 1)).astype(np.int64)
    q += q >= p
    first, second = np.minimum(p, q), np.maximum(p, q)
    texts: list[str] = []
    labels: list[int] = []
    for k in range(n_pairs):
        toks = list(names[fill[k, : lengths[k]]])
        toks[first[k]], toks[second[k]] = "A", "B"
        texts.append(" ".join(toks))
        toks[first[k]], toks[second[k]] = "B", "A"
        texts.append(" ".join(toks))
        labels += [1, 0]
    order = rng.permutation(len(texts))
    return [texts[i] for i in order], [labels[i] for i in order]
