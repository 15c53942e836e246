"""A study's report from its ledger: the rows of its cells, their statistics, and every file
and view that shows them (summary.json, results.csv, report.md/html, the optuna-dashboard note).

The statistics are sweeps/stats/ (pure functions of rows); this module gives them the spec's
metric, direction, variants and seeds, and adds what only the run knows: extra metrics,
seed factors, adaptive rounds, the tuned parameters and the provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ablate.experiments.spec import ExperimentSpec
from ablate.sweeps.ledger.cells import CellStore, collect_rows
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.ledger.study_views import name_objective, publish_report
from ablate.sweeps.report.files import plot_metric, write_report
from ablate.sweeps.report.provenance import provenance, versions
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import Cell, collect, summarize, variance_components


def report(spec: ExperimentSpec, store: CellStore, run_dir: Path) -> dict[str, Any]:
    """Write summary.json, results.csv, report.md and report.html, and publish them to the study."""
    rows = collect_rows(store)

    def stats(metric: str) -> dict[str, Any]:
        return summarize(
            rows,
            experiment=spec.name,
            metric=metric,
            direction=spec.direction,
            baseline=spec.baseline,
            variants=list(spec.variants),
            seeds=spec.all_seeds(),
            overrides=spec.variants,  # pairing: a variant that changes the data is compared unpaired
        )

    summary = stats(spec.metric)
    summary["versions"] = versions()
    if spec.extra_metrics:
        summary["extra_metrics"] = {m: stats(m)["variants"] for m in spec.extra_metrics}
    if spec.tuned:
        summary["tuned"] = spec.tuned  # each variant's parameters from `ablate search`
    if spec.seed_factors:
        a, b = spec.seed_factors["init"], spec.seed_factors["data_order"]
        cells = spec_cells(spec, rows)
        summary["seed_factors"] = spec.seed_factors
        summary["variance"] = {v: variance_components(c, a, b) for v, c in cells.items()}
    if spec.adaptive is not None:
        summary["adaptive"] = {
            **spec.adaptive.to_dict(),
            "level": spec.adaptive.level,
            "looks": spec.adaptive.looks,
        }
        summary["rounds"] = store.study.user_attrs.get("rounds", [])
        summary["stop_reason"] = store.study.user_attrs.get("stop_reason")
    summary["provenance"] = provenance()  # the code's git commit and the package versions
    if plugins := spec.plugin_records():  # each plugin's module, file, source hash and version
        summary["provenance"]["plugins"] = plugins
    files = write_report(run_dir, summary, rows, tuned=spec.tuned)
    plot = plot_metric(summary, rows) if summary["cells"]["complete"] else None
    # optuna-dashboard: the objective's name, report.md as the study note, report.html and metric.png
    name_objective(store.study, spec.metric)
    publish_report(store.study, run_dir, files, plot)
    return summary


def rewrite_report(run_dir: Path, storage: str | None = None) -> dict[str, Any]:
    """``ablate report RUN_DIR``: the report of a run folder's study, written again; its summary."""
    spec, store = open_run(run_dir, storage)
    return report(spec, store, run_dir)


def spec_cells(spec: ExperimentSpec, rows: Sequence[CellRow]) -> dict[str, list[Cell]]:
    """``collect``'s per-variant cells of a study's rows, on the spec's metric."""
    return collect(rows, metric=spec.metric, direction=spec.direction, variants=list(spec.variants))[0]
