"""GPU throughput: tokens/s and MFU of the encoder training step (bf16 autocast), peak memory.

Model FLOPs per token: 6·N + 12·L·d·T (Kaplan et al. 2020 / PaLM appendix B), N the
non-embedding parameters, L layers, d = d_model, T tokens per sequence; MFU divides the
achieved FLOP/s by the GPU's dense bf16 peak, or is null for a GPU not in the table.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from ablate.benchmarks.encoder import N_CLASSES, VOCAB, make_batches
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import EncoderClassifier

# Dense bf16 peak, TFLOP/s (vendor data sheets). First substring match of the device name wins.
BF16_PEAK_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIe", 756.0),
    ("H100", 989.0),
    ("H200", 989.0),
    ("GH200", 989.0),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
)


def bf16_peak(name: str) -> float | None:
    for key, tflops in BF16_PEAK_TFLOPS:
        if key in name:
            return tflops * 1e12
    return None


def flops_per_token(model: EncoderClassifier, seq_len: int) -> float:
    cfg = model.cfg
    n = sum(p.numel() for p in model.parameters()) - model.embed.weight.numel()
    return 6 * n + 12 * cfg.n_layers * cfg.d_model * seq_len


def _train_rate(cfg: ModelConfig, batch: int, length: int, *, steps: int, warmup: int) -> dict:
    """Steps/s and peak memory of bf16-autocast training steps at one batch size."""
    torch.manual_seed(0)
    model = EncoderClassifier(cfg, VOCAB, N_CLASSES).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    batches = [{k: v.cuda() for k, v in b.items()} for b in make_batches(8, batch, length)]
    torch.cuda.reset_peak_memory_stats()

    def step(b: dict) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(b["input_ids"], b["attention_mask"]).logits  # (B, C)
        F.cross_entropy(logits.float(), b["labels"]).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for i in range(warmup):
        step(batches[i % len(batches)])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        step(batches[i % len(batches)])
    torch.cuda.synchronize()
    return {
        "steps_s": steps / (time.perf_counter() - t0),
        "max_memory_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
        "flops_per_token": flops_per_token(model, length + cfg.cls_token),
    }


def gpu_throughput(cfg: ModelConfig, *, batch_sizes: tuple[int, ...], steps: int, warmup: int) -> dict:
    if not torch.cuda.is_available():
        return {"available": False}
    name = torch.cuda.get_device_name()
    peak = bf16_peak(name)
    length = 32  # + [CLS] = 33 tokens per sequence
    seq = length + cfg.cls_token
    runs = []
    for batch in batch_sizes:
        r = _train_rate(cfg, batch, length, steps=steps, warmup=warmup)
        tokens_s = r["steps_s"] * batch * seq
        achieved = tokens_s * r["flops_per_token"]
        runs.append(
            {
                "batch": batch,
                **r,
                "tokens_s": tokens_s,
                "tflops": achieved / 1e12,
                "mfu": achieved / peak if peak else None,
            }
        )
    return {
        "available": True,
        "device": name,
        "bf16_peak_tflops": peak / 1e12 if peak else None,
        "runs": runs,
    }
