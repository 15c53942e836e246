"""How an experiment spec names its seeds: a count or a list, an adaptive schedule
(``seeds: {min, max, step, stop}``, run in rounds by ``sweeps/drivers/adaptive.py``), or crossed seed
factors (``seed_factors: {init, data_order[, numerics]}``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ablate.errors import Range, require
from ablate.experiments.schema.config import SEED_RANGE
from ablate.experiments.schema.parsing import as_mapping, require_number

STOP_RULES = ("separated", "ci_width")
# Seeds in one study: a count, a list, an adaptive max or a seed_factors product. Sane for a
# sweep, and it keeps ``range(count)`` from allocating a billion cells.
MAX_SEEDS = 10_000
COUNT = Range(1, MAX_SEEDS)
# The CI width of a difference in the metric: positive, finite, loose enough for a loss.
WIDTH = Range(0, 1e6, lo_open=True)


@dataclass(frozen=True, kw_only=True)
class AdaptiveSeeds:
    """``seeds: {min, max, step, stop, width}``: start with seeds 0..min-1; after each round, add
    ``step`` seeds to every variant whose comparison with the baseline is still undecided (and to
    the baseline, so that they stay paired) until each is decided or has ``max`` seeds.

    ``stop: separated`` decides a comparison when its exact p, times the looks the schedule
    allows and Holm-adjusted over the comparisons, is <= 0.05; ``ci_width`` when its interval
    (at 1 - 0.05 / looks) is narrower than ``width`` (sweeps/drivers/adaptive.py says why this keeps
    the false-positive rate at 5 %).
    """

    min: int
    max: int
    step: int
    stop: Literal["separated", "ci_width"] = "separated"
    width: float | None = None

    @property
    def looks(self) -> int:
        return 1 + -(-(self.max - self.min) // self.step)  # ceil: the last round may be shorter

    @property
    def alpha_per_look(self) -> float:
        return 0.05 / self.looks

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "step": self.step, "stop": self.stop, "width": self.width}


def parse_adaptive(value: dict[str, Any], where: str) -> AdaptiveSeeds:
    keys = ("min", "max", "step", "stop", "width")
    value = as_mapping(value, f"{where}seeds")
    unknown = sorted(set(value) - set(keys))
    require(not unknown, f"{where}seeds: unknown key(s) {unknown}; valid: {', '.join(keys)}")
    for key in ("min", "max", "step"):
        require_number(value.get(key), f"{where}seeds.{key}", COUNT)
    require(
        value["min"] <= value["max"], f"{where}seeds.min={value['min']} is above seeds.max={value['max']}"
    )
    stop = value.get("stop", "separated")
    require(stop in STOP_RULES, f"{where}seeds.stop={stop!r}; choose one of {', '.join(STOP_RULES)}")
    width = value.get("width")
    if stop == "ci_width":
        require(
            width is not None,
            f"{where}seeds.stop=ci_width needs seeds.width > 0 (the CI width to reach), in {WIDTH}",
        )
        require_number(width, f"{where}seeds.width", WIDTH, integer=False)
    else:
        require(width is None, f"{where}seeds.width applies to stop: ci_width only")
    return AdaptiveSeeds(
        min=value["min"],
        max=value["max"],
        step=value["step"],
        stop=stop,
        width=None if width is None else float(width),
    )


def parse_seed_factors(value: Any, where: str) -> dict[str, int]:
    """``{init: a, data_order: b}`` or ``{init: a, data_order: b, numerics: c}``: crossed levels,
    at least 2 each, a x b (x c) seeds in all."""
    value = as_mapping(value, f"{where}seed_factors")
    require(
        {"init", "data_order"} <= set(value) <= {"init", "data_order", "numerics"},
        f"{where}seed_factors must be {{init: N, data_order: M}} or {{init: N, data_order: M, numerics: K}}"
        f" (crossed levels), got {value!r}",
    )
    for key, n in value.items():  # a factor needs two levels
        require_number(n, f"{where}seed_factors.{key}", Range(2, MAX_SEEDS))
    total = value["init"] * value["data_order"] * value.get("numerics", 1)
    names = " x ".join(k for k in ("init", "data_order", "numerics") if k in value)
    require(total in COUNT, f"{where}seed_factors: {names} = {total} seeds; valid: at most {MAX_SEEDS}")
    return dict(value)


def default_seed_count(comparisons: int, alpha: float = 0.05) -> int:
    """The seeds a spec gets without ``seeds:``: the fewest at which the paired primary test can
    give p <= alpha after Holm over ``comparisons`` comparisons. The signed-rank test's smallest
    p with n pairs is 2 / 2^n (every sign agreeing), so n is the least with 2^(1 - n) <= alpha / k:
    7 for 2 or 3 comparisons. (sweeps/stats/inference.seeds_to_reject counts the same from the
    test's null distribution; a test keeps the two equal.)"""
    n = 1
    while 2.0 ** (1 - n) > alpha / max(1, comparisons):
        n += 1
    return n


def parse_seeds(value: Any, key: str) -> tuple[int, ...]:
    """A count n (seeds 0..n-1, n in [1, MAX_SEEDS]) or a list of distinct seeds, each a valid
    numpy / Lightning seed."""
    if isinstance(value, int) and not isinstance(value, bool):
        return tuple(range(require_number(value, key, COUNT)))
    require(
        isinstance(value, list) and bool(value),
        f"{key} must be a count or a non-empty list of integers, got {type(value).__name__} {value!r}",
    )
    require(len(value) <= MAX_SEEDS, f"{key} lists {len(value)} seeds; valid: at most {MAX_SEEDS}")
    for i, seed in enumerate(value):
        require_number(seed, f"{key}[{i}]", SEED_RANGE)
    require(len(set(value)) == len(value), f"{key} lists a seed twice: {value}")
    return tuple(value)
