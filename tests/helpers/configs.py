"""The tiny configs and specs the tests train: a few steps of a 1- or 2-layer encoder on the
order task, seconds each."""

from __future__ import annotations

from pathlib import Path

import yaml

# A train config small enough to run in a few seconds.
TINY_YAML = (
    "model: {d_model: 16, n_layers: 1, n_heads: 2, d_ff: 32, dropout: 0.0}\n"
    "data: {task: order, min_len: 7, max_len: 7, n_symbols: 5, n_train: 96, n_val: 32, n_test: 32,"
    " batch_size: 16}\n"
    "optim: {lr: 0.003}\n"
    "trainer: {max_steps: 4, log_every: 1}\n"
    "seed: 0\n"
)


# The base config of the tiny sweep specs: 2 layers (two heatmap PNGs per cell), 3 steps.
TINY_BASE = {
    "model": {"d_model": 16, "n_layers": 2, "n_heads": 2, "d_ff": 32, "dropout": 0.0},
    "data": {
        "task": "order",
        "min_len": 7,
        "max_len": 7,
        "n_symbols": 5,
        "n_train": 96,
        "n_val": 32,
        "n_test": 32,
        "batch_size": 16,
    },
    "trainer": {"max_steps": 3, "log_every": 1},
}


# Everything that could couple the members of a stack, or the stacked and the single path:
# dropout at every site (attention included), variable lengths (stacked batches get padded),
# [CLS] and a learned table, and a clip norm small enough that every step is clipped.
COUPLING_BASE = {
    "model": {
        "d_model": 16,
        "n_layers": 2,
        "n_heads": 2,
        "d_ff": 32,
        "dropout": 0.1,
        "attn_dropout": 0.1,
        "pool": "cls",
        "pe": "learned",
        "max_len": 16,
    },
    "data": {
        "task": "order",
        "min_len": 4,
        "max_len": 9,
        "n_symbols": 5,
        "n_train": 96,
        "n_val": 32,
        "n_test": 32,
        "batch_size": 16,
    },
    "optim": {"lr": 0.01, "grad_clip": 0.05},
    "trainer": {"max_steps": 8, "val_every": 4, "log_every": 1},
}


def write_spec(tmp_path: Path, **extra: object) -> Path:
    """``tmp_path/tiny.yaml``: experiment "tiny", baseline vs no_pe, 3 seeds, heatmaps for seed 1;
    ``extra`` replaces or adds top-level spec keys."""
    spec = {
        "name": "tiny",
        "base": TINY_BASE,
        "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
        "seeds": 3,
        "heatmap_seeds": [1],
        **extra,
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path
