"""The two records the statistics read and write: a cell's row and a variant's statistics.

``CellRow`` is one (variant, seed) cell as the ledger reads it from its study
(sweeps/ledger/cells.py ``collect_rows``) and as results.csv stores it; the statistics,
the reports, the adaptive seeds, the power table and the docs' tables all take these rows.
``VariantStats`` is a variant's entry of summary.json (``summary["variants"][name]``), the
schema the report files, the terminal table and W&B read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypedDict

STATES = ("complete", "running", "waiting", "failed", "missing")


@dataclass(frozen=True, slots=True)
class CellRow:
    """One cell: its state and, for a complete cell, what its canonical trial recorded."""

    variant: str
    seed: int
    state: str = "complete"  # one of STATES
    diverged: bool | None = None
    wall_s: float | None = None
    n_params: int | None = None  # the model's trainable parameter count
    trial: int | None = None
    wandb_id: str | None = None
    error: str | None = None  # the last error of a cell that is not complete
    numerics: str | None = None  # what its floats were computed with (experiments/machine.numerics_key)
    metrics: Mapping[str, float] = field(default_factory=dict)  # "test/acc" -> value
    # The validation metric during training, {"metric", "steps", "values"} (the trial's ``curve``
    # attribute). Not a results.csv column, so not compared: a row read back from the file equals
    # the row it was written from.
    curve: Mapping[str, Any] | None = field(default=None, compare=False)

    def metric(self, name: str) -> float | None:
        """The metric as a finite float; None when absent, not a number, NaN or infinite."""
        try:
            value = float(self.metrics[name])
        except (KeyError, TypeError, ValueError):
            return None
        return value if math.isfinite(value) else None

    @property
    def name(self) -> str:
        """``variant/s<seed>``, as messages and the study's ``cell`` attribute name it."""
        return f"{self.variant}/s{self.seed}"

    def csv_fields(self) -> dict[str, Any]:
        """results.csv's columns: CELL_COLUMNS, then the metrics by name."""
        return {**{c: getattr(self, c) for c in CELL_COLUMNS}, **self.metrics}

    @classmethod
    def from_csv(cls, row: Mapping[str, str]) -> CellRow:
        """A results.csv line as ``csv.DictReader`` reads it (an empty field is no value)."""

        def text(key: str) -> str | None:
            value = row.get(key)
            return value if value else None

        def number(key: str, kind: type) -> Any:
            value = text(key)
            return None if value is None else kind(float(value) if kind is float else value)

        metrics = {
            k: v for k, text in row.items() if k not in CELL_COLUMNS and (v := _float(text)) is not None
        }
        diverged = text("diverged")
        return cls(
            variant=row["variant"],
            seed=int(row["seed"]),
            state=text("state") or "missing",
            diverged=None if diverged is None else diverged == "True",
            wall_s=number("wall_s", float),
            n_params=number("n_params", int),
            trial=number("trial", int),
            wandb_id=text("wandb_id"),
            error=text("error"),
            numerics=text("numerics"),
            metrics=metrics,
        )


def _float(text: str | None) -> float | None:
    """A metric field: a number ("nan" too: a diverged cell's value), else no value."""
    try:
        return float(text) if text else None
    except ValueError:
        return None


CELL_COLUMNS = tuple(f.name for f in fields(CellRow) if f.name not in ("metrics", "curve"))


class VariantStats(TypedDict):
    """A variant's statistics in summary.json; stats/summary.py ``variant_stats`` says what each
    means. The comparison fields are None for the baseline and for a side without cells."""

    n: int
    n_diverged: int
    median: float | None
    q1: float | None
    q3: float | None
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    delta: float | None  # the effect estimate: the primary test's, which the verdict uses
    ci: list[float | None] | None  # the primary test inverted
    ci_confidence: float | None
    p_value: float | None
    p_holm: float | None
    test: str | None
    paired: bool | None
    n_pairs: int | None  # paired: the pairs the test ran on (seeds both sides have); else None
    pairing: str | None
    min_seeds: int | None
    p_seq: float | None  # adaptive seeds only: p_value adjusted for the looks
    p_improve: float | None
    iqm: float | None
    iqm_ci: list[float | None] | None
    clipped: list[str] | None  # the INTERVAL_KEYS with a bound set to the metric's range
    delta_median: float | None  # descriptive, not the effect estimate (delta is)
    p_mwu: float | None  # descriptive


# summary.json's order of a variant's keys (the schema others read).
VARIANT_KEYS = tuple(VariantStats.__annotations__)
INTERVAL_KEYS = ("ci", "iqm_ci")  # the [low, high] ones
DIFFERENCE_KEYS = ("ci",)  # intervals of variant − baseline (the others: of the metric's values)
