"""Multi-lookup task: key-value tokens, then one query naming two keys; label 1 iff value(k1) > value(k2).

Each pair is ONE token ``k3=v7`` and the query is ONE token ``q3,11``, so the query position has to
retrieve two different values at once in one layer: one attention head averages them together, two
heads can keep them apart (the head-count ablation). The sequence length is ``n_pairs + 1``;
``min_len``/``max_len`` do not apply (``max_len`` must only fit it). Classes are exactly balanced.
"""

from __future__ import annotations

import numpy as np

from datamodules.config import DataConfig
from lit_modules.config import ConfigError

N_CLASSES = 2


def vocab(cfg: DataConfig) -> list[str]:
    pairs = [f"k{k}=v{v}" for k in range(cfg.n_keys) for v in range(cfg.n_values)]
    queries = [f"q{a},{b}" for a in range(cfg.n_keys) for b in range(cfg.n_keys) if a != b]
    return pairs + queries


def generate(
    cfg: DataConfig, rng: np.random.Generator, n: int, scale: int = 1
) -> tuple[list[str], list[int]]:
    """``n`` examples with ``n_pairs * scale`` pairs (scale > 1 only for the length-extrapolation split)."""
    m = cfg.n_pairs * scale
    if m > cfg.n_keys:
        raise ConfigError(
            f"task 'lookup' needs n_pairs * {scale} = {m} distinct keys but data.n_keys={cfg.n_keys}"
        )
    if scale == 1 and 2 * m > cfg.max_len:
        raise ConfigError(f"task 'lookup' has 2 * n_pairs = {2 * m} tokens > data.max_len={cfg.max_len}")
    rows = np.arange(n)
    keys = np.argsort(rng.random((n, cfg.n_keys)), axis=1)[:, :m]  # distinct keys in random order
    values = rng.integers(cfg.n_values, size=(n, m))
    qpos = np.argsort(rng.random((n, m)), axis=1)[:, :2]  # two distinct queried positions
    tie = values[rows, qpos[:, 0]] == values[rows, qpos[:, 1]]
    while tie.any():  # resample until the two queried values differ
        k = int(tie.sum())
        values[tie] = rng.integers(cfg.n_values, size=(k, m))
        qpos[tie] = np.argsort(rng.random((k, m)), axis=1)[:, :2]
        tie = values[rows, qpos[:, 0]] == values[rows, qpos[:, 1]]
    want = rng.permutation(rows % 2)  # exactly balanced labels; the query order realises them
    a, b = qpos[:, 0], qpos[:, 1]
    swap = (values[rows, a] > values[rows, b]) != want.astype(bool)
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    texts = [
        " ".join(f"k{k}=v{v}" for k, v in zip(keys[r], values[r], strict=True))
        + f" q{keys[r, a[r]]},{keys[r, b[r]]}" * m
        for r in range(n)
    ]
    return texts, want.tolist()
