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


def _p_improve(x: np.ndarray, y: np.ndarray) -> float:
    diff = x[:, None] - y[None, :]
    return float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))


def aggregate(tasks: dict[str, dict[str, np.ndarray]], baseline: str, *, seed: int = 0) -> dict[str, Any]:
    """``tasks``: task -> variant -> raw scores (higher is better). Returns per-variant IQM and
    P(improve) with 95 % stratified-bootstrap CIs."""
    norm = {}
    for task, scores in tasks.items():
        ref = float(np.median(scores[baseline]))
        if ref <= 0:
            raise ConfigError(f"{task}: the baseline's median is {ref}; scores cannot be normalized by it")
        norm[task] = {v: s / ref for v, s in scores.items()}
    variants = list(next(iter(tasks.values())))
    rng = np.random.default_rng(seed)
    draws = {
        t: {v: rng.integers(0, len(s), size=(BOOT, len(s))) for v, s in n.items()} for t, n in norm.items()
    }
    out: dict[str, Any] = {}
    for v in variants:
        pooled = np.concatenate([n[v] for n in norm.values()])
        boot_pooled = np.concatenate([n[v][draws[t][v]] for t, n in norm.items()], axis=1)  # (BOOT, runs)
        iqm = float(stats.trim_mean(pooled, IQM_TRIM))
        iqm_boot = stats.trim_mean(boot_pooled, IQM_TRIM, axis=1)
        entry = {
            "runs": int(pooled.size),
            "iqm": iqm,
            "iqm_ci95": [float(q) for q in np.percentile(iqm_boot, [2.5, 97.5])],
        }
        if v != baseline:
            per_task = [_p_improve(n[v], n[baseline]) for n in norm.values()]
            boot = np.mean(
                [
                    [
                        _p_improve(n[v][draws[t][v][b]], n[baseline][draws[t][baseline][b]])
                        for b in range(BOOT)
                    ]
                    for t, n in norm.items()
                ],
                axis=0,
            )
            entry["p_improve"] = float(np.mean(per_task))
            entry["p_improve_ci95"] = [float(q) for q in np.percentile(boot, [2.5, 97.5])]
        out[v] = entry
    return {
        "tasks": list(tasks),
        "baseline": baseline,
        "normalization": "each run's metric / the baseline's median on its task",
        "bootstrap": {"resamples": BOOT, "kind": "stratified by task (runs resampled within each task)"},
        "variants": out,
    }
