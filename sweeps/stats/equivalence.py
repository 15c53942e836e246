"""Equivalence within a margin: can a variant be removed without a loss that matters?

"Not distinguishable" is not "no effect": a test that fails to reject says nothing about the
size of what it missed. With a smallest effect of interest m (``margin:`` in the spec, in the
metric's units), the **two one-sided tests** (Schuirmann, 1987) ask whether Δ is inside
(−m, +m): reject Δ <= −m and reject Δ >= +m, each at α. By interval inclusion that is: the
primary test's exact interval at level 1 − 2α (inference.py: signed-rank with Tukey's interval
when paired, Mann-Whitney with the Hodges-Lehmann interval otherwise) lies strictly inside
(−m, +m). Its p is the larger of the two one-sided p's, each counted as the primary test counts
ties (against the claim):

    p_low = P(T <= #{A <= −m}),  p_high = P(T <= #{A >= +m}),  p = max(p_low, p_high),

A the Walsh averages (paired) or the pairwise differences (unpaired), T the count statistic's
no-ties null distribution. p <= α exactly when the interval at 1 − 2α is inside (−m, +m). Holm
runs over the p's of the comparisons that have a margin (a family of its own: the equivalence
claims). The calibration (python -m ablate.benchmarks.equivalence_calibration) measures the rate
of "equivalent" claims at a true Δ equal to the margin (must be <= α) and their power at Δ = 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ablate.sweeps.stats.exact import holm
from ablate.sweeps.stats.inference import ALPHA, kth, null_cdf


def _averages(x: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, tuple[float, ...]]:
    """The sorted Walsh averages of x (paired: y None) or the pairwise differences x − y, and the
    null cdf of the count statistic."""
    if y is None:
        i, j = np.triu_indices(x.size)
        return np.sort((x[i] + x[j]) / 2), null_cdf(True, x.size)[0]
    return np.sort((x[:, None] - y[None, :]).reshape(-1)), null_cdf(False, x.size, y.size)[0]


def tost(
    values: Sequence[float], baseline: Sequence[float] | None, margin: float, *, alpha: float = ALPHA
) -> dict[str, Any]:
    """The equivalence test of one comparison. ``baseline`` None: ``values`` are the per-seed
    differences of a paired design; else the two samples of an unpaired one. Returns
    ``{margin, p, ci, confidence, equivalent}`` (ci at 1 − 2α, None when the seeds cannot reach
    it; ``equivalent``: p <= alpha, before Holm)."""
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    x = np.asarray(values, dtype=float).reshape(-1)
    y = None if baseline is None else np.asarray(baseline, dtype=float).reshape(-1)
    out: dict[str, Any] = {
        "margin": float(margin),
        "p": None,
        "ci": None,
        "confidence": None,
        "equivalent": False,
    }
    if x.size == 0 or (y is not None and y.size == 0):
        return out
    a, cdf = _averages(x, y)
    p = max(cdf[int(np.count_nonzero(a <= -margin))], cdf[int(np.count_nonzero(a >= margin))])
    k = kth(cdf, 2 * alpha)
    if k:
        out["ci"] = [float(a[k - 1]), float(a[a.size - k])]
        out["confidence"] = 1 - 2 * cdf[k - 1]
    out.update(p=min(1.0, float(p)), equivalent=bool(p <= alpha))
    return out


def adjust(tests: dict[str, dict[str, Any]], alpha: float = ALPHA) -> None:
    """Holm over the family of equivalence tests, in place: each gets ``p_holm`` and
    ``equivalent`` = p_holm <= alpha."""
    names = list(tests)
    for name, p in zip(names, holm([tests[n]["p"] for n in names]), strict=True):
        tests[name]["p_holm"] = p
        tests[name]["equivalent"] = p is not None and p <= alpha
