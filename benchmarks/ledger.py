"""Load test of the cell ledger: ``python -m ablate.benchmarks.ledger [--cells N] [--workers W]``.

``W`` worker processes claim and complete ``N`` empty cells (a no-op body) through the same
calls a sweep worker makes per cell (``CellStore.claim``, as ``claim_group`` in
sweeps/drivers/worker.py, then ``tell``), on SQLite, an Optuna journal file and PostgreSQL (a throwaway
server as the fault tests start; skipped with a line saying so when its binaries are absent).
Per backend: cells/s, the claim latency p50/p99 and duplicates (cells completed more than
once, which must be 0). Writes benchmarks/results/ledger.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.synchronize
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json

RESULTS = Path(__file__).resolve().parent / "results" / "ledger.json"
FORK = multiprocessing.get_context("fork")


def ledger_spec(cells: int) -> ExperimentSpec:
    """Two variants x cells/2 seeds; nothing is ever trained."""
    variants = {"baseline": {}, "other": {"model.pe": "none"}}
    return spec_from_dict({"name": "ledger", "base": {}, "variants": variants, "seeds": max(1, cells // 2)})


def _worker(spec: ExperimentSpec, url: str, start: multiprocessing.synchronize.Barrier, out: str) -> None:
    """Claim and complete cells until none is left; write the claim latencies and cells won."""
    from ablate.sweeps.ledger.cells import open_store

    store = open_store(spec, url)
    latencies, won = [], []
    start.wait()
    while True:
        t0 = time.perf_counter()
        trial = store.claim()
        if trial is not None:  # a claim's latency, lost races inside it included
            latencies.append(time.perf_counter() - t0)
        if trial is None:
            if not store.unfinished():
                break
            time.sleep(0.05)  # another worker's cell is still running
            continue
        won.append(trial.user_attrs["cell"])
        store.study.tell(trial, 0.0)  # the empty cell body
    Path(out).write_text(json.dumps({"latencies": latencies, "won": won, "end": time.time()}))


def measure(url: str, spec: ExperimentSpec, workers: int, scratch: Path) -> dict[str, Any]:
    """One backend: enqueue the cells, then time ``workers`` processes emptying the ledger."""
    from ablate.sweeps.ledger.cells import open_store

    store = open_store(spec, url, create=True)
    store.ensure_cells()
    if hasattr(store.storage, "engine"):
        store.storage.engine.dispose()  # no connection may cross the fork
    start = FORK.Barrier(workers + 1)
    outs = [scratch / f"worker{i}.json" for i in range(workers)]
    procs = [FORK.Process(target=_worker, args=(spec, url, start, str(o))) for o in outs]
    for p in procs:
        p.start()
    start.wait()
    began = time.time()
    for p in procs:
        p.join()
    if any(p.exitcode for p in procs):
        raise RuntimeError(f"a ledger worker failed on {url}")
    results = [json.loads(o.read_text()) for o in outs]
    wall = max(r["end"] for r in results) - began
    claims = sorted(x for r in results for x in r["latencies"])
    won = Counter(c for r in results for c in r["won"])
    complete = Counter(
        t.user_attrs["cell"] for t in open_store(spec, url).study.get_trials() if t.state.name == "COMPLETE"
    )
    return {
        "cells": len(spec.cells()),
        "workers": workers,
        "wall_s": round(wall, 2),
        "cells_per_s": round(len(spec.cells()) / wall, 1),
        "claim_p50_ms": round(1000 * statistics.quantiles(claims, n=100)[49], 1),
        "claim_p99_ms": round(1000 * statistics.quantiles(claims, n=100)[98], 1),
        "duplicates": sum(n - 1 for n in won.values()) + sum(n - 1 for n in complete.values()),
        "complete": len(complete),
    }


@contextmanager
def postgres(root: Path) -> Iterator[str | None]:
    """A throwaway server's URL, or None when PostgreSQL's binaries are not installed."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests/ folder
    from tests.helpers.postgres import pg_bin, postgres_server

    if pg_bin("pg_ctl") is None:
        yield None
        return
    with postgres_server(root) as url:
        yield url


def run(cells: int, workers: int, backends: list[str]) -> dict[str, Any]:
    spec = ledger_spec(cells)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ablate-ledger-") as tmp:
        root = Path(tmp)
        for backend in backends:
            scratch = root / backend
            scratch.mkdir()
            if backend == "postgresql":
                with postgres(root / "pg") as url:
                    if url is None:
                        print("postgresql: skipped (no PostgreSQL binaries; apt-get install postgresql)")
                        out[backend] = {"skipped": "PostgreSQL binaries not found"}
                        continue
                    out[backend] = measure(url, spec, workers, scratch)
            else:
                url = (
                    f"sqlite:///{scratch / 'study.db'}"
                    if backend == "sqlite"
                    else f"journal:{scratch / 'j.log'}"
                )
                out[backend] = measure(url, spec, workers, scratch)
            print(f"{backend}: {out[backend]}", flush=True)
    return out


def table(results: dict[str, Any]) -> str:
    lines = [
        "| backend | cells | workers | cells/s | claim p50 (ms) | claim p99 (ms) | duplicates |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        if "skipped" in r:
            lines.append(f"| {name} | skipped: {r['skipped']} | | | | | |")
            continue
        lines.append(
            f"| {name} | {r['cells']} | {r['workers']} | {r['cells_per_s']} | {r['claim_p50_ms']} "
            f"| {r['claim_p99_ms']} | {r['duplicates']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.ledger", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cells", type=int, default=2000, help="empty cells to claim (default 2000)")
    parser.add_argument("--workers", type=int, default=8, help="worker processes (default 8)")
    parser.add_argument(
        "--backends", default="sqlite,journal,postgresql", help="comma-separated (default all three)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    args = parser.parse_args(argv)
    backends = args.backends.split(",")
    unknown = sorted(set(backends) - {"sqlite", "journal", "postgresql"})
    if unknown or not 2 <= args.cells <= 1_000_000 or not 1 <= args.workers <= 256:
        parser.error(
            "--cells in [2, 1000000], --workers in [1, 256], --backends among sqlite,journal,postgresql"
        )
    results = run(args.cells, args.workers, backends)
    write_json(args.out, {"cells": args.cells, "workers": args.workers, "backends": results})
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
