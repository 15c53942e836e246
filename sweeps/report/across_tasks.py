"""``ablate aggregate``: one table across the experiments (tasks) of a preset, from their run
folders; the estimators are sweeps/stats/aggregate.py."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ablate.errors import ConfigError
from ablate.files import atomic_write, write_json
from ablate.sweeps.ledger.cells import collect_rows
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.report.build import spec_cells
from ablate.sweeps.stats.aggregate import aggregate


def from_run_dirs(run_dirs: list[Path], storage: str | None = None) -> dict[str, Any]:
    """The aggregate of finished sweep run folders (one task each) that share variant names."""
    tasks: dict[str, dict[str, np.ndarray]] = {}
    baseline = metric = None
    for run_dir in run_dirs:
        spec, store = open_run(run_dir, storage)
        if spec.direction != "maximize":
            raise ConfigError(
                f"{run_dir}: the aggregate needs a metric to maximize, {spec.metric} is minimized"
            )
        if baseline is not None and (spec.baseline, list(spec.variants)) != (
            baseline,
            list(tasks[next(iter(tasks))]),
        ):
            raise ConfigError(f"{run_dir}: its variants {list(spec.variants)} differ from the other runs'")
        if spec.name in tasks:
            raise ConfigError(
                f"{run_dir}: a second run folder of experiment {spec.name!r}; give one per task"
            )
        baseline, metric = spec.baseline, spec.metric
        cells = spec_cells(spec, collect_rows(store))
        empty = [v for v, c in cells.items() if not c]
        if empty:
            raise ConfigError(f"{run_dir}: no complete cell for {empty}; finish the sweep first")
        tasks[spec.name] = {v: np.array([x for _, x, _ in c]) for v, c in cells.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {"metric": metric, **aggregate(tasks, baseline)}


def markdown(agg: dict[str, Any]) -> str:
    lines = [
        f"# Across {len(agg['tasks'])} tasks: {agg['metric']}, normalized by the baseline's median per task",
        "",
        "| variant | runs | IQM [95 % CI] | P(improve) [95 % CI] |",
        "|---|---|---|---|",
    ]
    for v, e in agg["variants"].items():
        iqm = f"{e['iqm']:.3f}" + (
            f" [{e['iqm_ci95'][0]:.3f}, {e['iqm_ci95'][1]:.3f}]" if "iqm_ci95" in e else " (the normaliser)"
        )
        pi = (
            f"{e['p_improve']:.2f} [{e['p_improve_ci95'][0]:.2f}, {e['p_improve_ci95'][1]:.2f}]"
            if "p_improve" in e
            else ""
        )
        lines.append(f"| {v} | {e['runs']} | {iqm} | {pi} |")
    lines += [
        "",
        f"Tasks: {', '.join(agg['tasks'])}. Stratified bootstrap ({agg['bootstrap']['resamples']} "
        "resamples, runs resampled within each task); IQM and P(improve) as in rliable "
        "(Agarwal et al. 2021).",
        "",
    ]
    return "\n".join(lines)


def write_aggregate(run_dirs: list[Path], stem: Path, storage: str | None = None) -> dict[str, Any]:
    """``ablate aggregate``: the table of finished run folders (one per task), written to
    STEM.json and STEM.md."""
    if len(run_dirs) < 2:
        raise ConfigError("ablate aggregate needs at least two run folders (one per task)")
    agg = from_run_dirs(run_dirs, storage)
    write_json(stem.with_suffix(".json"), agg)
    atomic_write(stem.with_suffix(".md"), markdown(agg))
    return agg
