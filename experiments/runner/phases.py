"""Where a cell's wall time goes: seconds per phase, recorded in its ``metrics.json`` as
``phases`` (provenance, like ``wall_s``: no result depends on it, no check compares it).

The runner times ``setup`` (machine checks, threads, data set and tokenizer), ``model`` (build
and init), ``train`` (fit's training batches: forward, backward, optimizer), ``validation`` (the
validations during fit), ``fit_loop`` (the rest of fit: data loading, logging, a W&B run's lazy
start, Lightning's loop), ``evaluate`` (the final validation and test passes) and ``write`` (the
cell's files); a sweep worker adds ``heatmaps`` (the probe pass, PNGs and artifacts),
``logging`` (the W&B run's start, the config artifact and the run's metrics), ``record`` (the
trial told complete, the W&B run finished), ``other`` (the rest of its time around the runner:
cell folders, renames) and, for the first cell of a worker process, ``startup`` (the process's
start, imports and study opening before it, where /proc tells). A stack of K seeds shares each phase: each member records 1/K
of it. ``python -m ablate.benchmarks.cell phases RUN_DIR...`` tabulates them per task.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning as L

# In the order a cell runs them; STEP_PHASE is the training itself, every other one is overhead.
RUNNER_PHASES = ("setup", "model", "train", "validation", "fit_loop", "evaluate", "write")
WORKER_PHASES = ("heatmaps", "logging", "record", "other", "startup")
STEP_PHASE = "train"


class Phases:
    """Seconds per phase, summed over the phase's ``with phases("name"):`` blocks."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def shared(self, k: int) -> dict[str, float]:
        """Each phase's share of one of ``k`` seeds that ran together, rounded to the millisecond."""
        return {name: round(s / k, 3) for name, s in self.seconds.items()}


class FitTimer(L.Callback):
    """Inside fit: the seconds of its training batches (``on_train_batch_start`` to ``_end``:
    forward, backward, clipping, optimizer step) and of its validations; what is left of fit is
    its loop (data loading, logging, a W&B run's lazy start, Lightning's own work)."""

    def __init__(self) -> None:
        self.steps_s = 0.0
        self.validation_s = 0.0
        self._start: float | None = None

    def _begin(self, *_: Any) -> None:
        self._start = time.perf_counter()

    def _took(self) -> float:
        took, self._start = (0.0 if self._start is None else time.perf_counter() - self._start), None
        return took

    on_train_batch_start = on_validation_start = _begin

    def on_train_batch_end(self, *_: Any) -> None:
        self.steps_s += self._took()

    def on_validation_end(self, *_: Any) -> None:
        self.validation_s += self._took()


def non_step_share(phases: dict[str, float]) -> float | None:
    """The share of a cell's recorded phases that is not its training steps (None: no phases)."""
    total = sum(phases.values())
    return None if total <= 0 else 1 - phases.get(STEP_PHASE, 0.0) / total


def process_age() -> float | None:
    """Seconds since this process started (Linux: /proc/self/stat's start time against
    /proc/uptime); None where that cannot be read."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return round(uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError):
        return None
