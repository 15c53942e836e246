"""``python -m ablate.benchmarks.profile_seed_parallel [--k 5]``: where a seed-parallel step's time goes.

One training step (forward, backward, AdamW) of K separate encoders against one K-member
``StackedEncoder``, at ``experiments/configs/order.yaml``'s model (batch 64, 33 tokens), on one CPU
thread: wall time per step, operator calls per step (what a GPU pays a launch for) and the
share of operator time in matmul and attention kernels (the arithmetic, which batching
members does not shrink).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from ablate.experiments.specs.loading import load_config
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.systems.seed_parallel import StackedEncoder

ARITHMETIC = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm")
VOCAB, B, L = 18, 64, 33


def measure(step: Callable[[], None], reps: int = 10) -> dict:
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    wall = (time.perf_counter() - t0) / reps
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    arithmetic = sum(
        e.self_cpu_time_total for e in events if e.key in ARITHMETIC or "scaled_dot_product" in e.key
    )
    top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:5]
    return {
        "ms_per_step": 1000 * wall,
        "ops_per_step": sum(e.count for e in events) / 5,
        "arithmetic_share": arithmetic / total,
        "top": {e.key: round(e.self_cpu_time_total / total, 3) for e in top},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablate.benchmarks.profile_seed_parallel")
    parser.add_argument("--k", type=int, default=5)
    k = parser.parse_args(argv).k
    torch.set_num_threads(1)
    cfg = load_config("experiments/configs/order.yaml").model
    ids = torch.randint(1, VOCAB, (k, B, L))
    mask = torch.ones(k, B, L, dtype=torch.bool)
    labels = torch.randint(0, 2, (k, B))
    singles = []
    for seed in range(k):
        torch.manual_seed(seed)
        singles.append(EncoderClassifier(cfg, VOCAB, 2))
    stacked = StackedEncoder(cfg, vocab_size=VOCAB, n_classes=2, seeds=list(range(k)))
    single_opts = [torch.optim.AdamW(m.parameters()) for m in singles]
    stacked_opt = torch.optim.AdamW(stacked.parameters())

    def sequential() -> None:
        for i, (model, opt) in enumerate(zip(singles, single_opts, strict=True)):
            F.cross_entropy(model(ids[i], mask[i]).logits, labels[i]).backward()
            opt.step()
            opt.zero_grad()

    def together() -> None:
        logits = stacked(ids, mask)  # (K, B, C)
        F.cross_entropy(logits.reshape(k * B, -1), labels.reshape(-1), reduction="sum").div(B).backward()
        stacked_opt.step()
        stacked_opt.zero_grad()

    for name, step in ((f"{k} models one after another", sequential), (f"one {k}-member stack", together)):
        r = measure(step)
        print(
            f"{name}: {r['ms_per_step']:.1f} ms per step of all {k}, {r['ops_per_step']:.0f} operator calls, "
            f"{r['arithmetic_share']:.0%} of operator time in matmul/attention; top: {r['top']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
