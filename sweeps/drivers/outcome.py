"""Did a sweep or a search finish? The counts behind the exit code of ``sweep``, ``search`` and
``reproduce``: 0 only when every cell (trial) is complete, 1 when one failed for good or is
missing. Scripts and CI read the exit code; the last printed line says the counts.

And the rule that stops a sweep early (``shared_failure``): when the first cells to finish in a
run all failed with the same error, every cell would (a plugin that raises, a setting every cell
shares), so the workers stop starting cells instead of failing and retrying each one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from optuna.trial import TrialState

from ablate.sweeps.stats.rows import CellRow

if TYPE_CHECKING:
    from ablate.sweeps.ledger.cells import CellStore

EXIT_INCOMPLETE = 1
# The cells whose failures stop a run: the first SAME_FAILURE_CELLS cells to finish in it (all
# its cells if it has fewer) all failed with the same error. Three, not one or two: one failure
# can be a cell's own (a diverged init, a transient fault), and three of three alike rarely are;
# a retry of the same cell does not count twice, and the cells must span two variants where the
# run has two (a fault in one variant's component stops nothing).
SAME_FAILURE_CELLS = 3


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
    stopped: str | None = None  # the run stopped on a failure every cell shared (shared_failure)

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


# ---- a failure every cell shares ------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """A finished attempt at a cell: ``error`` is its error, None when it completed."""

    cell: str
    variant: str
    error: str | None


@dataclass(frozen=True)
class FailureCheck:
    """What ``shared_failure`` found. ``stop``: the first error's line and the cells that met it;
    ``final``: nothing later in the run can change the answer (it stopped, a cell completed, or
    two errors differ), so it need not be checked again."""

    stop: tuple[str, tuple[str, ...]] | None
    final: bool


def failure_key(error: str, variant: str) -> str:
    """An error as the rule compares it: its first line (the exception's class and message)
    without what names the cell: the variant's name, paths, and numbers (seeds, sizes, ids)."""
    lines = error.strip().splitlines()
    line = lines[0] if lines else ""
    line = re.sub(rf"(?<![\w-]){re.escape(variant)}(?![\w-])", "<variant>", line)
    line = re.sub(r"\S*[/\\]\S*", "<path>", line)
    return re.sub(r"\d+", "<n>", line)


def shared_failure(
    attempts: Sequence[Attempt], *, cells: int, variants: int, k: int = SAME_FAILURE_CELLS
) -> FailureCheck:
    """The stop rule over a run's ``attempts`` in the order they finished: stop when the first
    ``min(k, cells)`` distinct cells to finish all failed, with the same ``failure_key``, and span
    ``min(2, variants)`` variants; never once a cell completed or an error differed first.
    ``cells``, ``variants``: the cells the run had to run (not complete when it began) and
    their variants."""
    need, spread = min(k, cells), min(2, variants)
    key, first = None, ""
    failed: dict[str, str] = {}  # cell -> variant, in the order they first failed
    for a in attempts:
        if a.error is None:
            return FailureCheck(None, True)
        this = failure_key(a.error, a.variant)
        if key is None:
            key, first = this, a.error.strip().splitlines()[0] if a.error.strip() else a.error
        elif this != key:
            return FailureCheck(None, True)
        failed.setdefault(a.cell, a.variant)
        if need and len(failed) >= need and len(set(failed.values())) >= spread:
            return FailureCheck((first, tuple(failed)), True)
    return FailureCheck(None, False)


def check_shared_failure(store: CellStore, since: datetime) -> FailureCheck:
    """``shared_failure`` on the study's attempts that started at or after ``since`` (this run):
    completed trials, and failed ones that carry an error (an interrupted or a killed worker's
    trial has none, and counts neither way)."""
    trials = store.study.get_trials(deepcopy=False)
    done_before = {
        t.user_attrs.get("cell")
        for t in trials
        if t.state == TrialState.COMPLETE and t.datetime_complete is not None and t.datetime_complete < since
    }
    todo = [(v, s) for v, s in store.spec.cells() if f"{v}/s{s}" not in done_before]
    attempts = []
    for t in trials:
        started, cell = t.datetime_start, t.user_attrs.get("cell")
        if started is None or started < since or cell is None or t.datetime_complete is None:
            continue
        if t.state == TrialState.COMPLETE or (t.state == TrialState.FAIL and "error" in t.user_attrs):
            error = None if t.state == TrialState.COMPLETE else str(t.user_attrs["error"])
            variant = str(t.user_attrs.get("variant", cell.split("/")[0]))
            attempts.append((t.datetime_complete, t.number, Attempt(cell, variant, error)))
    ordered = [a for _, _, a in sorted(attempts, key=lambda x: (x[0], x[1]))]
    return shared_failure(ordered, cells=len(todo), variants=len({v for v, _ in todo}))


def shared_failure_message(name: str, stop: tuple[str, tuple[str, ...]]) -> str:
    """The one message a run stopped by ``shared_failure`` prints."""
    error, cells = stop
    return (
        f"{name}: stopped starting cells: the first {len(cells)} cells to finish ({', '.join(cells)}) "
        f"all failed with the same error, an error every cell shares: {error}. Fix it, then run the "
        "same command with --retry-failed; cells that completed are kept."
    )
