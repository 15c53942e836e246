"""Sweeps as a user runs them (the ``ablate sweep`` process) and their study read back."""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from tests.helpers.paths import ablate_cmd

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial


def run_sweep(tmp_path: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``ablate sweep tmp_path/tiny.yaml`` as a process (output under ``tmp_path/runs`` unless
    ``--runs`` is in ``args``), with a short heartbeat and grace period."""
    out = [] if "--runs" in args else ["--runs", str(tmp_path / "runs")]
    return subprocess.run(
        ablate_cmd("sweep", str(tmp_path / "tiny.yaml"), *out, "--heartbeat", "1", "--grace", "3", *args),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def trials_by_cell(run_dir: Path) -> dict[str, list[FrozenTrial]]:
    """The trials of study "tiny" in ``run_dir/study.db``, grouped by their ``cell`` user attribute."""
    import optuna  # here, not at the top: every test session imports this file

    from ablate.sweeps.ledger.storage import open_storage, sqlite_url

    # The suite's own storage settings: long lock timeout, serialized transactions.
    study = optuna.load_study(study_name="tiny", storage=open_storage(sqlite_url(run_dir / "study.db")))
    out: dict[str, list[FrozenTrial]] = collections.defaultdict(list)
    for t in study.get_trials():
        out[t.user_attrs.get("cell", "?")].append(t)
    return out
