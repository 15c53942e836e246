"""``ablate power RUN_DIR``: the seeds each comparison needs, from a study's cells.

The comparisons are built as the report pairs them (sweeps/report/build.py ``pilots``); the power
itself is sweeps/stats/power.py. Each comparison gets, at its margin m (``--margin``, else the
spec's ``margin:``), the seeds that detect Δ = m (``--delta`` sets that effect instead) and the
seeds that show equivalence within ±m when Δ = 0, each with the share of pilots like this one in
which they are enough. Without a margin or ``--delta`` there is no effect to size seeds for,
and the table says so: the pilot's own Δ is an estimate, not the effect that matters.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import write_json
from ablate.sweeps.ledger.cells import CellStore, collect_rows
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.report.build import design_check, pilots, study_splits
from ablate.sweeps.stats.power import ANSWER_QUANTILE, MAX_SEEDS, Detect, Pilot, answer

MODEL = (
    "location shift with normal noise fitted to the pilot; the seeds at σ's 60 % confidence limit; "
    "enough in S %: the probability, under that model, that a pilot like this one gets an answer that "
    "is enough (power >= the target; an answer 'more than the max' counts) (sweeps/stats/power.py)"
)
NO_EFFECT = "no margin: give --margin M (the smallest effect that matters) or set margin: in the spec"


def margin_of(spec: ExperimentSpec, comparison: str, margin: float | None) -> float | None:
    """The comparison's margin: ``margin`` (``--margin``), else the spec's, else None."""
    if margin is not None:
        return margin
    margin_for = getattr(spec, "margin_for", None)  # specs without margins: none
    return margin_for(comparison) if margin_for is not None else None


def _detect_entry(d: Detect | None, key: str) -> dict[str, Any] | None:
    if d is None:
        return None
    return {key: d.effect, "seeds": d.seeds, "share": d.share}


def _entry(
    pilot: Pilot,
    margin: float | None,
    delta: float | None,
    alphas: tuple[float, float],
    target: float,
    max_seeds: int,
) -> dict[str, Any]:
    """One comparison's row of power.json; alphas: of the difference test and of equivalence."""
    effect = delta if delta is not None else margin
    a = answer(
        pilot,
        effect=effect,
        margin=margin,
        target=target,
        alpha=alphas[0],
        equivalence_alpha=alphas[1],
        max_seeds=max_seeds,
    )
    return {
        "test": "signed-rank" if pilot.paired else "mann-whitney",
        "estimate": pilot.estimate,
        "sigma": a.sigma,
        "pilot_seeds": pilot.n,
        "margin": margin,
        "detect": _detect_entry(a.detect, "effect"),
        "equivalence": _detect_entry(a.equivalence, "margin"),
        "note": a.note if effect is not None else NO_EFFECT,
    }


def uninformative_entry(pilot: Pilot, margin: float | None, reasons: list[str]) -> dict[str, Any]:
    """The row of a comparison the design check marks uninformative: no seed count, the reasons."""
    return {
        "test": "signed-rank" if pilot.paired else "mann-whitney",
        "estimate": pilot.estimate,
        "sigma": None,
        "pilot_seeds": pilot.n,
        "margin": margin,
        "detect": None,
        "equivalence": None,
        "uninformative": True,
        "note": "the design cannot answer: " + "; ".join(reasons),
    }


def power_table(
    spec: ExperimentSpec,
    store: CellStore,
    *,
    delta: float | None,
    target: float,
    alpha: float,
    max_seeds: int,
    margin: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """What ``ablate power`` prints and writes to power.json. Each comparison is held to alpha / k
    (k comparisons: Holm's bound for the smallest p), its equivalence claim to alpha / k_m (k_m
    comparisons with a margin: equivalence is a Holm family of its own), so both are Holm-safe.
    ``progress(name, done, total)`` is called before each comparison."""
    rows = collect_rows(store)
    checks = design_check(spec, rows, study_splits(store))["comparisons"]
    found = pilots(spec, rows)
    margins = {p.variant: margin_of(spec, p.variant, margin) for p in found}
    k, k_m = max(1, len(found)), max(1, sum(m is not None for m in margins.values()))
    out: dict[str, Any] = {
        "experiment": spec.name,
        "metric": spec.metric,
        "power": target,
        "alpha": alpha,
        "comparisons": k,
        "alpha_per_comparison": alpha / k,
        "equivalence_alpha_per_comparison": alpha / k_m,
        "delta": delta,
        "margin_from": "--margin" if margin is not None else "the spec's margin:",
        "max_seeds": max_seeds,
        "answer_quantile": ANSWER_QUANTILE,
        "model": MODEL,
        "variants": {},
    }
    for i, pilot in enumerate(found):
        if progress is not None:
            progress(pilot.variant, i, len(found))
        m, check = margins[pilot.variant], checks.get(pilot.variant, {})
        if check.get("uninformative"):  # no seed count can make such a design answer
            out["variants"][pilot.variant] = uninformative_entry(pilot, m, check["reasons"])
            continue
        out["variants"][pilot.variant] = _entry(pilot, m, delta, (alpha / k, alpha / k_m), target, max_seeds)
    return out


def write_power(
    run_dir: Path,
    *,
    storage: str | None = None,
    delta: float | None = None,
    margin: float | None = None,
    target: float = 0.8,
    alpha: float = 0.05,
    max_seeds: int = MAX_SEEDS,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """``ablate power RUN_DIR``: the table of a finished run folder, also written to power.json."""
    spec, store = open_run(run_dir, storage)
    table = power_table(
        spec,
        store,
        delta=delta,
        margin=margin,
        target=target,
        alpha=alpha,
        max_seeds=max_seeds,
        progress=progress,
    )
    if not table["variants"]:
        raise ConfigError(
            f"{run_dir}: no variant has two or more complete cells beside the baseline's; nothing to estimate"
        )
    write_json(run_dir / "power.json", table)
    return table
