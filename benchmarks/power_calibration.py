"""The power section of ``python -m ablate.benchmarks.stats_calibration``: does every seed count
``ablate power`` and the report's headline print come with the share of cases in which it is
enough?

For each data model (stats_calibration's ``draw``), design and claim it draws ``pilots`` pilots,
asks each the seeds the tool would print and the share it would state beside them
(sweeps/stats/power.py), and measures the **simulated share**: of the pilots, those whose answer
is not too few, that is a seed count whose true power reaches the target (simulated with the
primary test's own rule on the model's data) or "more than max seeds". Done when the mean stated
share (over the pilots told a number) is within 2 points of it on the normal model.
``simulated_share_answered`` beside it is the share among the pilots told a number: lower
where many pilots are told "more than max" (the headline's search up to 50 seeds).

- claims: **difference** (pilots with the effect, the margin m = that effect in metric units,
  the true pseudomedian or shift; true power: the test rejects on data with the effect) and
  **equivalence** (pilots with no effect, the same margin; true power: the interval at 1 − 2α
  inside ±m on data with no effect, sweeps/stats/equivalence.py's rule);
- designs: paired pilots of 5 and of 7 seeds and unpaired pilots of 5 per side, searched up to
  the run's max seeds, and the report's headline (paired, 7 seeds, up to 50 seeds);
- α = 0.025 per comparison (Holm over two comparisons), target power 0.8.

A replica serves the pilots, checked against the tool on the first ``CHECKED`` pilots of every
cell (an AssertionError otherwise): a pilot's answer is the first n whose crossing
(``simulation.crossing``: the exact effect at which n seeds reach the target) lies below m / σ̂, so
one table of crossings per claim and design answers every pilot, and its share is
``power.stated_share`` on the same crossings. ``exact_share`` beside it takes E as the minimum
of every crossing below n* (the tool takes the crossing at n* - 1): what that shortcut costs.

The true power at n: ``reps`` // 4 simulated studies, the full ``reps`` where that is within
6.5 pt of the target, and ``refine_factor`` x more within ``refine`` of it (where the Monte
Carlo error could flip "reaches the target").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ablate.sweeps.stats.equivalence import tost
from ablate.sweeps.stats.inference import mann_whitney, signed_rank
from ablate.sweeps.stats.power import (
    MAX_SEEDS,
    PLUG_IN,
    Pilot,
    answer,
    fit,
    seeds_to_detect,
    seeds_to_show_equivalence,
    stated_share,
)
from ablate.sweeps.stats.simulation import at_least, at_most, claim_k, clear_caches, crossing

ALPHA = 0.025  # per comparison: Holm over the two comparisons of a baseline and two variants
TARGET = 0.8
CLAIMS = ("difference", "equivalence")
DESIGNS: dict[str, tuple[bool, int, int | None]] = {  # name: paired, pilot seeds per side, max seeds
    "paired, 5 seeds": (True, 5, None),  # None: the run's (200; --quick 40)
    "paired, 7 seeds": (True, 7, None),
    "unpaired, 5 per side": (False, 5, None),
    "headline: paired, 7 seeds, up to 50": (True, 7, 50),
}
CHECKED = 1  # pilots per cell answered by the tool itself too
FIRST_STAGE = 0.065  # the true power from reps // 4 studies when it is this far from the target

Draw = Callable[[str, np.random.Generator, tuple[int, ...], tuple[float, ...]], list[np.ndarray]]


def crossings(claim: str, paired: bool, cap: int) -> np.ndarray:
    """Index n: the effect (σ units) from which n seeds per side reach TARGET (inf below 2 seeds
    or where no effect does), each search starting from the one of n - 1."""
    out = np.full(cap + 1, np.inf)
    near = None
    for n in range(2, cap + 1):
        out[n] = crossing(claim, paired, n, ALPHA, TARGET, near=near)  # type: ignore[arg-type]
        near = float(out[n]) if math.isfinite(out[n]) else None
    return out


def replica(table: np.ndarray, cap: int, pilot: Pilot, value: float) -> tuple[int | None, float, float]:
    """(seeds or None above ``cap``, stated share, exact share) as the tool answers ``pilot`` at
    the margin ``value``; the shares also where the tool prints none (seeds None)."""
    if pilot.sd == 0:  # no spread: the fewest seeds at which the claim can hold, in every pilot
        finite = np.flatnonzero(np.isfinite(table[: cap + 1]))
        return (int(finite[0]) if finite.size else None), 1.0, 1.0

    def first(e: float, top: int) -> int | None:
        hits = np.flatnonzero(table[2 : top + 1] < e)
        return int(hits[0]) + 2 if hits.size else None

    seeds = first(value / pilot.sigma(), cap)
    e = value / pilot.sigma(PLUG_IN)
    truly = first(e, seeds or cap) or seeds or cap + 1
    tool = stated_share(e, pilot.df, float(table[truly - 1]))  # n* above cap: E taken at cap
    exact = stated_share(e, pilot.df, float(np.min(table[: min(truly, cap + 1)])))
    return seeds, tool, exact


def draw_pilot(
    draw: Draw, model: str, paired: bool, size: int, effect: float, rng: np.random.Generator
) -> Pilot:
    """A pilot of ``size`` seeds per side; unpaired: the two sides on their own seeds."""
    if paired:
        y, x = draw(model, rng, (size,), (effect,))
        pilot = fit("v", x, y, True)
    else:
        y, x = draw(model, rng, (size,), ())[0], draw(model, rng, (size,), (effect,))[1]
        pilot = fit("v", x, y, False)
    assert pilot is not None
    return pilot


class Truth:
    """The true power of a claim on a model's data at n seeds per side, by simulating the test."""

    def __init__(
        self,
        draw: Draw,
        where: tuple[str, str, bool],
        margin: float,
        effect: float,
        rng: np.random.Generator,
        reps: int,
        refine: tuple[float, int],
    ) -> None:
        """where: (model, claim, paired); margin: the equivalence claim's; effect: the true one
        (latent sd); reps and refine: the studies per n (module docstring)."""
        self.draw, (self.model, self.claim, self.paired) = draw, where
        self.margin, self.effect, self.rng = margin, effect, rng
        self.n_reps, self.refine = reps, refine
        self.cache: dict[int, float] = {}
        self.reps: dict[int, int] = {}
        self.checked = False

    def __call__(self, n: int) -> float:
        if n not in self.cache:
            reps, (refine, factor) = self.n_reps, self.refine
            hits, total = self.holds(n, reps // 4), reps // 4
            for more, near in ((reps - reps // 4, FIRST_STAGE), (factor * reps, refine)):
                if abs(hits / total - TARGET) < near:
                    hits, total = hits + self.holds(n, more), total + more
            self.cache[n], self.reps[n] = hits / total, total
        return self.cache[n]

    def holds(self, n: int, reps: int) -> int:
        """How many of ``reps`` simulated studies of the model's data the claim holds in."""
        k = claim_k(self.claim, self.paired, n, ALPHA)  # type: ignore[arg-type]
        if k == 0:
            return 0
        hits = 0
        for start in range(0, reps, 500):
            b = min(500, reps - start)
            y, x = self.draw(self.model, self.rng, (b, n), (self.effect,))
            if not self.paired:
                y = self.draw(self.model, self.rng, (b, n), ())[0]  # the baseline on its own seeds
            ok = self.rule(x, y, k)
            if not self.checked:
                self.check(x, y, ok)
            hits += int(np.count_nonzero(ok))
        return hits

    def rule(self, x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
        """The claim on every row, counting ties as inference.py counts them."""
        xs = np.sort(x - y if self.paired else x, axis=1)
        ys = None if self.paired else np.sort(y, axis=1)
        if self.claim == "difference":
            return (at_most(xs, ys, 0.0) <= k - 1) | (at_least(xs, ys, 0.0) <= k - 1)
        return (at_most(xs, ys, -self.margin) <= k - 1) & (at_least(xs, ys, self.margin) <= k - 1)

    def check(self, x: np.ndarray, y: np.ndarray, ok: np.ndarray) -> None:
        """The batch rule is the tests' own (signed_rank, mann_whitney, equivalence.tost)."""
        for r in range(min(20, x.shape[0])):
            if self.claim == "difference":
                test = (
                    signed_rank(x[r] - y[r], alpha=ALPHA)
                    if self.paired
                    else mann_whitney(x[r], y[r], alpha=ALPHA)
                )
                want = test.rejects
            else:
                args = (x[r] - y[r], None) if self.paired else (x[r], y[r])
                want = tost(*args, self.margin, alpha=ALPHA)["equivalent"]
            assert bool(ok[r]) == bool(want), (self.model, self.claim, self.paired, r)
        self.checked = True


def tool_check(claim: str, pilot: Pilot, value: float, cap: int, got: tuple[Any, ...]) -> None:
    """The replica's seeds and share are the tool's own."""
    if claim == "difference":
        d = seeds_to_detect(pilot, effect=value, alpha=ALPHA, target=TARGET, max_seeds=cap)
    else:
        d = seeds_to_show_equivalence(pilot, margin=value, alpha=ALPHA, target=TARGET, max_seeds=cap)
    assert d.seeds == got[0], (claim, pilot, d, got)
    assert d.seeds is None or abs(d.share - got[1]) < 1e-9, (d, got)


def cell(design: str, truth: Truth, table: np.ndarray, pilots: int, cap: int) -> dict[str, Any]:
    """One (model, claim, design), the model and claim ``truth``'s: the tool's answers on
    ``pilots`` pilots at the margin, the share it states (mean over the pilots it answers) and
    the share whose answer truly reaches the target."""
    paired, size = DESIGNS[design][:2]
    draw, model, claim, value, rng = truth.draw, truth.model, truth.claim, truth.margin, truth.rng
    got, answers = [], []
    for i in range(pilots):
        pilot = draw_pilot(draw, model, paired, size, truth.effect, rng)
        answer = replica(table, cap, pilot, value)
        if i < CHECKED:
            tool_check(claim, pilot, value, cap, answer)
        got.append(answer)
        answers.append(answer[0])
    answered = [(n, s, x) for n, s, x in got if n is not None]
    enough = [truth(n) >= TARGET for n, _, _ in answered]
    true_n = next((n for n in range(2, cap + 1) if truth(n) >= TARGET), None)
    ns = [n for n, _, _ in answered]

    def mean(xs: list[Any]) -> float | None:
        return float(np.mean(xs)) if xs else None

    simulated = (sum(enough) + pilots - len(answered)) / pilots  # "more than max" is not too few
    return {
        "max_seeds": cap,
        "true_n": true_n,
        "answered": len(answered),
        "above_max": pilots - len(answered),
        "answer_median": float(np.median(ns)) if ns else None,
        "answer_p10_p90": [float(q) for q in np.percentile(ns, [10, 90])] if ns else None,
        "stated_share": mean([s for _, s, _ in answered]),  # what the tool prints, on average
        "stated_share_all": mean([s for _, s, _ in got]),  # also where it prints "more than max"
        "exact_share": mean([x for _, _, x in answered]),
        "simulated_share": simulated,
        "mc_sd": math.sqrt(simulated * (1 - simulated) / pilots),
        "simulated_share_answered": mean(enough),  # among the pilots told a number
        "true_power_at_median_answer": truth(int(np.median(ns))) if ns else None,
    }


def timing(seed: int = 7) -> dict[str, Any]:
    """Seconds ``power.answer`` takes from a cold start on what ``ablate power --margin 0.003``
    computes for a 3-variant x 7-seed study of accuracies (sd 0.01 per seed; two paired
    comparisons and one unpaired, Holm over 3): answers from about 60 to 190 seeds."""
    rng = np.random.default_rng(seed)
    base = 0.80 + 0.01 * rng.standard_normal(7)
    found = [
        fit("no_pe", base - 0.004 + 0.008 * rng.standard_normal(7), base, True),
        fit("single_head", base - 0.01 + 0.006 * rng.standard_normal(7), base, True),
        fit("data_seed", 0.80 + 0.01 * rng.standard_normal(7), base, False),
    ]
    clear_caches()
    start = time.perf_counter()
    answers = {}
    for p in found:
        assert p is not None
        a = answer(p, effect=0.003, margin=0.003, target=TARGET, alpha=0.05 / 3, max_seeds=MAX_SEEDS)
        assert a.detect is not None and a.equivalence is not None
        answers[p.variant] = {"detect": a.detect.seeds, "equivalence": a.equivalence.seeds}
    return {"seconds": round(time.perf_counter() - start, 2), "answers": answers}


def section(
    draw: Draw,
    truths: Callable[[str, np.random.Generator], dict[str, float]],
    models: tuple[str, ...],
    effect: float,
    reps: dict[str, int],
    max_seeds: int,
    refine: tuple[float, int],
) -> dict[str, Any]:
    """The power section's result: per model, claim and design, a ``cell``; its own seeds
    (2026, 50 + the model's index), so the other sections' numbers do not depend on it."""
    timed = timing()
    caps = {d: min(c or max_seeds, max_seeds) for d, (_, _, c) in DESIGNS.items()}
    tables = {
        (claim, paired): crossings(claim, paired, max(c for d, c in caps.items() if DESIGNS[d][0] == paired))
        for claim in CLAIMS
        for paired in (True, False)
    }
    out: dict[str, Any] = {
        "alpha": ALPHA,
        "target": TARGET,
        "pilots": reps["pilots"],
        "true_power_reps": reps["true_power"],
        "designs": {
            d: {"paired": p, "pilot_seeds": s, "max_seeds": caps[d]} for d, (p, s, _) in DESIGNS.items()
        },
        "timing": timed,
        "models": {},
    }
    for i, model in enumerate(models):
        rng = np.random.default_rng([2026, 50 + i])
        truth = truths(model, rng)
        margins = {True: truth["pseudomedian"], False: truth["shift"]}
        entry: dict[str, Any] = {
            "margin": {"paired": margins[True], "unpaired": margins[False]},
            "cells": {},
            "true_power_by_n": {},
        }
        for claim in CLAIMS:
            shift = effect if claim == "difference" else 0.0
            sims = {
                p: Truth(draw, (model, claim, p), margins[p], shift, rng, reps["true_power"], refine)
                for p in (True, False)
            }
            entry["cells"][claim] = {
                design: cell(design, sims[paired], tables[claim, paired], reps["pilots"], caps[design])
                for design, (paired, _, _) in DESIGNS.items()
            }
            entry["true_power_by_n"][claim] = {
                "paired" if p else "unpaired": {n: t.cache[n] for n in sorted(t.cache)}
                for p, t in sims.items()
            }
        out["models"][model] = entry
    return out
