"""``python -m ablate.benchmarks.precision RUNS_FP32 RUNS_OTHER``: how far another precision moves
the results.

For every sweep run folder in both parent folders (same experiment name; made with the same
spec but for ``trainer.precision``, e.g. ``ablate reproduce remove-pe-single-head
trainer.precision=bf16-mixed --runs RUNS_OTHER``), over the complete cells both hold: per metric,
how many cells are bit-identical, the median and the largest |difference| (other - fp32) and the
median difference; per comparison, each side's decision (better, worse, or not distinguishable:
``p_holm`` <= ALPHA and the sign of ``delta``, what the verdict sentence says) and whether they
agree; and the cells' median wall-time ratio (meaningful only when both runs ran alone on the
same machine). ``--json`` prints the same as one object. Exits 0 when every decision agrees,
1 when one does not, 2 on a folder that is not a run folder.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.sweeps.ledger.run_folder import read_summary
from ablate.sweeps.stats.inference import ALPHA
from ablate.sweeps.stats.rows import CELL_COLUMNS  # results.csv's columns before the metrics


def complete_cells(run_dir: Path) -> dict[tuple[str, str], dict[str, str]]:
    """(variant, seed) -> its results.csv row, for the complete cells."""
    with (run_dir / "results.csv").open(newline="") as f:
        return {(r["variant"], r["seed"]): r for r in csv.DictReader(f) if r["state"] == "complete"}


def decision(stats: dict[str, Any]) -> str:
    """What the verdict says of one comparison: better, worse or not distinguishable."""
    p, delta = stats.get("p_holm"), stats.get("delta")
    if p is None or delta is None or p > ALPHA or delta == 0:
        return "not distinguishable"
    return "better" if (delta > 0) == (stats.get("direction") in ("maximize", "max")) else "worse"


def compare_one(fp32: Path, other: Path) -> dict[str, Any]:
    a, b = complete_cells(fp32), complete_cells(other)
    both = sorted(set(a) & set(b))
    metrics = (
        [k for k in next(iter(a.values()), {}) if k not in CELL_COLUMNS and a[both[0]].get(k)] if both else []
    )
    per_metric = {}
    for m in metrics:
        d = [float(b[c][m]) - float(a[c][m]) for c in both if a[c].get(m) and b[c].get(m)]
        per_metric[m] = {
            "cells": len(d),
            "identical": sum(x == 0 for x in d),
            "median_abs": statistics.median(abs(x) for x in d),
            "max_abs": max(abs(x) for x in d),
            "median": statistics.median(d),
        }
    sa, sb = read_summary(fp32), read_summary(other)
    comparisons = {}
    for name, stats in sa["variants"].items():
        if name == sa["baseline"] or name not in sb["variants"]:
            continue
        da = decision({**stats, "direction": sa.get("direction")})
        db = decision({**sb["variants"][name], "direction": sb.get("direction")})
        comparisons[name] = {
            "fp32": da,
            "other": db,
            "agree": da == db,
            "p_holm": [stats.get("p_holm"), sb["variants"][name].get("p_holm")],
        }
    walls = [float(b[c]["wall_s"]) / float(a[c]["wall_s"]) for c in both if a[c]["wall_s"] and b[c]["wall_s"]]
    return {
        "metric": sa.get("metric"),
        "cells": len(both),
        "metrics": per_metric,
        "comparisons": comparisons,
        "wall_ratio_median": statistics.median(walls) if walls else None,
        "numerics": sorted({b[c]["numerics"] for c in both}),
    }


def compare(runs_fp32: Path, runs_other: Path) -> dict[str, dict[str, Any]]:
    names = sorted(
        p.name
        for p in runs_fp32.iterdir()
        if (p / "summary.json").is_file() and (runs_other / p.name / "summary.json").is_file()
    )
    return {name: compare_one(runs_fp32 / name, runs_other / name) for name in names}


def render(result: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, r in result.items():
        lines.append(f"{name}: {r['cells']} cells in both; other side's numerics: {'; '.join(r['numerics'])}")
        for m, s in r["metrics"].items():
            lines.append(
                f"  {m:10s} identical {s['identical']}/{s['cells']}  median |Δ| {s['median_abs']:.4g}  "
                f"max |Δ| {s['max_abs']:.4g}  median Δ {s['median']:+.4g}"
            )
        for v, c in r["comparisons"].items():
            mark = "agree" if c["agree"] else "DIFFER"
            p = ", ".join("–" if x is None else f"{x:.4g}" for x in c["p_holm"])
            lines.append(
                f"  {v} vs baseline ({r['metric']}): fp32 {c['fp32']}, other {c['other']} ({mark}; p Holm {p})"
            )
        if r["wall_ratio_median"] is not None:
            lines.append(f"  cell wall time, median ratio other/fp32: {r['wall_ratio_median']:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.precision", description=__doc__.splitlines()[0]
    )
    parser.add_argument("runs_fp32", type=Path)
    parser.add_argument("runs_other", type=Path)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args(argv)
    try:
        result = compare(args.runs_fp32, args.runs_other)
    except (ConfigError, OSError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not result:
        print("no run folder with a summary.json in both", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0 if all(c["agree"] for r in result.values() for c in r["comparisons"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
