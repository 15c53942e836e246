"""``RunOptions``: how a driver runs its workers, one object from the command line (or the Python
API) down to ``run_workers``: ``ablate sweep``, ``search``, ``lr-check`` and ``reproduce`` alike.

A storage URL may hold a database password: ``repr`` (and so ``str``, a log line, a traceback's
locals) shows it masked (sweeps/ledger/secrets.py ``shown``). The URL reaches the workers through
their environment only (sweeps/drivers/loop.py), never a command line or a file. Standard
library only, so ``import ablate`` stays cheap.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ablate.sweeps.ledger.secrets import shown

if TYPE_CHECKING:
    from ablate.sweeps.drivers.launcher import Launcher


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOptions:
    """``--workers``, ``--storage``, ``--no-wandb``, ``--heartbeat``, ``--grace``, ``--retry-failed``
    and ``--launcher``/``--slurm``, as a driver reads them."""

    workers: int = 1  # worker processes (or jobs); a driver starts no more than it has work for
    storage: str | None = None  # an Optuna storage URL; None: each run folder's study.db
    use_wandb: bool = True
    heartbeat_s: int = 10  # seconds between a running trial's heartbeats
    grace_s: int = 30  # seconds without one before its cell is rerun
    retry_failed: bool = False  # run again the cells that failed for good (the grid's drivers)
    launcher: Launcher | None = None  # None: processes on this machine

    def __repr__(self) -> str:
        def text(name: str) -> str:
            value = getattr(self, name)
            return repr(shown(value)) if name == "storage" and value is not None else repr(value)

        return f"RunOptions({', '.join(f'{f.name}={text(f.name)}' for f in dataclasses.fields(self))})"

    @property
    def heartbeats(self) -> dict[str, int]:
        """The keywords a study store opens with (sweeps/ledger: open_store, SearchStore)."""
        return {"heartbeat_interval": self.heartbeat_s, "grace_period": self.grace_s}

    def worker_args(self) -> list[str]:
        """What every worker's command line says of these options (never the storage URL)."""
        return ["--heartbeat", str(self.heartbeat_s), "--grace", str(self.grace_s)]
