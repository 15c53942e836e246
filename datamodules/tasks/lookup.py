"""Multi-lookup task: key-value tokens, then a query naming two keys; label 1 iff value(A) > value(B).

An example is ``n_pairs`` combined pair tokens ``k3=v7`` (distinct keys, random order) followed by
``n_pairs`` identical copies of ONE query token ``q3,1`` (A=3, B=1), e.g. with n_pairs=3::

    k0=v4 k3=v7 k1=v2 q3,1 q3,1 q3,1      -> label 1 (7 > 2)

What the heads ablation measures here: learnability at a fixed budget, not a representational limit.
Each query position needs two values selected by the query itself in one attention layer. Separate
heads can each attend to one key and return its value in its own subspace; a single head of the same
width returns one convex mixture ``w v(A) + (1-w) v(B)``. That mixture is enough in principle: the
pair token combines key and value (``k3=v7``), so its value vector can be a one-hot of the value;
scores that favour key A over key B (say w = 0.7, w = 0 elsewhere) leave 0.7 on v(A)'s coordinate
and 0.3 on v(B)'s, from which the feed-forward layer can read which value is A's and compare. A one-head
model that falls below four heads after ``trainer.max_steps`` at the spec's learning rate therefore
shows that one head is harder to train to the solution, not that it cannot represent it.
What the test split measures: with experiments/configs/lookup.yaml's alphabet (6 keys, 10 values: 2,700
queried tuples (A, B, v(A), v(B))), 20,000 training examples hold 2,698 of them and 1,998 of the
2,000 test examples query a tuple seen in training. Test examples are new arrangements (pair order,
the other pairs) of seen tuples: test accuracy measures generalization over arrangements and
distractors, not to unseen key-value combinations.

The query is repeated so that query positions make up half of what mean pooling averages (one query
among the pairs is drowned by the pair positions' outputs); the copies carry no extra information. The sequence length is
``2 * n_pairs`` (``min_len`` does not apply; ``max_len`` must fit it). Invariants: classes exactly
balanced (the query order realises a pre-drawn label), the two queried values always differ, data fixed
by the generator's seed, label recomputable from the tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ablate.errors import ConfigError

if TYPE_CHECKING:  # annotations only: DataConfig reads this registry (tasks/__init__.py)
    import numpy as np

    from ablate.datamodules.config import DataConfig

# The DataConfig fields this task reads besides the examples per split (SYNTHETIC_FIELDS).
FIELDS = ("n_keys", "n_values", "n_pairs")
SUMMARY = "multi-lookup"  # what data.task's reference line says of it
N_CLASSES = 2


def longest(cfg: DataConfig) -> int:
    """Tokens of the longest example at length scale 1: the pair tokens, then as many query copies."""
    return 2 * cfg.n_pairs


def check(cfg: DataConfig, scale: int = 1) -> None:
    """A ConfigError for sizes the task cannot generate (DataConfig checks them when it is built)."""
    m = cfg.n_pairs * scale
    if m > cfg.n_keys:
        raise ConfigError(
            f"task 'lookup' needs n_pairs * {scale} = {m} distinct keys but data.n_keys={cfg.n_keys}"
        )
    if scale == 1 and 2 * m > cfg.max_len:
        raise ConfigError(f"task 'lookup' has 2 * n_pairs = {2 * m} tokens > data.max_len={cfg.max_len}")


def vocab(cfg: DataConfig) -> list[str]:
    pairs = [f"k{k}=v{v}" for k in range(cfg.n_keys) for v in range(cfg.n_values)]
    queries = [f"q{a},{b}" for a in range(cfg.n_keys) for b in range(cfg.n_keys) if a != b]
    return pairs + queries


def generate(
    cfg: DataConfig, rng: np.random.Generator, n: int, scale: int = 1
) -> tuple[list[str], list[int]]:
    """``n`` examples: ``m = n_pairs * scale`` pairs then ``m`` query copies (scale > 1: length-extrapolation split)."""
    import numpy as np  # here: the config schema (and so the CLI's start-up) never loads it

    check(cfg, scale)
    m = cfg.n_pairs * scale
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
