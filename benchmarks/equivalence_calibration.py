"""``python -m ablate.benchmarks.equivalence_calibration [--quick] [--out F]``: does "equivalent
within ±m" keep its promise? Measured by simulation with the tool's own ``equivalence.tost``.

A claim of equivalence is wrong when the true Δ is at or beyond the margin; the two one-sided
tests promise that this happens in at most α of studies whatever the data's shape. Each
simulated study draws n seeds of a paired comparison, a per-seed difference d = variant −
baseline each, from one of five models of what ablations give, with the margin m = 0.01 (one
point of accuracy) and a spread of about one margin:

As in stats_calibration, a seed's latent (seed + noise) / √2 is shared by the two sides (what
makes a seed a pair) and the variant's latent is shifted; the models' values are

- ``normal``: 0.8 + 0.01 latent;
- ``heavy``: the same with Student-t₂ noise (outlier seeds);
- ``skewed``: 0.8 + 0.02 exp(latent / 2) (lognormal: a long right tail);
- ``ties200``: accuracy on 200 test examples, Binomial(200, 0.8 + 0.03 latent) / 200 (steps of
  0.005: many ties, and a split noise of 4 points);
- ``ceiling``: min(1, 0.99 + 0.01 latent) (differences tie at 0 when both sit at 1.000).

The truth Δ is the pseudomedian of d (the centre the signed-rank test and its interval estimate),
from 400,000 draws; the shift that puts it at ±m is found by bisection. Measured, for n = 5..20 seeds at α = 0.05:

1. the **type-I error** of the claim: the share of studies called equivalent when the truth is
   at the margin (+m, and −m: both edges), which must be <= α on every model;
2. its **power** at Δ = 0: the share called equivalent when the variant truly changes nothing
   (normal and ties200: what a user can expect per seed count).

It writes JSON (``--out``; benchmarks/results/equivalence-calibration.json unless ``--quick``)
and prints each model's worst rate and the check; ``python -m docs._gen.equivalence --write``
renders the JSON into docs/pages/explanations/statistics.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ablate.benchmarks.stats_calibration import machine
from ablate.files import atomic_write
from ablate.sweeps.stats.equivalence import tost
from ablate.sweeps.stats.inference import ALPHA

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "equivalence-calibration.json"
MARGIN = 0.01
NS = (5, 6, 7, 8, 10, 12, 15, 20)
MODELS = ("normal", "heavy", "skewed", "ties200", "ceiling")
POWER_MODELS = ("normal", "ties200")
REPS, QUICK_REPS = 4000, 400
TRUTH_DRAWS = 400_000
SLACK = 0.01  # a rate measured on 4000 studies has a standard error of 0.35 points at 5 %

SCALE = 0.01  # one latent sd in metric units (the spread of a seed's value)


def _value(model: str, latent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if model in ("normal", "heavy"):
        return 0.8 + SCALE * latent
    if model == "skewed":
        return 0.8 + 2 * SCALE * np.exp(latent / 2)  # lognormal: a long right tail
    if model == "ties200":  # the latent sets the true rate; 200 test examples score it
        return rng.binomial(200, np.clip(0.8 + 3 * SCALE * latent, 0.0, 1.0)) / 200
    if model == "ceiling":
        return np.minimum(1.0, 0.99 + SCALE * latent)
    raise ValueError(model)


def _noise(model: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_t(2, shape) / np.sqrt(2) if model == "heavy" else rng.standard_normal(shape)


def differences(model: str, shift: float, reps: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """(reps, n) per-seed differences variant − baseline. As in stats_calibration, a seed's latent
    (seed + noise) / √2 is shared by both sides (what makes a seed a pair); the variant's latent
    is moved by ``shift`` (latent sd units) before the model's value function."""
    seed = rng.standard_normal((reps, n))
    base = _value(model, (seed + _noise(model, rng, (reps, n))) / np.sqrt(2), rng)
    return _value(model, (seed + _noise(model, rng, (reps, n))) / np.sqrt(2) + shift, rng) - base


def pseudomedian(model: str, shift: float) -> float:
    """The median of (d₁ + d₂) / 2 for independent d's: the truth the signed-rank test estimates
    (TRUTH_DRAWS pairs, one fixed stream, so that bisection sees a monotone function)."""
    d = differences(model, shift, 2, TRUTH_DRAWS, np.random.default_rng(7))
    return float(np.median((d[0] + d[1]) / 2))


def shift_for(model: str, target: float) -> float:
    """The latent shift at which the model's pseudomedian is ``target``, by bisection, ending on
    the side at or beyond the target (the null's edge: Δ >= +m, or Δ <= −m)."""
    low, high = -8.0, 8.0
    for _ in range(30):
        mid = (low + high) / 2
        if pseudomedian(model, mid) < target:
            low = mid
        else:
            high = mid
    return high if target > 0 else low


def claim_rate(model: str, shift: float, n: int, reps: int, rng: np.random.Generator) -> float:
    """The share of simulated studies that ``tost`` calls equivalent within ±MARGIN."""
    d = differences(model, shift, reps, n, rng)
    return float(np.mean([tost(row, None, MARGIN, alpha=ALPHA)["equivalent"] for row in d]))


def run(quick: bool, command: str) -> dict[str, Any]:
    reps = QUICK_REPS if quick else REPS
    start = time.perf_counter()
    out: dict[str, Any] = {
        "meta": {
            "command": command,
            "machine": machine(),
            "date": datetime.date.today().isoformat(),
            "quick": quick,
            "numpy": np.__version__,
        },
        "margin": MARGIN,
        "alpha": ALPHA,
        "replicates": reps,
        "models": {},
    }
    for i, model in enumerate(MODELS):
        rng = np.random.default_rng([2026, 12, i])
        edges = {"+m": shift_for(model, MARGIN), "-m": shift_for(model, -MARGIN)}
        truth = {k: pseudomedian(model, v) for k, v in edges.items()}
        entry: dict[str, Any] = {
            "shift_at_margin": edges,
            "pseudomedian_at_margin": truth,
            "type_one": {n: max(claim_rate(model, s, n, reps, rng) for s in edges.values()) for n in NS},
        }
        if model in POWER_MODELS:
            # both sides draw alike at shift 0: d is symmetric about Δ = 0
            entry["power_at_zero"] = {n: claim_rate(model, 0.0, n, reps, rng) for n in NS}
        out["models"][model] = entry
        print(f"{model}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    out["meta"]["seconds"] = round(time.perf_counter() - start, 1)
    worst = max((r, m, n) for m, e in out["models"].items() for n, r in e["type_one"].items())
    out["checks"] = [
        {
            "check": f"type-I of 'equivalent' at a true Δ of ±m <= alpha + {SLACK:.0%} on every model",
            "worst": {"rate": worst[0], "model": worst[1], "seeds": worst[2]},
            "passed": worst[0] <= ALPHA + SLACK,
        }
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablate.benchmarks.equivalence_calibration")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} studies per cell: smoke, not data"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"JSON result (default {OUT}, not with --quick)"
    )
    args = parser.parse_args(argv)
    command = "python -m ablate.benchmarks.equivalence_calibration " + shlex.join(argv or sys.argv[1:])
    res = json.loads(json.dumps(run(args.quick, command.strip())))  # JSON's str keys, as read back
    out = args.out or (None if args.quick else OUT)
    if out is not None:
        atomic_write(out, json.dumps(res, indent=1) + "\n")
    for model, e in res["models"].items():
        worst = max(e["type_one"].values())
        power = e.get("power_at_zero")
        print(
            f"{model}: type-I at ±m up to {worst:.1%}"
            + (f"; power at Δ = 0 at 7 seeds {power['7']:.0%}" if power else "")
        )
    for c in res["checks"]:
        print(f"{'PASS' if c['passed'] else 'FAIL'}: {c['check']}: worst {c['worst']}")
    return 0 if all(c["passed"] for c in res["checks"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
