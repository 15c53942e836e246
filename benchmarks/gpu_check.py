"""GPU readiness check, run by ``benchmarks/gpu_check.sh`` (a few minutes on one GPU).

Prints and writes (``--out``, JSON):
- tokens/s and MFU of the bf16-autocast training step at batch 64 and 1024 (``benchmarks.gpu``);
- which fused SDPA kernels accept the encoder's key mask in bf16 (flash, memory-efficient);
- the seed-parallel speed-up of real Lightning runs: member-steps/s of ``run_cells`` with ``trainer.seed_parallel=K``
  with K = 8 and 32 / member-steps/s of ``run_trial`` runs one after another (``--sequential``
  of them: the sequential rate does not depend on K);
- the cost of ``trainer.compile=true`` (fit time with and without, same steps).

``--smoke`` runs everything tiny on the CPU (a test of this script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from ablate.benchmarks.gpu import gpu_throughput
from ablate.benchmarks.loop import FitTimer
from ablate.benchmarks.seed_parallel import sequential_steps_s, stacked_steps_s
from ablate.datamodules import ClassificationDataModule
from ablate.experiments.runner.cells import quiet_lightning, run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.loading import load_config
from ablate.lit_modules.model.encoder import EncoderClassifier

CONFIG = "experiments/configs/order.yaml"


def fused_kernels(cfg: TrainConfig) -> dict[str, str]:
    """Run one bf16 forward + backward restricted to each fused SDPA backend: 'ok' or the error."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    model = EncoderClassifier(cfg.model, vocab_size=32, n_classes=2).cuda()
    ids = torch.randint(1, 32, (8, 32), device="cuda")
    mask = torch.ones(8, 32, dtype=torch.bool, device="cuda")
    mask[:4, 24:] = False  # padded rows: the key mask is a real mask
    out = {}
    for name, backend in (
        ("flash", SDPBackend.FLASH_ATTENTION),
        ("efficient", SDPBackend.EFFICIENT_ATTENTION),
    ):
        try:
            with sdpa_kernel(backend), torch.autocast("cuda", dtype=torch.bfloat16):
                model(ids, mask).logits.float().sum().backward()
            out[name] = "ok"
        except RuntimeError as err:  # the backend refuses this mask / dtype / head size
            out[name] = str(err).splitlines()[0][:160]
    return out


def compile_cost(cfg: TrainConfig, dm: ClassificationDataModule) -> dict[str, float | str]:
    fit = {}
    for compiled in (False, True):
        timer = FitTimer()
        try:
            run_trial(cfg.override({"trainer.compile": compiled}), datamodule=dm, callbacks=[timer])
        except Exception as err:  # report, do not hide: the check goes on
            return {"error": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}
        fit["compiled" if compiled else "eager"] = timer.train_s
    return {
        "eager_fit_s": fit["eager"],
        "compiled_fit_s": fit["compiled"],
        "compile_cost_s": fit["compiled"] - fit["eager"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablate.benchmarks.gpu_check")
    parser.add_argument("--smoke", action="store_true", help="tiny, on the CPU: tests this script")
    parser.add_argument("--ks", default="8,32", help="seed-parallel member counts (default 8,32)")
    parser.add_argument("--steps", type=int, default=300, help="training steps per run (default 300)")
    parser.add_argument("--sequential", type=int, default=4, help="runs timed one after another")
    parser.add_argument("--out", default="gpu_check.json")
    args = parser.parse_args(argv)
    quiet_lightning()
    console = Console(stderr=True)
    cuda = torch.cuda.is_available()
    if not cuda and not args.smoke:
        console.print("no CUDA device: run on a GPU machine, or pass --smoke to test this script on the CPU")
        return 2
    ks = [2] if args.smoke else [int(k) for k in args.ks.split(",")]
    steps = 5 if args.smoke else args.steps
    data = ["data.n_train=2000", "data.n_val=200", "data.n_test=200"] if args.smoke else []
    cfg = load_config(CONFIG, [*data, f"trainer.max_steps={steps}", "trainer.val_every=0"])
    dm = ClassificationDataModule(cfg.data, shuffle_seed=0)
    dm.prepare_data()
    dm.setup("fit")
    t0 = time.perf_counter()
    report: dict = {
        "device": torch.cuda.get_device_name() if cuda else "cpu (smoke)",
        "torch": torch.__version__,
    }
    console.print("throughput ...")
    report["throughput"] = (
        gpu_throughput(cfg.model, batch_sizes=(64, 1024), steps=100, warmup=20)
        if cuda
        else {"available": False}
    )
    report["fused_sdpa"] = fused_kernels(cfg) if cuda else {}
    console.print("seed-parallel ...")
    stacked_steps_s(cfg.override({"trainer.max_steps": 3}), dm, 2)  # warm up (CUDA context, kernels)
    sequential = sequential_steps_s(cfg, dm, 1 if args.smoke else args.sequential)
    report["sequential_member_steps_s"] = sequential
    report["seed_parallel"] = []
    for k in ks:
        rate = stacked_steps_s(cfg, dm, k)
        report["seed_parallel"].append({"k": k, "member_steps_s": rate, "speedup": rate / sequential})
    console.print("compile ...")
    report["compile"] = compile_cost(cfg, dm) if cuda else {}
    report["wall_s"] = time.perf_counter() - t0
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print_report(report)
    return 0


def print_report(r: dict) -> None:
    table = Table(title=f"GPU check: {r['device']}, torch {r['torch']}, {r['wall_s']:.0f} s")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for run in r["throughput"].get("runs", []):
        mfu = "n/a" if run["mfu"] is None else f"{run['mfu']:.2%}"
        table.add_row(f"batch {run['batch']} bf16", f"{run['tokens_s']:.3g} tok/s, MFU {mfu}")
    for name, status in r["fused_sdpa"].items():
        table.add_row(f"fused SDPA {name}", status)
    table.add_row("sequential runs", f"{r['sequential_member_steps_s']:.1f} steps/s")
    for sp in r["seed_parallel"]:
        table.add_row(
            f"seed-parallel K={sp['k']}", f"{sp['member_steps_s']:.1f} member-steps/s = {sp['speedup']:.2f}x"
        )
    for key, value in r["compile"].items():
        table.add_row(f"compile: {key}", f"{value:.1f}" if isinstance(value, float) else str(value))
    Console(width=140).print(table)


if __name__ == "__main__":
    sys.exit(main())
