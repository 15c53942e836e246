"""The README tables' per-variant learning-rate rows, their companion runs, and cell times.

``ablate lr-check`` runs an experiment again with its base learning rate
scaled by each factor (runs/<experiment>-lr0.5x/, runs/<experiment>-lr2x/). Here each variant
gets the factor (×1 being the shared-lr run) whose median ``val/acc`` over seeds is highest, so
the test split never chooses; ties go to ×1, then to the smaller factor. The chosen runs'
per-seed test values then get the shared rows' statistics (sweeps/stats/summary.py): Δ against the
baseline at the baseline's own chosen factor, paired on seeds when the variant's seeds index the
same data (a learning rate changes no data), and Holm over these comparisons.
``ablate search --then-evaluate`` writes runs/<experiment>-tuned/, a grid study of its own.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ablate.sweeps.drivers.lr_check import SHARED, lr_run_name
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import Cell, adjust, collect, pairing, variant_stats
from ablate.trees import flatten

SELECT_METRIC = "val/acc"  # what chooses a variant's factor (validation only)
LR_LABEL, TUNED_LABEL = "per-variant lr", "tuned by ablate search"  # first column of their rows
LR_SUFFIX = re.compile(r"-lr(?P<factor>\d+(?:\.\d+)?)x$")  # heads-lr0.5x -> 0.5


# ---- run names --------------------------------------------------------------------------------


def factor_label(factor: float) -> str:
    return f"lr ×{factor:g}"


def tuned_run_name(experiment: str) -> str:
    return f"{experiment}-tuned"  # what ablate search --then-evaluate names its grid


def companions(experiment: str, present: set[str]) -> tuple[dict[float, str], str | None]:
    """The lr check's runs (factor -> run name, by factor) and the search-tuned run among the run
    names ``present``; only the names lr_check and ablate search write count (not ``-lr2.0x``)."""
    lr = {}
    for name in present:
        m = LR_SUFFIX.search(name)
        factor = float(m["factor"]) if m else None
        if factor and factor != SHARED and lr_run_name(experiment, factor) == name:
            lr[factor] = name
    tuned = tuned_run_name(experiment)
    return dict(sorted(lr.items())), tuned if tuned in present else None


# ---- results.csv --------------------------------------------------------------------------------


def read_results_csv(path: Path) -> list[CellRow]:
    """The rows of a run folder's results.csv (one per cell), with typed values."""
    with open(path, newline="") as f:
        return [CellRow.from_csv(row) for row in csv.DictReader(f)]


def cell_time(rows: Sequence[CellRow]) -> tuple[int, float, float] | None:
    """(cells, median wall_s per cell, total wall_s) of the cells that recorded a wall time."""
    walls = [w for r in rows if isinstance(w := r.wall_s, float) and math.isfinite(w)]
    if not walls:
        return None
    return len(walls), float(np.median(walls)), float(sum(walls))


def cell_time_note(runs: Sequence[tuple[str, Sequence[CellRow]]]) -> str:
    """The footer's cell times of (label, results.csv rows): `` Cell time (...): ListOps 20 cells,
    median 31 s, total 8.1 min; ...``; empty when no cell recorded a wall time."""
    times = [(label, t) for label, rows in runs if (t := cell_time(rows)) is not None]
    if not times:
        return ""
    each = [
        f"{label} {n} cells, median {med:.0f} s, total {tot / 60:.1f} min" for label, (n, med, tot) in times
    ]
    return f" Cell time (each cell's own wall time; parallel workers overlap them): {'; '.join(each)}."


def spread(cells: Sequence[Cell]) -> dict[str, float | None]:
    """median, q1, q3 of the cells' values (numpy's linear percentiles, as sweeps/stats/summary.py)."""
    if not cells:
        return {"median": None, "q1": None, "q3": None}
    q1, median, q3 = np.percentile([v for _, v, _ in cells], [25, 50, 75])
    return {"median": float(median), "q1": float(q1), "q3": float(q3)}


# ---- the choice and the statistics --------------------------------------------------------------


def choose_factors(
    rows_by_factor: dict[float, Sequence[CellRow]], variants: Sequence[str]
) -> dict[str, float | None]:
    """Variant -> the factor whose median SELECT_METRIC over its complete cells is highest.

    Ties prefer ×1 (the shared lr), then the smaller factor; None when no factor has a value.
    """
    medians = {
        f: collect(rows, metric=SELECT_METRIC, direction="maximize", variants=list(variants))[0]
        for f, rows in rows_by_factor.items()
    }
    chosen: dict[str, float | None] = {}
    for v in variants:
        scored = [
            (m, f == SHARED, -f) for f, by in medians.items() if (m := spread(by[v])["median"]) is not None
        ]
        chosen[v] = -max(scored)[2] if scored else None
    return chosen


def per_variant_lr(
    rows_by_factor: dict[float, Sequence[CellRow]],
    summary: dict[str, Any],
    spec: dict[str, Any],
    extra_metrics: Sequence[str] = (),
) -> dict[str, Any]:
    """The per-variant lr rows as a summary.json-like document, rendered like a study's.

    ``rows_by_factor`` holds the results.csv rows of every run, ×1 included; ``summary`` and
    ``spec`` are the shared run's: its metric, direction, baseline and variants, whose dotted
    overrides decide the pairing as in the shared rows. Returns {"factors": variant -> chosen
    factor (None: no val value), "baseline": its row label, "variants": row label
    (``single_head (lr ×2)``) -> the statistics of the chosen run on the metric, p_holm over these
    comparisons, "extra_metrics": metric -> row label -> median/q1/q3}.
    """
    metric, direction, baseline = summary["metric"], summary["direction"], summary["baseline"]
    variants = list(summary["variants"])
    chosen = choose_factors(rows_by_factor, variants)

    def cells(m: str, v: str) -> list[Cell]:
        f = chosen[v]
        return (
            []
            if f is None
            else collect(rows_by_factor[f], metric=m, direction=direction, variants=variants)[0][v]
        )

    base_cells = cells(metric, baseline)
    base_by_seed = {s: x for s, x, _ in base_cells}
    stats: dict[str, dict[str, Any]] = {}
    for v in variants:
        mine = cells(metric, v)
        values = [x for _, x, _ in mine]
        if v == baseline or not base_cells:
            st = variant_stats(values, None, direction=direction)
        else:  # the baseline at ITS chosen factor; a seed is the same data in every run
            paired, _ = pairing(v, mine, baseline, base_cells, spec["variants"].get(v))
            pairs = [base_by_seed[s] for s, _, _ in mine] if paired else None
            st = variant_stats(
                values, list(base_by_seed.values()), direction=direction, paired=paired, paired_with=pairs
            )
        st["n_diverged"] = sum(d for _, _, d in mine)
        stats[v] = st
    adjust(stats, baseline)  # p_holm and min_seeds over these comparisons
    label = {v: v if chosen[v] is None else f"{v} ({factor_label(chosen[v])})" for v in variants}
    return {
        "factors": chosen,
        "baseline": label[baseline],
        "variants": {label[v]: stats[v] for v in variants},
        "extra_metrics": {m: {label[v]: spread(cells(m, v)) for v in variants} for m in extra_metrics},
    }


# ---- checks and footer notes --------------------------------------------------------------------


def lr_run_differences(shared_spec: dict[str, Any], run_spec: dict[str, Any], factor: float) -> list[str]:
    """What makes an lr check's spec.json more than the shared run's with optim.lr times ``factor``
    (config keys, "variants", or the lr itself); [] when it is just that."""
    a, b = flatten(shared_spec["base"]), flatten(run_spec["base"])
    differ = sorted(k for k in a.keys() & b.keys() if k != "optim.lr" and a[k] != b[k])
    if shared_spec["variants"] != run_spec["variants"]:
        differ.append("variants")
    if not math.isclose(b["optim.lr"], factor * a["optim.lr"], rel_tol=1e-6):
        differ.append(f"optim.lr={b['optim.lr']:g}, not {factor:g} x {a['optim.lr']:g}")
    return differ


def tuned_run_differences(shared_spec: dict[str, Any], tuned_spec: dict[str, Any]) -> list[str]:
    """The config keys in which a -tuned run's base differs from the shared run's other than the
    parameters the search chose (the baseline's best go into the base); [] when none."""
    a, b = flatten(shared_spec["base"]), flatten(tuned_spec["base"])
    searched = {k for params in (tuned_spec.get("tuned") or {}).values() for k in params}
    return sorted(k for k in a.keys() & b.keys() if k not in searched and a[k] != b[k])


def companion_problem(
    shared_spec: dict[str, Any], name: str, run_spec: dict[str, Any], factor: float | None = None
) -> str | None:
    """Why the companion run ``name`` (an lr check's with ``factor``, else a -tuned one) cannot
    stand beside the shared run in one table, or None."""
    if factor is not None:
        differ, what = lr_run_differences(shared_spec, run_spec, factor), f"with lr x{factor:g}"
        rerun = "ablate lr-check"
    else:
        differ, what, rerun = (
            tuned_run_differences(shared_spec, run_spec),
            "tuned by ablate search",
            "ablate search --then-evaluate",
        )
    if not differ:
        return None
    return (
        f"{name} is not {shared_spec['name']} {what}: it differs in {', '.join(differ)}; "
        f"rerun `{rerun}` with the shared run's profile and overrides"
    )


def lr_note(labels: Sequence[str], factors: Sequence[float]) -> str:
    """The footer's sentence on the per-variant lr rows of the experiments ``labels``."""
    steps = "/".join(f"×{f:g}" for f in sorted({SHARED, *factors}))
    return (
        f" Rows {LR_LABEL} ({', '.join(labels)}): the shared lr times {steps} "
        "(`ablate lr-check`), for each variant the one with the highest median "
        f"{SELECT_METRIC} over seeds (ties: ×1, then the smaller); the test split never chooses. "
        "Δ against the baseline at its own chosen lr; Holm over these rows."
    )


def params_text(params: dict[str, Any]) -> str:
    """``optim.lr=0.0013, optim.warmup_ratio=0.21``: a search's choice, 2 significant digits."""
    return ", ".join(f"{k}={v:.2g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def tuned_note(runs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """What ``ablate search`` chose for each variant, from the (label, spec.json) of -tuned runs."""
    if not runs:
        return ""
    parts = []
    for label, spec in runs:
        metric = (spec.get("search") or {}).get("metric") or "validation"
        picks = "; ".join(  # minus the search's own best value ("val/acc (search)"), not a parameter
            f"{v} {params_text({k: p for k, p in params.items() if not k.endswith('(search)')})}"
            for v, params in (spec.get("tuned") or {}).items()
        )
        parts.append(f"{label}, best on {metric}: {picks}")
    return f" Rows {TUNED_LABEL} (`ablate search --then-evaluate`, then every seed): {' | '.join(parts)}."
