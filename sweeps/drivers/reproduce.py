"""``ablate reproduce NAME``: every experiment of a preset swept, by one set of workers that
claims cells from all of them (grid.sweep_pool), then one table across its tasks
(report/across_tasks.py) when every cell of every experiment completed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.drivers.outcome import Outcome
from ablate.sweeps.report.across_tasks import write_aggregate


def default_profile() -> str:
    """``gpu`` where CUDA is present, else ``cpu`` (minutes on 2 cores)."""
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def default_workers() -> int:
    """One worker per GPU; on a CPU one single-threaded worker per core (up to 8)."""
    import torch

    return torch.cuda.device_count() or min(8, os.cpu_count() or 1)


def reproduce(
    name: str,
    specs: list[ExperimentSpec],
    out: Path,
    run: Callable[[list[ExperimentSpec]], list[Outcome]],
    storage: str | None = None,
) -> tuple[list[tuple[str, Outcome]], dict[str, Any] | None]:
    """``run(specs)`` sweeps the experiments (each into ``out/<spec.name>``; ``sweep_pool`` runs
    them with one set of workers); with more than one experiment and every cell complete, then
    write ``out/<name>-aggregate.{json,md}``. Each experiment's outcome, and the aggregate (None
    when not written)."""
    outcomes = list(zip([s.name for s in specs], run(specs), strict=True))
    if len(specs) < 2 or not all(o.ok for _, o in outcomes):
        return outcomes, None
    return outcomes, write_aggregate([out / s.name for s in specs], out / f"{name}-aggregate", storage)
