"""Interleaved timing: A B A B ... so background load hits both sides equally; medians, not means."""

from __future__ import annotations

import statistics
from collections.abc import Callable


def interleave(
    a: Callable[[], float], b: Callable[[], float], rounds: int
) -> tuple[list[float], list[float]]:
    """Call ``a`` and ``b`` alternately ``rounds`` times each (the order flips every round);
    each returns a rate (e.g. steps/s). Returns both lists of rates."""
    ra: list[float] = []
    rb: list[float] = []
    for i in range(rounds):
        if i % 2 == 0:
            ra.append(a())
            rb.append(b())
        else:
            rb.append(b())
            ra.append(a())
    return ra, rb


def summarize(name_a: str, ra: list[float], name_b: str, rb: list[float]) -> dict:
    """Ratio of the medians plus the median of the per-round ratios (a robustness check)."""
    ma, mb = statistics.median(ra), statistics.median(rb)
    return {
        "ratio": ma / mb,
        "ratio_of_pairs": statistics.median(x / y for x, y in zip(ra, rb, strict=True)),
        name_a: ma,
        name_b: mb,
        f"{name_a}_all": [round(x, 3) for x in ra],
        f"{name_b}_all": [round(x, 3) for x in rb],
    }
