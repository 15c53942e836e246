"""What a cell needs in memory, estimated before anything is built: a configuration this machine
cannot hold is an error with the estimate and the limit (exit 2), not an allocator traceback
after minutes, nor a single step that runs for hours.

The estimate is deliberately simple and on the low side, so it refuses only what cannot fit:
fp32 parameters with their gradient and AdamW's two moments (16 bytes each), and one training
batch's activations that backward keeps: per layer the residual stream and its sublayers
(about 12 values per token and width, and the FFN's hidden units), and the attention scores
(B x H x L x L; the explicit path keeps them, the fused one computes them per block). It is
compared with the memory available now (``MemAvailable``; the GPU's free memory when training
runs on CUDA).
"""

from __future__ import annotations

import os

from ablate.errors import ConfigError
from ablate.experiments.schema.config import TrainConfig

GiB = 1 << 30


def parameters(cfg: TrainConfig, vocab_size: int | None = None) -> int:
    """Parameters of the encoder, near enough (vocab_size: the data's, else data.vocab_size)."""
    m = cfg.model
    vocab = vocab_size or cfg.data.vocab_size
    kv = m.kv_heads * m.head_dim
    per_layer = m.d_model * (m.d_model + 2 * kv) + m.d_model * m.d_model + 2 * m.d_model * m.d_ff
    return vocab * m.d_model + m.n_layers * per_layer + m.max_len * m.d_model


def training_bytes(cfg: TrainConfig, vocab_size: int | None = None) -> int:
    """The estimate of the module docstring, in bytes, for one cell (a seed-parallel stack of K
    cells needs K times it)."""
    m, d = cfg.model, cfg.data
    length = d.longest_input() + m.cls_token
    tokens = d.batch_size * length
    activations = m.n_layers * tokens * (12 * m.d_model + m.d_ff) * 4
    scores = m.n_layers * d.batch_size * m.n_heads * length * length * 4
    k = cfg.trainer.seed_parallel
    return k * (16 * parameters(cfg, vocab_size) + activations + scores)


def available_bytes(cfg: TrainConfig) -> tuple[int, str] | None:
    """(bytes, where) this machine has for the run now; None when it cannot be told."""
    if cfg.trainer.accelerator in ("gpu", "cuda", "auto"):
        import torch

        if torch.cuda.is_available():
            free, _ = torch.cuda.mem_get_info()
            return int(free), f"free on {torch.cuda.get_device_name()}"
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024, "available memory"
    except (OSError, KeyError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "available memory"
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(cfg: TrainConfig, vocab_size: int | None = None) -> None:
    """A ConfigError when the cell cannot fit this machine's memory, naming what to lower."""
    have = available_bytes(cfg)
    if have is None:
        return
    need = training_bytes(cfg, vocab_size)
    if need > have[0]:
        m, d = cfg.model, cfg.data
        raise ConfigError(
            f"this configuration needs about {need / GiB:,.1f} GiB to train (parameters with their AdamW "
            f"state, and one batch of {d.batch_size} x {d.longest_input()} tokens through {m.n_layers} "
            f"layer(s) of width {m.d_model}, with {m.n_heads} x L x L attention scores each), and this "
            f"machine has {have[0] / GiB:,.1f} GiB {have[1]}; lower data.batch_size, data.max_len, "
            "model.d_model or model.n_layers"
        )
