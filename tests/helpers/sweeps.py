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


def finished_run(folder: Path, base: dict, seeds: int) -> Path:
    """``folder/tiny``: a finished sweep run folder of ``base`` (variants baseline and no_pe,
    ``seeds`` seeds), trained in this process as a worker trains it, then reported."""
    from ablate.experiments.specs.spec_file import spec_from_dict
    from ablate.files import write_json
    from ablate.sweeps.drivers.worker import run_claimed
    from ablate.sweeps.ledger.cells import open_store
    from ablate.sweeps.ledger.storage import sqlite_url
    from ablate.sweeps.report.build import report

    variants = {"baseline": {}, "no_pe": {"model.pe": "none"}}
    spec = spec_from_dict({"name": "tiny", "base": base, "variants": variants, "seeds": seeds})
    run = folder / "tiny"
    run.mkdir()
    write_json(run / "spec.json", spec.to_dict())
    store = open_store(spec, sqlite_url(run / "study.db"), create=True)
    store.ensure_cells()
    while (trial := store.claim()) is not None:
        run_claimed(store, [trial], run, use_wandb=False)
    report(spec, store, run)
    return run
