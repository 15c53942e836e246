"""Adaptive seeds: run a grid in rounds and add seeds only where a comparison is undecided.

``seeds: {min: 5, max: 20, step: 5, stop: separated}`` in a spec runs seeds 0..4 of every
variant first. After each round, a variant's comparison with the baseline is *decided* when
the bootstrap CI of its Δ (the median of the per-seed differences when paired, else the
difference of medians) excludes 0 (``separated``) or is narrower than ``width``
(``ci_width``). The undecided variants and the baseline get ``step`` more seeds, up to
``max``; decided variants stop. Each look uses a CI at level 1 - 0.05 / looks, a Bonferroni
split of the 5 % over every look the schedule allows, so stopping at the first separated
look does not inflate the false-positive rate (sequential testing would, with 95 % CIs at
every look). The rounds and the stop reason live on the study, so an interrupted adaptive
sweep resumes where it was.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
from scipy import stats

from ablate.experiments.spec import ExperimentSpec
from ablate.sweeps.report.build import spec_cells
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import pairing

BOOT = 10_000


def _ci(data: tuple[np.ndarray, ...], statistic: Any, level: float) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all-equal resamples are a valid answer
        res = stats.bootstrap(
            data,
            statistic,
            n_resamples=BOOT,
            vectorized=True,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(0),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def decide(spec: ExperimentSpec, rows: list[CellRow]) -> dict[str, dict[str, Any]]:
    """Per non-baseline variant: its seeds so far, the Δ CI at the look level, and decided?"""
    assert spec.adaptive is not None
    a = spec.adaptive
    cells = spec_cells(spec, rows)
    base = {s: v for s, v, _ in cells[spec.baseline]}
    out = {}
    for name in spec.variants:
        if name == spec.baseline:
            continue
        mine = cells[name]
        entry: dict[str, Any] = {"seeds": len(mine), "ci": None, "decided": False}
        if len(mine) >= 2 and len(base) >= 2:
            paired, _ = pairing(name, mine, spec.baseline, cells[spec.baseline], spec.variants[name])
            x = np.array([v for _, v, _ in mine])
            if paired:
                d = x - np.array([base[s] for s, _, _ in mine])
                low, high = _ci((d,), lambda d, axis=-1: np.median(d, axis=axis), a.level)
            else:
                y = np.array(list(base.values()))
                low, high = _ci(
                    (x, y), lambda x, y, axis=-1: np.median(x, axis=axis) - np.median(y, axis=axis), a.level
                )
            entry["ci"] = [low, high]
            if a.stop == "separated":
                entry["decided"] = low > 0 or high < 0
            else:
                entry["decided"] = high - low <= a.width
        out[name] = entry
    return out


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
