"""Rows as the ledger reads them (sweeps/stats/rows.py), built by hand."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ablate.sweeps.stats.rows import CellRow


def cell_row(
    variant: str,
    seed: int,
    value: float | None = None,
    *,
    metric: str = "test/acc",
    metrics: dict[str, float | None] | None = None,
    **fields: object,
) -> CellRow:
    """One cell's row: ``value`` of ``metric`` (None: NaN, no usable value) plus ``metrics``;
    ``fields`` sets the other columns (state defaults to complete, diverged to False)."""
    from ablate.sweeps.stats.rows import CellRow

    values = {metric: value, **(metrics or {})}
    fields = {"state": "complete", "diverged": False, **fields}
    return CellRow(
        variant=variant,
        seed=seed,
        metrics={k: float("nan") if v is None else v for k, v in values.items()},
        **fields,  # type: ignore[arg-type]
    )


def cell_rows(
    values: dict[str, list[float | None]], metric: str = "test/acc", **fields: object
) -> list[CellRow]:
    """Complete cells: variant -> its value per seed 0, 1, ... (``cell_row`` for each)."""
    return [
        cell_row(v, seed, x, metric=metric, **fields) for v, xs in values.items() for seed, x in enumerate(xs)
    ]


def summary_of(
    rows: list, *, metric: str = "test/acc", direction: str = "maximize", baseline: str = "baseline", **kw
):
    """``summarize`` of ``rows`` as a study named tiny: its variants in the order the rows name them."""
    from ablate.sweeps.stats.summary import summarize

    variants = list(dict.fromkeys(r.variant for r in rows))
    return summarize(
        rows,
        experiment="tiny",
        metric=metric,
        direction=direction,
        baseline=baseline,
        variants=variants,
        **kw,
    )
