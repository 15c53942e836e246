"""``python -m ablate.benchmarks.op_trace``: where two machines' (or two pins') floats part.

One training step of a main-job task (the baseline config of ``benchmarks/step.py``'s
``CONFIGS``: the first batch, forward, backward, clipping, AdamW; what ``LitClassifier`` runs),
with its inputs (phase ``init``: every initial parameter and the batch) and every ATen operator's
output recorded under a ``TorchDispatchMode``: its phase (forward, backward, optimizer),
operator, shape, dtype, a hash of its bytes and its sum. Two traces of the
same task compared op by op name the **first operator whose output differs**: every earlier output
being bit-identical, that operator computed other bits from the same inputs, so it is where the
two numerics part (its kernel, not the data, differs).

    python -m ablate.benchmarks.op_trace --task multi-lookup --isa default --out trace.json
    python -m ablate.benchmarks.op_trace --task multi-lookup --isa default --against trace.json

``--isa`` pins the process as ``trainer.cpu_isa`` does (it restarts itself with the variables);
``--threads`` (default 1, as the main job's cells) fixes the reduction order. The trace records
the machine's numerics (``experiments/schema/machine.py``) beside the ops.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ablate.benchmarks.step import CONFIGS, _setup
from ablate.errors import ConfigError
from ablate.experiments.schema.machine import (
    CPU_ISAS,
    check_isa,
    isa_env,
    numerics_key,
    numerics_record,
    require_pinned,
)


def digest(t: torch.Tensor) -> tuple[str, float | None]:
    """A tensor's bytes hashed (16 hex digits, sha256) and, for a float tensor, its sum in float64."""
    flat = t.detach().contiguous().reshape(-1)  # reshape: a 0-dim tensor cannot be viewed as bytes
    h = hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()[:16]
    return h, (float(flat.double().sum()) if flat.is_floating_point() else None)


PHASES = ("init", "forward", "backward", "optimizer")


class OpRecorder(TorchDispatchMode):
    """Every tensor an ATen operator returns, in call order, as ``[phase, op, shape, dtype, hash,
    sum]``; ``phase`` is whatever the caller set last."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "forward"
        self.ops: list[list[Any]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.ops.append(
                    [
                        self.phase,
                        str(func.overloadpacket.__name__),
                        list(t.shape),
                        str(t.dtype)[6:],
                        *digest(t),
                    ]
                )
        return out


def trace(path: str, overrides: list[str]) -> list[list[Any]]:
    """The ops of one training step of the config at ``path`` (see the module's docstring)."""
    from ablate.lit_modules.systems.classifier import train_losses

    cfg, lit, batches = _setup(path, overrides)
    torch.use_deterministic_algorithms(cfg.trainer.deterministic)
    optimizer = lit.configure_optimizers()["optimizer"]
    lit.train()
    batch = batches[0]
    rec = OpRecorder()
    # The step's inputs first: initial parameters (drawn by the CPU's random kernels) and batch.
    named = [
        *((f"param {n}", p) for n, p in lit.named_parameters()),
        *((f"batch {k}", v) for k, v in batch.items()),
    ]
    rec.ops = [["init", name, list(t.shape), str(t.dtype)[6:], *digest(t)] for name, t in named]
    with rec:
        logits = lit.model(batch["input_ids"], batch["attention_mask"], key=(lit.seeds[0], 0)).logits
        loss = train_losses(logits, batch["labels"])
        rec.phase = "backward"
        loss.backward()
        rec.phase = "optimizer"
        torch.nn.utils.clip_grad_norm_(list(lit.parameters()), lit.optim_cfg.grad_clip or 1e9)
        optimizer.step()
    return rec.ops


def first_difference(a: list[list[Any]], b: list[list[Any]]) -> dict[str, Any] | None:
    """Where trace ``b`` parts from trace ``a``: the first op whose name, shape or bytes differ
    (None when identical), with how many ops differ in all and per phase."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x[:4] != y[:4]:
            return {"index": i, "kind": "another op sequence", "a": x, "b": y}
        if x[4] != y[4]:
            differ = [j for j, (p, q) in enumerate(zip(a, b, strict=False)) if p[4] != q[4]]
            phases = {ph: sum(1 for j in differ if a[j][0] == ph) for ph in PHASES}
            return {
                "index": i,
                "kind": "other bits",
                "a": x,
                "b": y,
                "n_differ": len(differ),
                "by_phase": phases,
            }
    if len(a) != len(b):
        return {"index": min(len(a), len(b)), "kind": "another op count", "a": len(a), "b": len(b)}
    return None


def describe(diff: dict[str, Any] | None, n_ops: int) -> str:
    if diff is None:
        return f"identical: all {n_ops} op outputs bit-identical"
    if diff["kind"] == "another op count":
        return f"the op sequences have other lengths ({diff['a']} vs {diff['b']} ops)"
    phase, op, shape, dtype = diff["a"][:4]
    where = f"op {diff['index']} of {n_ops} ({phase}: {op} -> {dtype}{shape})"
    if diff["kind"] == "another op sequence":
        return f"the op sequences part at {where}: the other trace ran {diff['b'][1]} -> {diff['b'][3]}{diff['b'][2]}"
    sums = f"sum {diff['a'][5]!r} vs {diff['b'][5]!r}" if diff["a"][5] is not None else "non-float output"
    phases = ", ".join(f"{k} {v}" for k, v in diff["by_phase"].items())
    return (
        f"first difference at {where}, every earlier output bit-identical; {sums}; "
        f"{diff['n_differ']} of {n_ops} outputs differ ({phases})"
    )


def _pin(isa: str, argv: list[str]) -> None:
    """Restart this process pinned to ``isa`` unless it already runs so (as ``ablate train`` does)."""
    check_isa(isa)
    want = isa_env(isa)
    if any(os.environ.get(k) != v for k, v in want.items()):
        os.execve(
            sys.executable,
            [sys.executable, "-m", "ablate.benchmarks.op_trace", *argv],
            {**os.environ, **want},
        )
    require_pinned(isa)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.op_trace", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--task", choices=list(CONFIGS), default="multi-lookup", help="(default multi-lookup)"
    )
    parser.add_argument("--config", help="a train config of your own instead of --task")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of --config")
    parser.add_argument(
        "--isa", choices=CPU_ISAS, default="native", help="pin as trainer.cpu_isa does (default native)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1, as the main job's cells)"
    )
    parser.add_argument("--out", type=Path, help="write the trace as JSON")
    parser.add_argument("--against", type=Path, help="a trace of the same task to compare with")
    args = parser.parse_args(argv)
    try:
        _pin(args.isa, argv)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    path, overrides = (
        (str(Path(args.config).resolve()), args.overrides) if args.config else CONFIGS[args.task]
    )
    task = args.config or args.task
    ops = trace(path, overrides)
    record = numerics_record()
    print(
        f"{task}, cpu_isa={args.isa}, {args.threads} thread(s): {len(ops)} op outputs; {numerics_key(record)}"
    )
    if args.out:
        doc = {"task": task, "config": [path, *overrides], "cpu_isa": args.isa, "threads": args.threads,
               "numerics": record, "ops": ops}  # fmt: skip
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    if args.against:
        other = json.loads(args.against.read_text())
        if other["task"] != task:
            print(f"error: {args.against} traces {other['task']}, not {task}", file=sys.stderr)
            return 2
        print(f"against {args.against} ({numerics_key(other['numerics'])}):")
        diff = first_difference(other["ops"], ops)
        print("  " + describe(diff, len(ops)))
        return 0 if diff is None else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
