"""``python -m ablate.benchmarks.stats_calibration [--quick] [--out F]``: do the reports'
statistical claims hold? Measured by simulation with the tool's own functions.

Each simulated study draws one value per (variant, seed) from a model of what ablations give,
with a latent seed effect shared by every variant at a seed (that is what makes a seed a pair):
latent = (seed + noise) / sqrt 2 (sd 1, correlation 0.5 between two variants at a seed) plus the
variant's effect, and

- ``normal``: value = 5 + latent;
- ``skewed``: exp(latent / 2) (lognormal: a long right tail, the differences are skewed);
- ``ceiling``: accuracy 0.97 + 0.02 x latent, clipped at 1 (ties at 1.000, as saturated tasks give);
- ``bimodal``: 1.0 when latent > 0.5 ("solved"), else chance 0.5 + 0.02 noise (seeds that split
  into solved and stuck, as the order task's do).

It measures, for n = 3..15 seeds per variant:

1. the coverage of every interval the reports print, against the confidence printed beside
   it: the primary test's (paired signed-rank with Tukey's interval of the pseudomedian of the
   differences, unpaired Mann-Whitney with the Hodges-Lehmann shift; printed: the achieved
   confidence, ``ci_confidence``), the IQM's (Yuen, printed 95 %), and ``ablate aggregate``'s
   IQM and P(improve) (stratified bootstrap over 3 tasks of 5 seeds, printed 95 %), under no
   effect and under an effect of 0.5 latent sd;
2. the type-I error of the primary test per comparison and family-wise (Holm, 2 variants
   against one baseline), and of adaptive seeds per comparison and family-wise: the issue's
   5/15/5 schedule and the shipped spec's 8/16/4 (experiments/configs/ablations/*-adaptive.yaml), run
   with the real ``adaptive.look``, ``verdicts`` and ``grow`` on a real ExperimentSpec; a false
   positive is a comparison the final report calls different (p_holm <= alpha);
3. the shares ``ablate power`` and the report's headline state beside every seed count they
   print, against the simulated share of pilots whose answer truly reaches the target power
   (benchmarks/power_calibration.py: paired pilots of 5 and 7 seeds, unpaired of 5 per side, the
   headline's search up to 50 seeds; detecting the effect and showing equivalence within it),
   on the four models and on ``heavy``: value = 5 + latent + 0.5 t₃ (heavy-tailed noise).

The truths (the pseudomedian of the differences, the shift, the IQM, P(improve)) are computed
from 400,000 draws of the model. ``--quick`` runs a twentieth of the replicates and caps
``ablate power``'s search at 40 seeds: smoke, not data.

It writes its result as JSON only (``--out``; by default benchmarks/results/stats-calibration.json
unless ``--quick``) and prints each done-when check; the docs render their tables from that file
(``python -m docs._gen.calibration [--json F] [--write]``: docs are not shipped in the wheel).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ablate.benchmarks import power_calibration
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.schema.seeds import AdaptiveSeeds
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import atomic_write
from ablate.sweeps.drivers.adaptive import grow, look, verdicts
from ablate.sweeps.stats.aggregate import aggregate
from ablate.sweeps.stats.exact import holm
from ablate.sweeps.stats.inference import ALPHA, mann_whitney, signed_rank, trimmed_mean_ci
from ablate.sweeps.stats.power import MAX_SEEDS
from ablate.sweeps.stats.rows import CellRow

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "stats-calibration.json"
NS = (3, 4, 5, 6, 7, 8, 10, 12, 15)
TRUTH_DRAWS = 400_000
EFFECT = 0.5  # in latent sd units
TARGET = 0.8  # ablate power's default target
SLACK = 0.01  # the done-when tolerance: 1 percentage point
SCHEDULES = {"5/15/5": AdaptiveSeeds(min=5, max=15, step=5), "8/16/4": AdaptiveSeeds(min=8, max=16, step=4)}
FULL = {
    "interval": 4000,
    "type_one": 4000,
    "sequential": 2000,
    "aggregate": 2000,
    "pilots": 8000,
    "true_power": 4000,
}
QUICK = {
    "interval": 200,
    "type_one": 200,
    "sequential": 100,
    "aggregate": 100,
    "pilots": 100,
    "true_power": 400,
}
QUICK_MAX_SEEDS = 40
REFINE, REFINE_FACTOR = 0.015, 4  # true power within 1.5 pt of the target: 5x the studies
MODELS = ("normal", "skewed", "ceiling", "bimodal")
POWER_MODELS = (*MODELS, "heavy")  # the power section's: a heavy-tailed model beside them
SHARE_SLACK = 0.02  # ablate power's done-when: stated share within 2 points of the simulated one
# The models the done-when criteria hold on (the issue's: normal, skewed, ceiling-bounded); the
# bimodal "solved / stuck" model is measured beside them, and the docs say where it fails.
CRITERION_MODELS = ("normal", "skewed", "ceiling")


def _value(model: str, latent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if model == "normal":
        return 5.0 + latent  # positive, so that ablate aggregate can normalize it
    if model == "skewed":
        return np.exp(0.5 * latent)
    if model == "ceiling":
        return np.minimum(1.0, 0.97 + 0.02 * latent)
    if model == "bimodal":
        return np.where(latent > 0.5, 1.0, 0.5 + 0.02 * rng.standard_normal(latent.shape))
    if model == "heavy":
        return 5.0 + latent + 0.5 * rng.standard_t(3, latent.shape)
    raise ValueError(model)


def draw(
    model: str, rng: np.random.Generator, shape: tuple[int, ...], effects: tuple[float, ...]
) -> list[np.ndarray]:
    """One array per variant (baseline first, effect 0), sharing each seed's latent effect."""
    seed = rng.standard_normal(shape)
    return [
        _value(model, (seed + rng.standard_normal(shape)) / math.sqrt(2) + e, rng) for e in (0.0, *effects)
    ]


def truths(model: str, rng: np.random.Generator) -> dict[str, float]:
    """The estimands under EFFECT: pseudomedian of paired differences, HL shift, IQM, P(improve)."""
    y, x = draw(model, rng, (TRUTH_DRAWS,), (EFFECT,))
    d = x - y
    half = TRUTH_DRAWS // 2
    x2, y2 = x[:half], y[half:]  # independent pairs for the unpaired shift
    return {
        "pseudomedian": float(np.median((d[:half] + d[half:]) / 2)),
        "median_difference": float(np.median(d)),
        "shift": float(np.median(x2 - y2)),
        "iqm_variant": float(stats.trim_mean(x, 0.25)),
        "iqm_baseline": float(stats.trim_mean(y, 0.25)),
        "p_improve": float(np.mean(x2 > y2) + 0.5 * np.mean(x2 == y2)),
        "iqm_normalized": float(stats.trim_mean(x / np.median(y), 0.25)),
    }


def _covers(ci: tuple[float, float] | list[float] | None, truth: float) -> bool:
    return ci is not None and ci[0] <= truth <= ci[1]


def coverage(
    model: str, n: int, reps: int, truth: dict[str, float], rng: np.random.Generator
) -> dict[str, float | None]:
    """The share of printed intervals that hold their estimand (None: no interval is printed at n).

    Diagnostics beside them (not printed by the reports): ``paired_effect_of_median``, the paired
    interval's coverage of the median difference instead of the pseudomedian (they differ when
    the differences are asymmetric), and ``iqm_zero_width``, the share of Yuen intervals of
    width 0 (the kept values all tie)."""
    keys = (
        "paired_null",
        "paired_effect",
        "unpaired_null",
        "unpaired_effect",
        "iqm",
        "paired_effect_of_median",
    )
    hits = dict.fromkeys(keys, 0)
    shown = dict.fromkeys(keys, 0)
    zero_width = 0
    for _ in range(reps):
        y, y0, x = draw(model, rng, (n,), (0.0, EFFECT))  # y0: a paired variant with no effect
        other, other0 = draw(model, rng, (n,), (0.0,))  # independent seeds for the unpaired side
        paired = signed_rank(x - y).ci
        iqm = trimmed_mean_ci(x)
        zero_width += iqm is not None and iqm[1] == iqm[0]
        for key, ci, t in (
            ("paired_null", signed_rank(y0 - y).ci, 0.0),
            ("paired_effect", paired, truth["pseudomedian"]),
            ("unpaired_null", mann_whitney(other0, y).ci, 0.0),
            ("unpaired_effect", mann_whitney(x, other).ci, truth["shift"]),
            ("iqm", iqm, truth["iqm_variant"]),
            ("paired_effect_of_median", paired, truth["median_difference"]),
        ):
            shown[key] += ci is not None
            hits[key] += _covers(ci, t)
    out: dict[str, float | None] = {k: (hits[k] / shown[k] if shown[k] else None) for k in keys}
    out["iqm_zero_width"] = zero_width / reps
    return out


def confidence_printed(n: int) -> dict[str, float | None]:
    """The confidence the reports print beside the primary test's interval at n seeds (it
    depends on n only), and the IQM interval's nominal one."""
    z = np.arange(1.0, n + 1.0)
    return {
        "paired": signed_rank(z).confidence,
        "unpaired": mann_whitney(z, z + 0.5).confidence,
        "iqm": 1 - ALPHA,
    }


def type_one(model: str, n: int, reps: int, rng: np.random.Generator) -> dict[str, float]:
    """Rejection rates under no effect: one paired comparison, one unpaired, and Holm over two
    paired comparisons sharing the baseline (per comparison and family-wise)."""
    paired = unpaired = per = family = 0
    for _ in range(reps):
        y, a, b = draw(model, rng, (n,), (0.0, 0.0))
        pa = signed_rank(a - y)
        paired += pa.rejects
        unpaired += mann_whitney(a, draw(model, rng, (n,), ())[0]).rejects
        adj = holm([pa.p, signed_rank(b - y).p])
        hit = [p is not None and p <= ALPHA for p in adj]
        per += sum(hit)
        family += any(hit)
    return {
        "paired": paired / reps,
        "unpaired": unpaired / reps,
        "holm_per": per / (2 * reps),
        "holm_family": family / reps,
    }


# ---- adaptive seeds ------------------------------------------------------------------------------


def _spec(schedule: AdaptiveSeeds) -> ExperimentSpec:
    """A study of two variants and a baseline (no data override: paired) with this schedule."""
    return ExperimentSpec(
        name="sim",
        base=TrainConfig(),
        variants={"baseline": {}, "a": {"model.sim": 1}, "b": {"model.sim": 2}},
        seeds=tuple(range(schedule.min)),
        heatmap_seeds=(),
        metric="m",
        direction="maximize",
        adaptive=schedule,
    )


def sequential(model: str, reps: int, rng: np.random.Generator, schedule: AdaptiveSeeds) -> dict[str, float]:
    """Adaptive seeds under no effect, as ``ablate sweep`` runs them (grid._next_round): at each
    look the real ``look`` (summarize with the schedule's looks) and ``verdicts``, then ``grow``;
    a false positive is a comparison the final report calls different (p_holm <= alpha)."""
    spec0 = _spec(schedule)
    per = family = stopped_early = 0
    seeds_used = []
    for _ in range(reps):
        full = dict(zip(spec0.variants, draw(model, rng, (schedule.max,), (0.0, 0.0)), strict=True))
        spec = spec0
        while True:
            rows = [CellRow(v, s, metrics={"m": float(full[v][s])}) for v, s in spec.cells()]
            summary = look(spec, rows)
            undecided = [v for v, e in verdicts(summary, schedule).items() if not e["decided"]]
            grown = grow(spec, undecided) if undecided else None
            if grown is None:
                break
            spec = grown
        hit = [
            summary["variants"][v]["p_holm"] is not None and summary["variants"][v]["p_holm"] <= ALPHA
            for v in ("a", "b")
        ]
        per += sum(hit)
        family += any(hit)
        counts = {v: summary["variants"][v]["n"] for v in ("a", "b")}
        stopped_early += any(c < schedule.max for c in counts.values())
        seeds_used.append(summary["variants"]["baseline"]["n"])
    return {
        "per": per / (2 * reps),
        "family": family / reps,
        "stopped_early": stopped_early / reps,
        "mean_baseline_seeds": float(np.mean(seeds_used)),
        "looks": schedule.looks,
    }


# ---- the aggregate ---------------------------------------------------------------------------------


def aggregate_coverage(
    model: str, reps: int, truth: dict[str, float], rng: np.random.Generator, n: int = 5
) -> dict[str, float]:
    """``ablate aggregate`` over 3 tasks of n seeds (the same model): coverage of its IQM and
    P(improve) intervals (printed 95 %)."""
    iqm = pi = 0
    for r in range(reps):
        tasks = {}
        for t in range(3):
            y, x = draw(model, rng, (n,), (EFFECT,))
            tasks[f"t{t}"] = {"baseline": y, "v": x}
        out = aggregate(tasks, "baseline", seed=r)["variants"]["v"]
        iqm += _covers(out["iqm_ci95"], truth["iqm_normalized"])
        pi += _covers(out["p_improve_ci95"], truth["p_improve"])
    return {"iqm": iqm / reps, "p_improve": pi / reps}


# ---- the run ----------------------------------------------------------------------------------------


def machine() -> str:
    """The CPU model with its family and model numbers (/proc/cpuinfo, else platform) and the
    cores this process may use."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        info = dict(
            (k.strip(), v.strip())
            for k, _, v in (line.partition(":") for line in Path("/proc/cpuinfo").read_text().splitlines())
            if v
        )
        cpu = info.get("model name", cpu)
        if "cpu family" in info and "model" in info:
            cpu += f" (family {info['cpu family']} model {info['model']})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores, {platform.system()} {platform.machine()}"


def run(quick: bool, command: str) -> dict[str, Any]:
    reps = QUICK if quick else FULL
    max_seeds = QUICK_MAX_SEEDS if quick else MAX_SEEDS
    start = time.perf_counter()
    out: dict[str, Any] = {
        "meta": {
            "command": command,
            "machine": machine(),
            "date": datetime.date.today().isoformat(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "quick": quick,
        },
        "replicates": reps,
        "effect_latent_sd": EFFECT,
        "alpha": ALPHA,
        "printed_confidence": {n: confidence_printed(n) for n in NS},
        "models": {},
    }
    for i, model in enumerate(MODELS):
        rng = np.random.default_rng([2026, i])
        t0 = time.perf_counter()
        truth = truths(model, rng)
        out["models"][model] = {
            "truth": truth,
            "coverage": {n: coverage(model, n, reps["interval"], truth, rng) for n in NS},
            "type_one": {n: type_one(model, n, reps["type_one"], rng) for n in NS},
            "sequential": {
                name: sequential(model, reps["sequential"], rng, s) for name, s in SCHEDULES.items()
            },
            "aggregate_n5": aggregate_coverage(model, reps["aggregate"], truth, rng),
        }
        print(f"{model}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    refine = (REFINE, REFINE_FACTOR)
    out["power"] = power_calibration.section(draw, truths, POWER_MODELS, EFFECT, reps, max_seeds, refine)
    out["power"]["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"ablate power: {out['power']['seconds']:.0f} s", file=sys.stderr, flush=True)
    out["meta"]["seconds"] = round(time.perf_counter() - start, 1)
    out["checks"] = checks(out)
    return out


def checks(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The done-when criteria, each with its worst cell: coverage of every printed interval >=
    printed - 1 pt on CRITERION_MODELS; type-I <= alpha + 1 pt (primary test, Holm, adaptive
    seeds; per comparison and family-wise) on every model; ablate power's stated share within
    SHARE_SLACK of the simulated share in every cell of the normal model."""
    out: list[dict[str, Any]] = []

    def add(name: str, cells: list[tuple[str, float, float]], lower: bool, slack: float = SLACK) -> None:
        """cells: (where, value, bound); lower: value must be >= bound - slack, else <= bound + slack."""
        margin = [(v - b if lower else b - v, w, v, b) for w, v, b in cells]
        m, where, value, bound = min(margin)
        out.append(
            {"criterion": name, "worst": where, "value": value, "bound": bound, "pass": m >= -slack - 1e-12}
        )

    pc = res["printed_confidence"]
    models = {k: m for k, m in res["models"].items() if k in CRITERION_MODELS}
    for design in ("paired", "unpaired"):
        for case in ("null", "effect"):
            cells = [
                (f"{model} n={n}", c[f"{design}_{case}"], pc[n][design])
                for model, m in models.items()
                for n, c in m["coverage"].items()
                if c[f"{design}_{case}"] is not None
            ]
            add(
                f"coverage, {design} interval, {'no effect' if case == 'null' else 'effect'} (>= printed - 1)",
                cells,
                True,
            )
    # Yuen's IQM interval is not a criterion: the reports do not print it (it covers 92-95 %).
    for key, label in (("iqm", "IQM"), ("p_improve", "P(improve)")):
        cells = [(model, m["aggregate_n5"][key], 0.95) for model, m in models.items()]
        add(f"coverage, aggregate {label} interval (>= 95 - 1)", cells, True)
    for key, label in (
        ("paired", "paired test"),
        ("unpaired", "unpaired test"),
        ("holm_per", "Holm, per comparison"),
        ("holm_family", "Holm, family-wise"),
    ):
        cells = [
            (f"{model} n={n}", t[key], res["alpha"])
            for model, m in res["models"].items()
            for n, t in m["type_one"].items()
        ]
        add(f"type-I, {label} (<= 5 + 1)", cells, False)
    for key, label in (("per", "per comparison"), ("family", "family-wise")):
        cells = [
            (f"{model} {name}", s[key], res["alpha"])
            for model, m in res["models"].items()
            for name, s in m["sequential"].items()
        ]
        add(f"type-I, adaptive seeds, {label} (<= 5 + 1)", cells, False)
    out.append(share_check(res["power"]["models"]["normal"]["cells"]))
    return out


def share_check(cells: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """|stated share - simulated share| <= SHARE_SLACK in every (claim, design) cell answered."""
    gaps = [
        (f"normal, {claim}, {design}", abs(c["stated_share"] - c["simulated_share"]))
        for claim, designs in cells.items()
        for design, c in designs.items()
        if c["stated_share"] is not None
    ]
    where, gap = max(gaps, key=lambda g: g[1]) if gaps else ("no answer", math.inf)
    return {
        "criterion": "ablate power: |stated share - simulated share| of its seed counts (<= 2)",
        "worst": where,
        "value": gap,
        "bound": SHARE_SLACK,
        "pass": gap <= SHARE_SLACK + 1e-12,
    }


# ---- the result file ----------------------------------------------------------------------------


def _keys_to_str(x: object) -> object:
    if isinstance(x, dict):
        return {str(k): _keys_to_str(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_keys_to_str(v) for v in x]
    return x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.stats_calibration", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="a twentieth of the replicates (smoke, not data)")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON output (default {OUT.relative_to(ROOT.parent)} unless --quick)",
    )
    args = ap.parse_args(argv)
    raw = sys.argv[1:] if argv is None else argv
    kept = [a for a in raw if a in ("--quick",)]  # the arguments that change the numbers
    res = run(args.quick, shlex.join(["python", "-m", "ablate.benchmarks.stats_calibration", *kept]))
    out = args.out or (None if args.quick else OUT)
    if out is not None:
        atomic_write(out, json.dumps(_keys_to_str(res), indent=1) + "\n")  # the committed file's layout
        print(f"wrote {out}; the docs' tables: python -m docs._gen.calibration --json {out}", file=sys.stderr)
    for c in res["checks"]:
        print(
            f"{'pass' if c['pass'] else 'FAIL'}: {c['criterion']}: worst {c['worst']} {100 * c['value']:.1f}"
        )
    return 0 if all(c["pass"] for c in res["checks"]) or res["meta"]["quick"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
