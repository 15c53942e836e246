"""How an experiment spec names its seeds: a count or a list, an adaptive schedule
(``seeds: {min, max, step, stop}``, run in rounds by ``sweeps/adaptive.py``), or crossed seed
factors (``seed_factors: {init, data_order}``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ablate.errors import require

STOP_RULES = ("separated", "ci_width")


@dataclass(frozen=True, kw_only=True)
class AdaptiveSeeds:
    """``seeds: {min, max, step, stop, width}``: start with seeds 0..min-1; after each round, add
    ``step`` seeds to every variant whose comparison with the baseline is still undecided (and to
    the baseline, so that they stay paired) until each is decided or has ``max`` seeds.

    ``stop: separated`` decides a comparison when the CI of its Δ excludes 0, ``ci_width`` when
    the CI is narrower than ``width``. The CI of every look is taken at level 1 - 0.05 / looks
    (Bonferroni over the possible looks), so peeking after each round keeps the error rate of
    "separated" at 5 % or less.
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
    def level(self) -> float:
        return 1 - 0.05 / self.looks

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "step": self.step, "stop": self.stop, "width": self.width}


def parse_adaptive(value: dict[str, Any], where: str) -> AdaptiveSeeds:
    keys = ("min", "max", "step", "stop", "width")
    unknown = sorted(set(value) - set(keys))
    require(not unknown, f"{where}seeds: unknown key(s) {unknown}; valid: {', '.join(keys)}")
    for key in ("min", "max", "step"):
        v = value.get(key)
        require(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1,
            f"{where}seeds.{key} must be an integer >= 1, got {v!r}",
        )
    require(
        value["min"] <= value["max"], f"{where}seeds.min={value['min']} is above seeds.max={value['max']}"
    )
    stop = value.get("stop", "separated")
    require(stop in STOP_RULES, f"{where}seeds.stop={stop!r}; choose one of {', '.join(STOP_RULES)}")
    width = value.get("width")
    if stop == "ci_width":
        require(
            isinstance(width, (int, float)) and not isinstance(width, bool) and width > 0,
            f"{where}seeds.stop=ci_width needs seeds.width > 0 (the CI width to reach), got {width!r}",
        )
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
    require(
        isinstance(value, dict) and set(value) == {"init", "data_order"},
        f"{where}seed_factors must be {{init: N, data_order: M}} (crossed levels), got {value!r}",
    )
    for key, n in value.items():
        require(
            isinstance(n, int) and not isinstance(n, bool) and n >= 2,
            f"{where}seed_factors.{key} must be an integer >= 2 (a factor needs two levels), got {n!r}",
        )
    return dict(value)


def parse_seeds(value: Any, key: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        require(value >= 1, f"{key}={value}: a seed count must be >= 1")
        return tuple(range(value))
    require(
        isinstance(value, list)
        and value
        and all(isinstance(s, int) and not isinstance(s, bool) for s in value),
        f"{key} must be a count or a non-empty list of integers, got {value!r}",
    )
    require(len(set(value)) == len(value), f"{key} lists a seed twice: {value}")
    return tuple(value)
