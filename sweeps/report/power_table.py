"""``ablate power RUN_DIR``: the table of seeds each comparison needs, from a study's cells.

The comparisons are built as the report pairs them (sweeps/stats/summary.py ``pairing``); the
power itself is sweeps/stats/power.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import write_json
from ablate.sweeps.ledger.cells import CellStore, collect_rows
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.report.build import pilots
from ablate.sweeps.stats.power import MAX_SEEDS, answer


def power_table(
    spec: ExperimentSpec,
    store: CellStore,
    *,
    delta: float | None,
    target: float,
    alpha: float,
    max_seeds: int,
) -> dict[str, Any]:
    """What ``ablate power`` prints and writes to power.json. Each comparison is held to
    alpha / k (k comparisons: Holm's bound for the smallest p), so the answer is Holm-safe."""
    found = pilots(spec, collect_rows(store))
    k = max(1, len(found))
    out: dict[str, Any] = {
        "experiment": spec.name,
        "metric": spec.metric,
        "power": target,
        "alpha": alpha,
        "comparisons": k,
        "alpha_per_comparison": alpha / k,
        "delta": "each pilot's estimate" if delta is None else delta,
        "model": "location shift with normal noise, σ at its 60 % confidence limit from the pilot (sweeps/stats/power.py)",
        "variants": {},
    }
    for pilot in found:
        a = answer(pilot, delta=delta, target=target, alpha=alpha / k, max_seeds=max_seeds)
        out["variants"][pilot.variant] = {
            "test": "signed-rank" if pilot.paired else "mann-whitney",
            "delta": a.delta,
            "sigma": a.sigma,
            "pilot_seeds": pilot.n,
            "seeds_needed": a.seeds,
            "seeds_range_80": list(a.seeds_range),
            "curve": [{"seeds": m, "power": p} for m, p in a.curve],
            "note": a.note,
        }
    return out


def write_power(
    run_dir: Path,
    *,
    storage: str | None = None,
    delta: float | None = None,
    target: float = 0.8,
    alpha: float = 0.05,
    max_seeds: int = MAX_SEEDS,
) -> dict[str, Any]:
    """``ablate power RUN_DIR``: the table of a finished run folder, also written to power.json."""
    spec, store = open_run(run_dir, storage)
    table = power_table(spec, store, delta=delta, target=target, alpha=alpha, max_seeds=max_seeds)
    if not table["variants"]:
        raise ConfigError(
            f"{run_dir}: no variant has two or more complete cells beside the baseline's; nothing to estimate"
        )
    write_json(run_dir / "power.json", table)
    return table
