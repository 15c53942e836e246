"""``ablate power RUN_DIR``: the table of seeds each comparison needs, from a study's cells.

The comparisons are built as the report pairs them (sweeps/stats/summary.py ``pairing``); the
power itself is sweeps/stats/power.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ablate.errors import ConfigError
from ablate.experiments.io import write_json
from ablate.experiments.spec import ExperimentSpec
from ablate.sweeps.ledger.cells import CellStore, collect_rows
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.report.build import spec_cells
from ablate.sweeps.stats.power import Comparison, seeds_needed
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import pairing


def comparisons(spec: ExperimentSpec, rows: list[CellRow], delta: float | None = None) -> list[Comparison]:
    """One Comparison per variant with complete cells on both sides, as the report pairs them."""
    cells = spec_cells(spec, rows)
    base = {s: v for s, v, _ in cells[spec.baseline]}
    out = []
    for name in spec.variants:
        if name == spec.baseline or not cells[name] or not base:
            continue
        paired, _ = pairing(name, cells[name], spec.baseline, cells[spec.baseline], spec.variants[name])
        values = np.array([v for _, v, _ in cells[name]])
        if paired:
            d = values - np.array([base[s] for s, _, _ in cells[name]])
            observed = float(np.median(d))
            target = observed if delta is None else delta
            out.append(Comparison(name, True, target, d - observed + target, np.empty(0)))
        else:
            y = np.array(list(base.values()))
            observed = float(np.median(values) - np.median(y))
            target = observed if delta is None else delta
            out.append(Comparison(name, False, target, values - observed + target, y))
    return out


def power_table(
    spec: ExperimentSpec,
    store: CellStore,
    *,
    delta: float | None,
    target: float,
    alpha: float,
    resamples: int,
    max_seeds: int,
) -> dict[str, Any]:
    """What ``ablate power`` prints and writes to power.json."""
    rows = collect_rows(store)
    out: dict[str, Any] = {
        "experiment": spec.name,
        "metric": spec.metric,
        "power": target,
        "alpha": alpha,
        "resamples": resamples,
        "delta": "observed" if delta is None else delta,
        "variants": {},
    }
    for c in comparisons(spec, rows, delta):
        n, curve = seeds_needed(c, target=target, alpha=alpha, resamples=resamples, max_seeds=max_seeds)
        out["variants"][c.variant] = {
            "test": "paired-permutation" if c.paired else "mwu-exact",
            "delta": c.delta,
            "pilot_seeds": int(c.x.size),
            "seeds_needed": n,
            "curve": [{"seeds": k, "power": p} for k, p in curve],
        }
    return out


def write_power(
    run_dir: Path,
    *,
    storage: str | None = None,
    delta: float | None = None,
    target: float = 0.8,
    alpha: float = 0.05,
    resamples: int = 400,
    max_seeds: int = 50,
) -> dict[str, Any]:
    """``ablate power RUN_DIR``: the table of a finished run folder, also written to power.json."""
    spec, store = open_run(run_dir, storage)
    table = power_table(
        spec, store, delta=delta, target=target, alpha=alpha, resamples=resamples, max_seeds=max_seeds
    )
    if not table["variants"]:
        raise ConfigError(
            f"{run_dir}: no variant has complete cells beside the baseline's; nothing to estimate"
        )
    write_json(run_dir / "power.json", table)
    return table
