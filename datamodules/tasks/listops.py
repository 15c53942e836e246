"""ListOps (Nangia & Bowman 2018) as used in Long Range Arena (Tay et al. 2021).

Nested prefix expressions over digits 0-9 with MIN, MAX, MED (median, ``int(np.median)`` as in the
LRA code) and SM (sum mod 10); the label is the value (10 classes). The brackets are kept as tokens,
``[ MAX 3 [ MIN 4 7 ] 9 ]``: the LRA pipeline dropped them (google-research/long-range-arena#14),
which makes the task ambiguous.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ablate.errors import ConfigError

if TYPE_CHECKING:  # annotations only: DataConfig reads this registry (tasks/__init__.py)
    import numpy as np

    from ablate.datamodules.config import DataConfig

# The DataConfig fields this task reads besides the examples per split (SYNTHETIC_FIELDS).
FIELDS = ("min_len", "listops_depth", "listops_args")
SUMMARY = ""  # what data.task's reference line says of it
N_CLASSES = 10
OPS = ("MIN", "MAX", "MED", "SM")
DIGITS = tuple(str(d) for d in range(10))


def longest(cfg: DataConfig) -> int:
    """Tokens of the longest example at length scale 1."""
    return cfg.max_len


def vocab(cfg: DataConfig) -> list[str]:
    return ["[", "]", *OPS, *DIGITS]


def apply(op: str, args: list[int]) -> int:
    if op == "MIN":
        return min(args)
    if op == "MAX":
        return max(args)
    if op == "SM":
        return sum(args) % 10
    s, k = sorted(args), len(args)  # int(np.median) of non-negative ints, without numpy per node
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) // 2


def _tree(
    r: random.Random, depth: int, max_depth: int, max_args: int, p_branch: float
) -> tuple[list[str], int]:
    op = OPS[r.randrange(4)]
    toks, vals = ["[", op], []
    for _ in range(r.randint(2, max_args)):
        if depth < max_depth and r.random() < p_branch:
            sub, v = _tree(r, depth + 1, max_depth, max_args, p_branch)
            toks += sub
        else:
            v = r.randrange(10)
            toks.append(DIGITS[v])
        vals.append(v)
    toks.append("]")
    return toks, apply(op, vals)


def _expected_len(p: float, depth: int, max_args: int) -> float:
    mean_args, e = (2 + max_args) / 2, 1.0
    for _ in range(depth):  # from the leaves up: an operator node is "[ OP args ]"
        e = 3 + mean_args * (p * e + (1 - p))
    return e


def check(cfg: DataConfig, scale: int = 1) -> None:
    """A ConfigError for lengths no expression of this depth and arity has."""
    lo, hi, depth, args = cfg.min_len * scale, cfg.max_len * scale, cfg.listops_depth, cfg.listops_args
    longest = 1
    for _ in range(depth):
        longest = 3 + args * longest
    if lo > longest or hi < 5:
        raise ConfigError(
            f"listops with depth {depth} and {args} args has 5..{longest} tokens; "
            f"data lengths [{lo}, {hi}] cannot be met"
        )


def generate(
    cfg: DataConfig, rng: np.random.Generator, n: int, scale: int = 1
) -> tuple[list[str], list[int]]:
    """``n`` expressions with a token count in [min_len, max_len] * scale, resampled otherwise."""
    import numpy as np  # here: the config schema (and so the CLI's start-up) never loads it

    check(cfg, scale)
    lo, hi, depth, args = cfg.min_len * scale, cfg.max_len * scale, cfg.listops_depth, cfg.listops_args
    # Branch probability whose expected length is nearest the window's middle, so resampling stays
    # cheap for any window (the LRA generator used a fixed one with lengths 500-2000).
    target = (lo + hi) / 2
    p = min(np.linspace(0.05, 1.0, 20), key=lambda q: abs(_expected_len(q, depth, args) - target))
    r = random.Random(int(rng.integers(2**63)))  # seeded from the split's numpy rng; ~50x faster per draw
    texts, labels, tries = [], [], 0
    while len(texts) < n:
        tries += 1
        if tries > 1000 * n + 10_000:
            raise ConfigError(f"listops: could not hit lengths [{lo}, {hi}] with depth {depth}, {args} args")
        toks, value = _tree(r, 1, depth, args, float(p))
        if lo <= len(toks) <= hi:
            texts.append(" ".join(toks))
            labels.append(value)
    return texts, labels
