"""Logging as a process outside pytest has it, and the grid's workers run in the test's process.

pytest's logging plugin puts its capture handlers on the root logger, so during a test a WARNING
record of an ``ablate.*`` logger never reaches Python's last resort: the stderr line that an
``ablate`` command, or a notebook, shows when nothing configured logging. ``unconfigured_logging``
takes them off for a block (a forked child made inside it inherits that too).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def unconfigured_logging() -> Iterator[None]:
    """Inside: no handler on the root logger, as in a fresh interpreter or a notebook."""
    saved = logging.root.handlers[:]
    logging.root.handlers.clear()
    try:
        yield
    finally:
        logging.root.handlers[:] = saved


def workers_here(
    command: Any, run_dir: Path, options: Any, *, workers: int, url: str | None, watch: Any
) -> None:
    """A stand-in for the grid's ``run_workers``: one worker's loop (sweeps/drivers/worker.py
    ``work``) in this process, no process started; the driver's side of a sweep is unchanged."""
    from ablate.sweeps.drivers.worker import work
    from ablate.sweeps.ledger.run_folder import read_run_spec
    from ablate.sweeps.ledger.storage import default_storage

    study = (read_run_spec(run_dir), run_dir, url or default_storage(run_dir))
    work(
        [study],
        use_wandb=options.use_wandb,
        heartbeat_s=options.heartbeat_s,
        grace_s=options.grace_s,
        poll_s=0.1,
    )
