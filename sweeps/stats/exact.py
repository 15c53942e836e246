"""The midrank Mann-Whitney test with ties counted, and Holm's adjustment.

- ``mwu_exact``: the Mann-Whitney U test (Mann & Whitney, 1947) with midranks, its null
  distribution counted over all C(n1 + n2, n1) splits of the pooled values: the descriptive
  ``p_mwu`` of every comparison (the decisions are inference.py's tests);
- ``holm``: Holm's (1979) step-down adjustment over k comparisons.

Accuracy ties all the time (1.000, or 0.500 at chance), so no normal approximation is used:
scipy's ``mannwhitneyu`` falls back to one with ties and halves p in the all-tied case.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import numpy as np

# Names of how p_mwu was computed.
TEST_MWU = "mwu-exact"  # exact Mann-Whitney U over all C(n1+n2, n1) splits, midranks for ties
TEST_MWU_MC = "mwu-permutation-mc"  # Monte Carlo splits (n1 + n2 > EXACT_MWU_MAX)
EXACT_MWU_MAX = 200  # pooled size up to which the U distribution is counted exactly
MC_RESAMPLES = 100_000
BOOT_SEED = 0


def mwu_exact(x: Sequence[float], y: Sequence[float], *, seed: int = BOOT_SEED) -> tuple[float, str]:
    """Two-sided Mann-Whitney U p-value from the exact permutation distribution, ties included.

    The pooled values get midranks; under H0 every split of them into n1 + n2 is equally likely.
    p = P(|U - n1 n2 / 2| >= |U_obs - n1 n2 / 2|). Twice the midranks are integers, so the test
    counts, for every subset size and doubled rank sum, the number of subsets (a knapsack over
    the pooled values: exactly the enumeration of all C(n1 + n2, n1) splits, grouped by their
    statistic) and compares integers: no float tolerance is needed. Above EXACT_MWU_MAX pooled
    values it draws MC_RESAMPLES random splits instead (seeded). Returns (p, test name).
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    y = np.asarray(y, dtype=float).reshape(-1)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    from scipy import stats  # imported where used (a finished sweep's rerun needs none)

    big = n1 + n2
    r2 = np.rint(2 * stats.rankdata(np.concatenate([x, y]))).astype(np.int64)  # doubled midranks
    t_obs = int(r2[:n1].sum())
    center = n1 * (big + 1)  # E[doubled rank sum of x] = n1 (N + 1)
    dev_obs = abs(t_obs - center)
    if big > EXACT_MWU_MAX:
        rng = np.random.default_rng(seed)
        hits, done = 0, 0
        while done < MC_RESAMPLES:
            b = min(1000, MC_RESAMPLES - done)
            perm = np.argsort(rng.random((b, big)), axis=1)[:, :n1]
            hits += int(np.count_nonzero(np.abs(r2[perm].sum(axis=1) - center) >= dev_obs))
            done += b
        return (hits + 1) / (MC_RESAMPLES + 1), TEST_MWU_MC
    k = min(n1, n2)  # the smaller side: |T_y - E T_y| = |T_x - E T_x|, so the same extreme set
    if k == n2:
        t_obs = int(r2[n1:].sum())
        center = n2 * (big + 1)
    top = int(np.sort(r2)[-k:].sum())  # the largest doubled rank sum of k values
    ways = np.zeros((k + 1, top + 1))  # ways[j, s]: subsets of size j with doubled rank sum s
    ways[0, 0] = 1.0
    for r in r2:
        ways[1:, r:] += ways[:-1, : top + 1 - r].copy()
    sums = np.arange(top + 1)
    dist = ways[k]
    extreme = np.abs(sums - center) >= abs(t_obs - center)
    return float(min(1.0, dist[extreme].sum() / comb(big, k))), TEST_MWU


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (monotone, capped at 1); None entries stay None.

    With the m given p-values sorted ascending p(1) <= ... <= p(m):
    p_holm(i) = max over j <= i of min(1, (m - j + 1) p(j)).
    """
    given = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(given)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(given):
        running = max(running, min(1.0, (m - rank) * float(p)))
        out[i] = running
    return out
