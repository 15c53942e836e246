"""A study's report from its ledger: the rows of its cells, their statistics, and every file
and view that shows them (summary.json, results.csv, report.md/html, the optuna-dashboard note).

The statistics are sweeps/stats/ (pure functions of rows); this module gives them the spec's
metric, direction, variants and seeds, and adds what only the run knows: extra metrics,
seed factors, adaptive rounds, the tuned parameters and the provenance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ablate.experiments.schema.machine import mixed_numerics
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.ledger.cells import CellStore, collect_rows
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.ledger.study_views import name_objective, publish_report, trial_splits
from ablate.sweeps.report.files import plot_metric, write_report
from ablate.sweeps.report.provenance import provenance, versions
from ablate.sweeps.report.text import comparison_entry, splits_summary, verdict
from ablate.sweeps.stats.design import chance_of
from ablate.sweeps.stats.power import Pilot, fit, seeds_to_detect
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import Cell, collect, differing, pairing, summarize, variance_components

# The most seeds the headline's "about M seeds would detect Δ" looks at: with a cap that binds
# (50), half the normal-model pilots hear "more than 50" and the share among those told a number
# is far below the stated one (python -m ablate.benchmarks.stats_calibration, power section).
DETECT_MAX_SEEDS = 200


def report(spec: ExperimentSpec, store: CellStore, run_dir: Path) -> dict[str, Any]:
    """Write summary.json, results.csv, report.md and report.html, and publish them to the study."""
    rows = collect_rows(store)
    # The data each complete cell was evaluated on (the trials' split.* attributes), once per set:
    # the design check reads the evaluated split's majority-class rate from it.
    splits = study_splits(store)
    summary = run_summary(spec, rows, splits, store.study.user_attrs)
    files = write_report(run_dir, summary, rows, tuned=spec.tuned)
    plot = plot_metric(summary, rows) if summary["cells"]["complete"] else None
    # optuna-dashboard: the objective's name, report.md as the study note, report.html and metric.png
    name_objective(store.study, spec.metric)
    publish_report(store.study, run_dir, files, plot)
    return summary


def run_summary(
    spec: ExperimentSpec, rows: list[CellRow], splits: dict[str, Any], study_attrs: Mapping[str, Any]
) -> dict[str, Any]:
    """summary.json of a study's rows, less its ``cost`` (files.write_report adds it): what
    ``report`` writes and ``ablate verify`` recomputes. ``study_attrs``: the study's user
    attributes (an adaptive study's ``rounds`` and ``stop_reason``)."""

    def stats(metric: str, compare: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
        return spec_summary(spec, rows, splits, metric, compare)

    summary = stats(spec.metric, spec.compare)  # between variants: on the primary metric only
    summary["versions"] = versions()
    if spec.extra_metrics:
        summary["extra_metrics"] = {m: stats(m)["variants"] for m in spec.extra_metrics}
    if spec.tuned:
        summary["tuned"] = spec.tuned  # each variant's parameters from `ablate search`
    if spec.seed_factors:
        f = spec.seed_factors
        a, b, c = f["init"], f["data_order"], f.get("numerics", 1)
        cells = spec_cells(spec, rows)
        summary["seed_factors"] = spec.seed_factors
        summary["variance"] = {v: variance_components(cs, a, b, c) for v, cs in cells.items()}
    if spec.adaptive is not None:
        summary["adaptive"] = {
            **spec.adaptive.to_dict(),
            "alpha_per_look": spec.adaptive.alpha_per_look,
            "looks": spec.adaptive.looks,
        }
        summary["rounds"] = study_attrs.get("rounds", [])
        summary["stop_reason"] = study_attrs.get("stop_reason")
    summary["verdicts"] = verdicts(spec, rows, summary)
    # The numerics the complete cells ran with: provenance, not identity (a study may resume on
    # another machine), so the report says when they are mixed.
    complete = [r.numerics for r in rows if r.state == "complete"]
    summary["numerics"] = [{"setting": k, "cells": n} for k, n in mixed_numerics(complete)]
    summary["splits"] = splits
    summary["provenance"] = provenance()  # the code's git commit and the package versions
    if plugins := spec.plugin_records():  # each plugin's module, file, source hash and version
        summary["provenance"]["plugins"] = plugins
    return summary


def spec_summary(
    spec: ExperimentSpec,
    rows: Sequence[CellRow],
    splits: dict[str, Any],
    metric: str | None = None,
    compare: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """``summarize`` of the study's rows on ``metric`` (default: the spec's) as its report has it:
    the spec's variants, seeds, pairing, looks and margins, and the chance rate of ``splits``
    (``study_splits``)."""
    metric = metric or spec.metric
    return summarize(
        rows,
        experiment=spec.name,
        metric=metric,
        direction=spec.direction,
        baseline=spec.baseline,
        variants=list(spec.variants),
        seeds=spec.all_seeds(),
        overrides=spec.variants,  # pairing: a variant that changes the data is compared unpaired
        looks=spec.adaptive.looks if spec.adaptive else 1,
        compare=compare,
        margins=spec.margins(),
        chance=chance_of(metric, splits["sets"]),
    )


def design_check(spec: ExperimentSpec, rows: list[CellRow], splits: dict[str, Any]) -> dict[str, Any]:
    """summary.json's ``design`` (sweeps/stats/design.py) of the study's rows, as its report has it:
    what ``ablate power`` consults before it sizes a comparison."""
    return spec_summary(spec, rows, splits, compare=spec.compare)["design"]


def study_splits(store: CellStore) -> dict[str, Any]:
    """summary.json's ``splits``: the complete cells' split records, once per distinct set."""
    done = [c for c in store.states().values() if c.state == "complete" and c.trial is not None]
    return splits_summary([(c.variant, trial_splits(c.trial.user_attrs)) for c in done])


def rewrite_report(
    run_dir: Path, storage: str | None = None, *, margin: float | None = None
) -> dict[str, Any]:
    """``ablate report RUN_DIR [--margin M]``: the report of a run folder's study, written again
    (with ``margin`` for every comparison instead of the spec's); its summary."""
    spec, store = open_run(run_dir, storage)
    if margin is not None:
        spec = dataclasses.replace(spec, margin={"default": margin})
    return report(spec, store, run_dir)


def spec_cells(spec: ExperimentSpec, rows: Sequence[CellRow]) -> dict[str, list[Cell]]:
    """``collect``'s per-variant cells of a study's rows, on the spec's metric."""
    return collect(rows, metric=spec.metric, direction=spec.direction, variants=list(spec.variants))[0]


def pilots(spec: ExperimentSpec, rows: list[CellRow]) -> list[Pilot]:
    """One Pilot per comparison (``spec.comparisons()``; Pilot.variant is the comparison's name)
    with two or more values on both sides, paired as the report pairs them (on the shared seeds)."""
    cells = spec_cells(spec, rows)
    out = []
    for name, (a, b) in comparison_sides(spec).items():
        if not cells[a] or not cells[b]:
            continue
        overrides = differing(spec.variants[a], spec.variants[b])
        paired, _ = pairing(a, cells[a], b, cells[b], overrides)
        ref = {s: v for s, v, _ in cells[b]}
        if paired:
            values = [v for s, v, _ in cells[a] if s in ref]
            against = [ref[s] for s, _, _ in cells[a] if s in ref]
        else:
            values, against = [v for _, v, _ in cells[a]], list(ref.values())
        if (pilot := fit(name, values, against, paired)) is not None:
            out.append(pilot)
    return out


def comparison_sides(spec: ExperimentSpec) -> dict[str, tuple[str, str]]:
    """comparison name -> (the variant, the side it is measured against)."""
    return {v: (v, spec.baseline) for v in spec.variants if v != spec.baseline} | {
        f"{a} vs {b}": (a, b) for a, b in spec.compare
    }


def verdicts(spec: ExperimentSpec, rows: list[CellRow], summary: dict[str, Any]) -> dict[str, str]:
    """The headline sentence of every comparison (text.verdict). An undecided comparison with a
    margin, whose seeds could decide and whose design can answer, gets the seeds that would
    detect an effect of the margin with power 0.8 and the simulated share of studies in which
    they are enough (Holm-safe: alpha / (k looks); sweeps/stats/power.py)."""
    found = {p.variant: p for p in pilots(spec, rows)}
    methods = summary["methods"]
    alpha, looks, k = methods["alpha"], methods["looks"], methods["multiple_comparisons"]["k"]
    held = alpha / (max(1, k) * looks)  # the smallest p's Holm bound, per look
    design = summary.get("design", {}).get("comparisons", {})
    out = {}
    for name in spec.comparisons():
        v = comparison_entry(summary, name)
        detect = None
        p_holm, min_seeds, margin = v.get("p_holm"), v.get("min_seeds") or 0, spec.margin_for(name)
        informative = not design.get(name, {}).get("uninformative")
        undecided = p_holm is not None and p_holm > alpha and v["n"] >= min_seeds
        if name in found and margin is not None and undecided and informative:
            detect = seeds_to_detect(found[name], effect=margin, alpha=held, max_seeds=DETECT_MAX_SEEDS)
        out[name] = verdict(name, summary, detect)
    return out
