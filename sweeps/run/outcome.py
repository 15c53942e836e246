"""Did a sweep or a search finish? The counts behind the exit code of ``sweep``, ``search`` and
``reproduce``: 0 only when every cell (trial) is complete, 1 when one failed for good or is
missing. Scripts and CI read the exit code; the last printed line says the counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ablate.sweeps.stats.rows import CellRow

EXIT_INCOMPLETE = 1


@dataclass(frozen=True)
class Outcome:
    """``complete`` of ``total`` units (cells or search trials), ``failed`` failed for good; the
    rest are missing (never run, or still waiting or running when the workers stopped)."""

    total: int
    complete: int
    failed: int
    unit: str = "cells"
    first_error: str | None = None
    lost: str | None = None  # the study file vanished mid-run: no count can be trusted as a success

    @property
    def missing(self) -> int:
        return self.total - self.complete - self.failed

    @property
    def ok(self) -> bool:
        return self.complete == self.total and self.lost is None

    def counts(self) -> str:
        done = "finished" if self.unit == "trials" else "complete"
        text = f"{self.complete}/{self.total} {self.unit} {done}"
        if self.lost:
            return f"{text}, then the study file was lost"
        return text if self.ok else f"{text}; {self.failed} failed, {self.missing} missing"


def grid_outcome(rows: Iterable[CellRow]) -> Outcome:
    """From ``ledger.cells.collect_rows``: one row per cell of the spec, with its state and last error."""
    rows = list(rows)
    failed = [r for r in rows if r.state == "failed"]
    error = next((f"{r.name}: {r.error}" for r in failed if r.error), None)
    return Outcome(
        total=len(rows),
        complete=sum(r.state == "complete" for r in rows),
        failed=len(failed),
        first_error=error,
    )


def search_outcome(summary: dict[str, Any]) -> Outcome:
    """From ``search.json``: each variant needs ``trials`` finished (complete or pruned) trials;
    one that stopped asking after repeated errors has the rest failed."""
    trials = summary["trials"]
    total = complete = failed = 0
    for v in summary["variants"].values():
        done = min(trials, v["complete"] + v["pruned"])
        total, complete = total + trials, complete + done
        failed += min(trials - done, v["errors"])
    return Outcome(total=total, complete=complete, failed=failed, unit="trials")


def final_line(outcomes: list[tuple[str, Outcome]]) -> tuple[str, int]:
    """The last line a command prints, and its exit code: 0 when all are complete, else 1."""
    code = 0 if all(o.ok for _, o in outcomes) else EXIT_INCOMPLETE
    parts = [f"{name}: {o.counts()}" if name else o.counts() for name, o in outcomes]
    return f"{'; '.join(parts)}: exit {code}", code
