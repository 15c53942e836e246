"""``python -m ablate.benchmarks [--quick] [--out benchmarks/results.json]``: performance ratios.

Every ratio is measured side by side in one process, the two sides interleaved
(A B B A A B ...) with medians taken, so background load hits both equally:

- ``encoder_vs_torch`` (target >= 1.0): training steps/s (forward + backward + AdamW, CPU,
  warmup excluded) of our ``EncoderClassifier`` / the same classifier built on
  ``torch.nn.TransformerEncoder`` (d_model 64, 4 heads, d_ff 128, 2 layers, dropout 0.1,
  Pre-LN, batch 64, 33 tokens; same embedding, [CLS] pooling and head).
- ``lightning_vs_raw`` (target >= 0.95): ``run_trial``'s fit-loop steps/s / a plain PyTorch
  loop over the same LitClassifier, train loader, AdamW + schedule and clipping, at
  ``experiments/configs/order.yaml`` with 300 steps; data cached first, validation excluded.
- ``seed_parallel_speedup`` (target >= 2): member training steps/s of ``run_cells`` with ``trainer.seed_parallel=K``
  with K = 5 seeds / the same 5 seeds run one after another with ``run_trial``, fit loops only,
  at ``experiments/configs/order.yaml`` with 60 steps (``--k`` changes K).
- ``cell_overhead`` (target <= 5 %): (wall time of one process that runs ``ablate train
  experiments/configs/order.yaml`` 5 times, as a sweep worker runs a variant's 5 seeds - the fit loops
  and final evaluations) / wall time: the fixed cost of process start, imports, data load from
  cache, Trainer setup and writing outputs. ``details.cell_overhead.single_cell_ratio`` is the
  same for the first cell alone (one ``ablate train``, imports included).

Also: each main-job task's training step against this core's peak (benchmarks/step.py: FLOPs
counted by FlopCounterMode, the one-thread matmul peak measured beside it), peak RSS of the
training process, and on a GPU tokens/s, MFU (6·N + 12·L·d·T FLOPs per
token against the dense bf16 peak) and ``torch.cuda.max_memory_allocated``. ``--quick``
shrinks every measurement (about a minute; used by the tests): its numbers are smoke, not data.
Timings use one torch thread per process (``--threads``), in the benchmark and in the cell
subprocess alike: on a loaded 2-core machine two threads measure only their contention.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from ablate.benchmarks.cell import cell_overhead
from ablate.benchmarks.encoder import encoder_vs_torch
from ablate.benchmarks.gpu import gpu_throughput
from ablate.benchmarks.loop import lightning_vs_raw
from ablate.benchmarks.seed_parallel import seed_parallel_speedup
from ablate.benchmarks.step import CONFIGS as STEP_CONFIGS
from ablate.benchmarks.step import matmul_peak
from ablate.benchmarks.step import measure as measure_step
from ablate.experiments.runner.cells import quiet_lightning
from ablate.experiments.specs.loading import load_config

CONFIG = "experiments/configs/order.yaml"
TARGETS = {
    "encoder_vs_torch": (">=", 1.0),
    "lightning_vs_raw": (">=", 0.95),
    "seed_parallel_speedup": (">=", 2.0),
    "cell_overhead": ("<=", 0.05),
}
# --quick: a small data set (generated in seconds into a fresh cache) and a few steps.
QUICK_DATA = ["data.n_train=2000", "data.n_val=200", "data.n_test=200"]


def run(quick: bool, threads: int, k: int) -> dict:
    console = Console(stderr=True)
    quiet_lightning()
    torch.set_num_threads(threads)
    data = QUICK_DATA if quick else []
    results: dict = {
        "quick": quick,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "targets": TARGETS,
    }

    console.print("encoder_vs_torch ...")
    enc = (
        encoder_vs_torch(steps=5, rounds=3, warmup=2)
        if quick
        else encoder_vs_torch(steps=30, rounds=9, warmup=10)
    )
    console.print("lightning_vs_raw ...")
    steps = 20 if quick else 300
    cfg = load_config(CONFIG, [*data, f"trainer.max_steps={steps}"])
    loop = lightning_vs_raw(cfg, rounds=2 if quick else 4)
    console.print(f"seed_parallel_speedup (K={k}) ...")
    sp_cfg = load_config(CONFIG, [*data, f"trainer.max_steps={5 if quick else 60}"])
    sp = seed_parallel_speedup(sp_cfg, k=2 if quick else k, rounds=1 if quick else 3)
    console.print("cell_overhead ...")
    cell = cell_overhead(
        CONFIG,
        [*data, "trainer.max_steps=40", "trainer.val_every=20"] if quick else [],
        threads=threads,
        cells=2 if quick else 5,
    )
    console.print("step vs peak ...")
    peak = matmul_peak(repeats=2 if quick else 5)
    step = {"matmul_peak_flops": peak, "tasks": {}}
    for name, (path, overrides) in STEP_CONFIGS.items():
        r = measure_step(name, path, [*overrides, *data], 5 if quick else 40, breakdown=False)
        step["tasks"][name] = {**r, "fraction_of_peak": r["step_flops"] / r["step_s"] / peak}
    console.print("gpu ...")
    gpu = gpu_throughput(
        cfg.model,
        batch_sizes=(64, 1024) if not quick else (64,),
        steps=10 if quick else 100,
        warmup=3 if quick else 20,
    )

    results.update(
        {
            "encoder_vs_torch": enc["ratio"],
            "lightning_vs_raw": loop["ratio"],
            "seed_parallel_speedup": sp["ratio"],
            "cell_overhead": cell["ratio"],
            "details": {
                "encoder_vs_torch": enc,
                "lightning_vs_raw": loop,
                "seed_parallel_speedup": sp,
                "cell_overhead": cell,
            },
            "memory": {
                "train_process_peak_rss_mb": cell["peak_rss_mb"],
                "benchmark_process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            },
            "gpu": gpu,
            "step": step,
        }
    )
    return results


def print_table(r: dict) -> None:
    console = Console() if Console().is_terminal else Console(width=140)
    table = Table(title="benchmarks" + (" (--quick: smoke numbers)" if r["quick"] else ""))
    for col in ("measure", "value", "target", "met", "detail"):
        table.add_column(col, justify="left" if col in ("measure", "detail") else "right")
    d = r["details"]
    detail = {
        "encoder_vs_torch": f"{d['encoder_vs_torch']['ours_steps_s']:.1f} vs {d['encoder_vs_torch']['torch_steps_s']:.1f} steps/s",
        "lightning_vs_raw": f"{d['lightning_vs_raw']['lightning_steps_s']:.1f} vs {d['lightning_vs_raw']['raw_steps_s']:.1f} steps/s",
        "seed_parallel_speedup": f"K={d['seed_parallel_speedup']['k']}: "
        f"{d['seed_parallel_speedup']['stacked_member_steps_s']:.1f} vs "
        f"{d['seed_parallel_speedup']['sequential_member_steps_s']:.1f} member-steps/s",
        "cell_overhead": f"{d['cell_overhead']['overhead_s']:.1f} s of {d['cell_overhead']['total_s']:.1f} s "
        f"for {d['cell_overhead']['cells']} cells (first cell alone: "
        f"{d['cell_overhead']['single_cell_ratio']:.1%}, {d['cell_overhead']['before_first_fit_s']:.1f} s before its fit)",
    }
    for name, (op, target) in TARGETS.items():
        value = r[name]
        met = value >= target if op == ">=" else value <= target
        shown = f"{value:.1%}" if name == "cell_overhead" else f"{value:.3f}"
        table.add_row(name, shown, f"{op} {target:g}", "yes" if met else "[red]no", detail[name])
    m = r["memory"]
    table.add_row(
        "peak RSS, training process", f"{m['train_process_peak_rss_mb']:.0f} MB", "", "", "ru_maxrss"
    )
    s = r["step"]
    for name, e in s["tasks"].items():
        table.add_row(
            f"step vs peak, {name}",
            f"{e['fraction_of_peak']:.2f}",
            "",
            "",
            f"{e['step_flops'] / 1e9:.3f} GFLOP in {e['step_s'] * 1000:.1f} ms against a "
            f"{s['matmul_peak_flops'] / 1e9:.0f} GFLOP/s one-thread matmul peak",
        )
    gpu = r["gpu"]
    if not gpu["available"]:
        table.add_row("GPU", "no GPU", "", "", "tokens/s and MFU skipped")
    for g in gpu.get("runs", []):
        mfu = "null" if g["mfu"] is None else f"{g['mfu']:.2%}"
        table.add_row(
            f"GPU batch {g['batch']}",
            f"{g['tokens_s']:.3g} tok/s",
            "",
            "",
            f"MFU {mfu}, {g['max_memory_allocated_mb']:.0f} MB max allocated, {gpu['device']}",
        )
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablate.benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shrink everything (about a minute)")
    parser.add_argument("--out", default="benchmarks/results.json", help="JSON output path")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a shared 2-core machine more threads only "
        "measure contention; a sweep worker gets cores // workers)",
    )
    parser.add_argument("--k", type=int, default=5, help="members for seed_parallel_speedup (default 5)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    results = run(args.quick, args.threads, args.k)
    results["wall_s"] = time.perf_counter() - t0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
