"""One table across the experiments (tasks) of a preset, as rliable reports (Agarwal et al. 2021).

Per task, every run's metric is normalized by the baseline's median on that task (1.0 = the
baseline's level), so tasks of different difficulty can be pooled. Per variant:

- IQM of the normalized scores of all runs on all tasks, with a stratified bootstrap CI
  (each task's runs resampled on their own, so every resample keeps every task);
- P(improve): the probability that a run of the variant beats a run of the baseline on the
  same task (+ half the ties), averaged over tasks, with the same stratified bootstrap.

rliable itself was not used: its arch < 8 requirement fails to import beside pandas 3
(``deprecate_kwarg() missing ... 'new_arg_name'``); these few lines are its two estimators.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from ablate.errors import ConfigError

BOOT = 2000
IQM_TRIM = 0.25


def _p_improve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(x beats y) + half the ties over all pairs; batched over leading axes (..., n1) x (..., n2)."""
    diff = x[..., :, None] - y[..., None, :]
    return np.mean(diff > 0, axis=(-2, -1)) + 0.5 * np.mean(diff == 0, axis=(-2, -1))


def aggregate(tasks: dict[str, dict[str, np.ndarray]], baseline: str, *, seed: int = 0) -> dict[str, Any]:
    """``tasks``: task -> variant -> raw scores (higher is better). Returns per-variant IQM and
    P(improve) with 95 % stratified-bootstrap percentile intervals.

    Every resample draws each task's runs of every variant again and divides them by the
    resampled baseline's median on that task: the normaliser is an estimate too, and holding
    it fixed made the interval cover 77 % (docs: statistics, calibration). The baseline's own
    row has no interval: its scores are divided by their own median, so its IQM near 1 is
    the normalisation, not a measurement."""
    for task, scores in tasks.items():
        ref = float(np.median(scores[baseline]))
        if ref <= 0:
            raise ConfigError(f"{task}: the baseline's median is {ref}; scores cannot be normalized by it")
    variants = list(next(iter(tasks.values())))
    rng = np.random.default_rng(seed)
    draws = {
        t: {v: rng.integers(0, len(s), size=(BOOT, len(s))) for v, s in n.items()} for t, n in tasks.items()
    }
    boot_ref = {
        t: np.median(n[baseline][draws[t][baseline]], axis=1, keepdims=True) for t, n in tasks.items()
    }  # (BOOT, 1): each resample's normaliser
    out: dict[str, Any] = {}
    for v in variants:
        pooled = np.concatenate([n[v] / np.median(n[baseline]) for n in tasks.values()])
        entry: dict[str, Any] = {"runs": int(pooled.size), "iqm": float(stats.trim_mean(pooled, IQM_TRIM))}
        if v != baseline:
            boot = np.concatenate([n[v][draws[t][v]] / boot_ref[t] for t, n in tasks.items()], axis=1)
            entry["iqm_ci95"] = [
                float(q) for q in np.percentile(stats.trim_mean(boot, IQM_TRIM, axis=1), [2.5, 97.5])
            ]
            per_task = [float(_p_improve(n[v], n[baseline])) for n in tasks.values()]
            boot_pi = np.mean(
                [_p_improve(n[v][draws[t][v]], n[baseline][draws[t][baseline]]) for t, n in tasks.items()],
                axis=0,
            )
            entry["p_improve"] = float(np.mean(per_task))
            entry["p_improve_ci95"] = [float(q) for q in np.percentile(boot_pi, [2.5, 97.5])]
        out[v] = entry
    return {
        "tasks": list(tasks),
        "baseline": baseline,
        "normalization": "each run's metric / the baseline's median on its task (re-estimated in every resample)",
        "bootstrap": {"resamples": BOOT, "kind": "stratified by task (runs resampled within each task)"},
        "variants": out,
    }
