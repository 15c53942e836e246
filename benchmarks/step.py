"""``python -m ablate.benchmarks.step [CONFIG ...]``: a training step against this core's peak.

For each config (default: the main job's three tasks), on one thread: the step's FLOPs counted by
``torch.utils.flop_counter.FlopCounterMode`` (forward, backward; matmuls and attention), the time
of a training step (forward, backward, clipping, AdamW: what ``LitClassifier`` runs, median of
``--steps`` after warm-up), and the single-core matmul peak measured beside it (the best of
one-thread ``torch.mm`` at n = 256 ... 2048). The fraction of peak is FLOPs / time / peak.
``--breakdown`` adds where the time goes (torch.profiler, by operator: matmul, attention,
dropout masks, optimizer, the rest). ``--precision bf16-mixed`` times the step as Lightning's
``trainer.precision=bf16-mixed`` runs it on the CPU: forward and loss under
``torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False)`` (its MixedPrecision plugin's
context), backward and AdamW outside, weights and optimizer state in fp32.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

CONFIGS = {
    "order-only": ("experiments/configs/order.yaml", []),
    "multi-lookup": ("experiments/configs/lookup.yaml", []),
    "SST-2": ("experiments/configs/sst2.yaml", ["trainer.val_every=0"]),
}
ROOT = Path(__file__).resolve().parents[1]


def matmul_peak(repeats: int = 5) -> float:
    """FLOP/s of the best one-thread float32 ``torch.mm`` over n = 256 ... 2048."""
    best = 0.0
    for n in (256, 512, 1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.mm(a, b)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            torch.mm(a, b)
            times.append(time.perf_counter() - t)
        best = max(best, 2 * n**3 / min(times))
    return best


def _setup(path: str, overrides: list[str]) -> tuple[Any, Any, list[dict[str, torch.Tensor]]]:
    import lightning as L

    from ablate.datamodules import ClassificationDataModule
    from ablate.experiments.runner.cells import quiet_lightning
    from ablate.experiments.specs.loading import load_config
    from ablate.lit_modules.systems.classifier import LitClassifier

    quiet_lightning()
    cfg = load_config(ROOT / path, overrides)
    dm = ClassificationDataModule(cfg.data, shuffle_seed=cfg.seed)
    dm.prepare_data()
    dm.setup("fit")
    L.seed_everything(cfg.seed, verbose=False)
    lit = LitClassifier(
        cfg.model, cfg.optim, vocab_size=dm.vocab_size, n_classes=dm.n_classes,
        max_steps=cfg.trainer.max_steps, seed=cfg.seed,
    )  # fmt: skip
    batches = [b for _, b in zip(range(24), dm.train_dataloader(), strict=False)]
    return cfg, lit, batches


PRECISIONS = ("32-true", "bf16-mixed")


def _autocast(precision: str) -> Any:
    """Lightning's CPU forward context for ``precision`` (plugins/precision/amp.py)."""
    if precision == "bf16-mixed":
        return torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


def _step(
    lit: Any,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    step: int,
    precision: str = "32-true",
) -> None:
    from ablate.lit_modules.systems.classifier import train_losses

    with _autocast(precision):
        logits = lit.model(batch["input_ids"], batch["attention_mask"], key=(lit.seeds[0], step)).logits
        loss = train_losses(logits, batch["labels"])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(lit.parameters()), lit.optim_cfg.grad_clip or 1e9)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def measure(
    name: str, path: str, overrides: list[str], steps: int, breakdown: bool, precision: str = "32-true"
) -> dict[str, Any]:
    cfg, lit, batches = _setup(path, overrides)
    optimizer = lit.configure_optimizers()["optimizer"]
    torch.use_deterministic_algorithms(cfg.trainer.deterministic)
    lit.train()
    with FlopCounterMode(display=False) as counter:
        logits = lit.model(batches[0]["input_ids"], batches[0]["attention_mask"], key=(0, 0)).logits
        logits.float().logsumexp(-1).sum().backward()
    lit.zero_grad(set_to_none=True)
    flops = counter.get_total_flops()
    for i in range(5):  # warm-up: allocations, lazy init, the native dropout's first call
        _step(lit, optimizer, batches[i % len(batches)], i, precision)
    times = []
    for i in range(steps):
        t = time.perf_counter()
        _step(lit, optimizer, batches[i % len(batches)], i, precision)
        times.append(time.perf_counter() - t)
    out: dict[str, Any] = {
        "config": " ".join([path, *overrides]),
        "batch": list(batches[0]["input_ids"].shape),
        "step_flops": flops,
        "step_s": statistics.median(times),
        "precision": precision,
    }
    if breakdown:
        out["breakdown_ms"] = profile(lit, optimizer, batches, precision)
    return out


KINDS = {
    "matmul": ("aten::addmm", "aten::mm", "aten::bmm", "aten::matmul", "aten::linear", "aten::baddbmm"),
    "attention": ("aten::_scaled_dot_product", "aten::scaled_dot_product", "aten::softmax", "aten::_softmax"),
    "dropout masks": ("keep_mask", "aten::bitwise", "aten::__rshift__", "aten::__xor__", "aten::bitwise_xor"),
    "optimizer": ("Optimizer.step", "aten::_foreach", "aten::addcdiv", "aten::lerp"),
}


def profile(
    lit: Any,
    optimizer: torch.optim.Optimizer,
    batches: list[dict[str, torch.Tensor]],
    precision: str = "32-true",
) -> dict[str, float]:
    """Self CPU time per kind of operator over 10 steps, in ms per step."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(10):
            _step(lit, optimizer, batches[i % len(batches)], i, precision)
    totals = dict.fromkeys([*KINDS, "other"], 0.0)
    for e in prof.key_averages():
        kind = next((k for k, names in KINDS.items() if any(e.key.startswith(n) for n in names)), "other")
        totals[kind] += e.self_cpu_time_total / 1000 / 10
    return {k: round(v, 2) for k, v in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.step", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--steps", type=int, default=40, help="timed steps per config (default 40)")
    parser.add_argument("--breakdown", action="store_true", help="also where the time goes (profiler)")
    parser.add_argument("--only", choices=list(CONFIGS), help="one config (default: all three)")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="32-true", help="the step's precision (default 32-true)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    peak = matmul_peak()
    results: dict[str, Any] = {"matmul_peak_flops": peak, "torch": torch.__version__, "tasks": {}}
    for name, (path, overrides) in CONFIGS.items():
        if args.only and name != args.only:
            continue
        r = measure(name, path, overrides, args.steps, args.breakdown, args.precision)
        r["fraction_of_peak"] = r["step_flops"] / r["step_s"] / peak
        results["tasks"][name] = r
        line = (
            f"{name:13s} {args.precision:10s} {r['step_flops'] / 1e9:6.3f} GFLOP/step  {r['step_s'] * 1000:7.2f} ms/step  "
            f"{r['step_flops'] / r['step_s'] / 1e9:6.1f} GFLOP/s  {r['fraction_of_peak']:.2f} of peak"
        )
        print(line + (f"  {r['breakdown_ms']}" if args.breakdown else ""), flush=True)
    print(f"single-core matmul peak: {peak / 1e9:.1f} GFLOP/s (torch {torch.__version__})")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
