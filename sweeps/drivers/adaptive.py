"""Adaptive seeds: run a grid in rounds and add seeds only where a comparison is undecided.

``seeds: {min: 5, max: 20, step: 5, stop: separated}`` in a spec runs seeds 0..4 of every
variant first. After each round (a *look*) the study is summarized as its report will be
(sweeps/stats/summary.py ``summarize`` with the schedule's L looks): each comparison's exact p
becomes p_seq = min(1, L p), Bonferroni over every look the schedule allows, and Holm runs
over the p_seq of all comparisons. A comparison is *decided* when its Holm-adjusted p_seq is
<= 0.05 (``separated``) or when its interval (the primary test's, at 1 - 0.05 / L) is narrower
than ``width`` (``ci_width``). A comparison the design check marks uninformative (its baseline
at ceiling, floor or chance, or without spread; sweeps/stats/design.py) stops too: more seeds
cannot make such a design answer. The undecided variants and the baseline get ``step`` more
seeds, up to ``max``; decided variants stop.

Why this controls the error: under a true null, P(some look has L p <= a) <= L (a / L) = a,
whichever look stops it, so each p_seq is a valid p-value and Holm over them keeps the
family-wise rate at 5 % (measured: python -m ablate.benchmarks.stats_calibration). At a look
where the seeds cannot reach p <= 0.05 / (k L), nothing can be decided as separated, and the
report says so. The rounds and the stop reason live on the study, so an interrupted adaptive
sweep resumes where it was.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ablate.experiments.schema.seeds import AdaptiveSeeds
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import ALPHA, summarize


def look(spec: ExperimentSpec, rows: list[CellRow], chance: dict[str, Any] | None = None) -> dict[str, Any]:
    """The study's summary at this look, as its report computes it (looks = the schedule's;
    ``chance``: the evaluated split's majority-class rate, design.chance_of)."""
    assert spec.adaptive is not None
    return summarize(
        rows,
        experiment=spec.name,
        metric=spec.metric,
        direction=spec.direction,
        baseline=spec.baseline,
        variants=list(spec.variants),
        overrides=spec.variants,
        looks=spec.adaptive.looks,
        chance=chance,
    )


def verdicts(summary: dict[str, Any], a: AdaptiveSeeds) -> dict[str, dict[str, Any]]:
    """Per non-baseline variant of a look's summary: its seeds, interval, p_seq, uninformative
    (the design check) and decided? (separated or narrow enough, or uninformative)."""
    checks = summary["design"]["comparisons"]
    out = {}
    for name, v in summary["variants"].items():
        if name == summary["baseline"]:
            continue
        ci = v["ci"]
        if a.stop == "separated":
            decided = v["p_holm"] is not None and v["p_holm"] <= ALPHA
        else:
            decided = ci is not None and ci[1] - ci[0] <= a.width
        uninformative = bool(checks[name]["uninformative"])
        out[name] = {
            "seeds": v["n"],
            "ci": ci,
            "p_seq": v["p_seq"],
            "uninformative": uninformative,
            "decided": bool(decided) or uninformative,
        }
    return out


def decide(
    spec: ExperimentSpec, rows: list[CellRow], chance: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """``verdicts`` of the study's rows now."""
    assert spec.adaptive is not None
    return verdicts(look(spec, rows, chance), spec.adaptive)


def grow(spec: ExperimentSpec, undecided: list[str]) -> ExperimentSpec | None:
    """The spec with ``step`` more seeds for every undecided variant below ``max``, and the
    baseline grown to the most seeds of any variant (so every new seed is paired); None when
    nothing can grow. Variant v always has seeds 0..n_v - 1."""
    assert spec.adaptive is not None
    a, first = spec.adaptive, len(spec.seeds)
    before = {v: first + len(spec.extra_seeds.get(v, ())) for v in spec.variants}
    counts = dict(before)
    for name in undecided:
        counts[name] = min(a.max, counts[name] + a.step)
    counts[spec.baseline] = max(counts.values())
    if counts == before:
        return None
    extra = {v: tuple(range(first, n)) for v, n in counts.items() if n > first}
    return dataclasses.replace(spec, extra_seeds=extra)
