"""Can the design answer? The checks every verdict runs before it says "not distinguishable".

A comparison's test can be exact and still unable to answer the question, because the
values it compares are pinned where nothing can move them. Per variant (its values over seeds):

- **ceiling / floor**: an accuracy-like metric (``acc``, ``f1``: in [0, 1], 1 best) equal to its
  best (1) or worst (0) value on more than half of the seeds (``MOST``): a component cannot
  show that it helps when the baseline is already perfect, and differences at the bound tie.
- **chance**: accuracy inside the central ``CHANCE_BAND`` (99 %) binomial band of the
  majority-class rate p0 of the evaluated split (``Binomial(n, p0) / n`` for its n examples,
  recorded per split by the datamodule) on more than half of the seeds: the model learned
  nothing its test split can see, so removing a component has nothing to remove.
- **no spread**: every seed gave the same value (not at a bound): the seed does not reach the
  run, so seeds are not replicates.

A comparison is **uninformative** when both its sides carry the same flag (both at ceiling: the
differences tie at 0 and count against any claim; both at chance: neither learned), or, paired,
when every per-seed difference is 0 (the variant changes nothing these seeds can see). Then an
undecided verdict names the flag and what would help instead of a seed count, and adaptive seeds
stop adding seeds to it. A flag on one side only does not stop the comparison (a variant at
chance against a baseline that learned is the finding, and more seeds decide it); a flag on the
side it is measured against is noted, as it limits what can show (at ceiling, only a loss).

Pure functions of values (no torch): summary.py, the report, ``ablate power`` and the
adaptive rounds all call ``check``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MOST = 0.5  # a flag needs strictly more than this share of the seeds
CHANCE_BAND = 0.99  # central binomial band around the majority-class rate
BOUNDED = ("acc", "f1")  # metric names (after the split's "/") in [0, 1], 1 best
SPLITS = {"val": "validation", "test": "test", "test_long": "test_long"}  # metric prefix -> split
ADVICE = {
    "ceiling": "make the task harder (longer sequences, less data) or train less",
    "floor": "train longer, or check the learning rate and the data",
    "chance": "train longer or on an easier task until the baseline learns",
    "no_spread": "check that the seed reaches the model's init and the data order",
}
LIMITS = {
    "ceiling": "only a loss can show",
    "floor": "only a gain can show",
    "chance": "only a gain over chance can show",
    "no_spread": "the seeds do not vary it, so they are not replicates",
}
RULES = {
    "most": f"a flag needs more than {MOST:.0%} of a variant's seeds",
    "ceiling_floor": f"metrics {', '.join(BOUNDED)} at exactly 1 (ceiling) or 0 (floor)",
    "chance": (
        f"accuracy inside the central {CHANCE_BAND:.0%} band of Binomial(n, p0) / n, p0 the majority-"
        "class rate of the evaluated split and n its examples"
    ),
    "no_spread": "every seed the same value (not at a bound)",
    "uninformative": "both sides of a comparison carry the same flag, or (paired) every per-seed difference is 0",
}


def bounded(metric: str) -> bool:
    """Is the metric a proportion in [0, 1] whose best value is 1 (``test/acc``, ``val/f1``)?"""
    return metric.rpartition("/")[2] in BOUNDED


def chance_band(majority: float, n: int) -> tuple[float, float]:
    """The central CHANCE_BAND interval of an accuracy reached by always predicting the majority
    class (rate ``majority``) on ``n`` examples: Binomial(n, majority) / n's quantiles."""
    from scipy import stats  # imported where used (a finished sweep's rerun needs none)

    tail = (1 - CHANCE_BAND) / 2
    return float(stats.binom.ppf(tail, n, majority)) / n, float(stats.binom.isf(tail, n, majority)) / n


def chance_of(metric: str, splits: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The evaluated split's majority-class rate and size for an accuracy metric, when every set
    of splits (summary["splits"]["sets"]) records the same ones; None otherwise (not accuracy,
    no record, or a record from before ablate kept class rates)."""
    prefix, _, name = metric.rpartition("/")
    split = SPLITS.get(prefix)
    if name != "acc" or split is None:
        return None
    found = {
        (float(s["splits"][split]["majority"]), int(s["splits"][split]["n"]))
        for s in splits
        if split in (s.get("splits") or {}) and s["splits"][split].get("majority") is not None
    }
    if len(found) != 1 or len(found) != len(splits):
        return None
    ((majority, n),) = found
    low, high = chance_band(majority, n)
    return {"split": split, "majority": majority, "n": n, "band": [low, high]}


def variant_flags(
    values: Sequence[float], metric: str, chance: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The flags of one variant's values (module docstring), each ``{kind, seeds, n, text}``."""
    x = np.asarray(values, dtype=float).reshape(-1)
    n = x.size
    if n == 0:
        return []
    out = []

    def flag(kind: str, k: int, what: str) -> None:
        if k > MOST * n:
            out.append({"kind": kind, "seeds": k, "n": n, "text": f"{what} on {k}/{n} seeds"})

    if bounded(metric):
        flag("ceiling", int(np.count_nonzero(x >= 1.0)), "at ceiling: 1.000")
        flag("floor", int(np.count_nonzero(x <= 0.0)), "at the floor: 0.000")
    if chance is not None and not any(f["kind"] in ("ceiling", "floor") for f in out):
        low, high = chance["band"]
        flag(
            "chance",
            int(np.count_nonzero((x >= low) & (x <= high))),
            f"at chance: within [{low:.3f}, {high:.3f}], the {CHANCE_BAND:.0%} binomial band of the "
            f"majority-class rate {chance['majority']:.3f} ({chance['split']}, {chance['n']} examples),",
        )
    if n >= 2 and not out and float(x.min()) == float(x.max()):
        out.append(
            {
                "kind": "no_spread",
                "seeds": n,
                "n": n,
                "text": f"identical on every seed: {x[0]:.4g} on {n}/{n} seeds",
            }
        )
    return out


def comparison_check(
    ref: str,
    ref_flags: Sequence[Mapping[str, Any]],
    flags: Sequence[Mapping[str, Any]],
    diffs: Sequence[float] | None,
) -> dict[str, Any]:
    """``{uninformative, reasons, notes}`` of one comparison. Uninformative: both sides carry
    the same flag (both at ceiling, at the floor, at chance, or without spread), or (``diffs``:
    the per-seed differences of a paired comparison) every difference is 0. ``notes``: a flag
    of ``ref`` (the baseline, or b of "a vs b") that the other side does not share, which limits
    what can show (at ceiling only a loss) without stopping the comparison."""
    kinds = {f["kind"] for f in flags}
    reasons = [f"{ref} {f['text']}; {ADVICE[f['kind']]}" for f in ref_flags if f["kind"] in kinds]
    notes = [f"{ref} {f['text']}: {LIMITS[f['kind']]}" for f in ref_flags if f["kind"] not in kinds]
    if diffs is not None and len(diffs) >= 2 and all(d == 0 for d in diffs):
        reasons.append(
            f"identical to {ref} on every seed (Δ 0 on {len(diffs)}/{len(diffs)}): the variant changes "
            "nothing these seeds can see; a margin (margin: in the spec) would test equivalence"
        )
    return {"uninformative": bool(reasons), "reasons": reasons, "notes": notes}


def check(
    cells: Mapping[str, Sequence[tuple[int, float, bool]]],
    pairs: Mapping[str, tuple[str, str, bool]],
    metric: str,
    chance: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """summary.json's ``design``: each variant's flags and each comparison's check. ``cells``:
    (seed, value, diverged) per variant (summary.collect); ``pairs``: comparison name -> (the
    variant, the side it is measured against, paired?)."""
    flags = {v: variant_flags([x for _, x, _ in cs], metric, chance) for v, cs in cells.items()}
    comparisons = {}
    for name, (a, b, paired) in pairs.items():
        ref = {s: x for s, x, _ in cells[b]}
        diffs = [x - ref[s] for s, x, _ in cells[a] if s in ref] if paired else None
        comparisons[name] = comparison_check(b, flags[b], flags[a], diffs)
    return {
        "chance": dict(chance) if chance else None,
        "variants": flags,
        "comparisons": comparisons,
        "rules": RULES,
    }
