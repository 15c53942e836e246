"""A failure every cell shares stops the sweep (sweeps/drivers/outcome.py ``shared_failure``): the
rule on its own, then on a real SQLite study as the worker's claim meets it."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from optuna.trial import TrialState

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.drivers.outcome import (
    SAME_FAILURE_CELLS,
    Attempt,
    check_shared_failure,
    failure_key,
    shared_failure,
)
from ablate.sweeps.drivers.worker import Study, claim_group
from ablate.sweeps.ledger.cells import CellStore, open_store
from ablate.sweeps.ledger.storage import sqlite_url
from tests.helpers.configs import TINY_BASE

NORM = "RuntimeError: this norm always fails"


def fail(cell: str, error: str = NORM) -> Attempt:
    return Attempt(cell, cell.split("/")[0], error)


def test_the_same_error_in_the_first_k_cells_stops() -> None:
    attempts = [fail("a/s0"), fail("b/s0"), fail("a/s1")]
    check = shared_failure(attempts, cells=10, variants=2)
    assert check.final and check.stop == (NORM, ("a/s0", "b/s0", "a/s1"))
    assert shared_failure(attempts[:2], cells=10, variants=2) == shared_failure([], cells=10, variants=2)
    assert not shared_failure(attempts[: SAME_FAILURE_CELLS - 1], cells=10, variants=2).final  # not yet


def test_different_errors_or_a_completed_cell_never_stop() -> None:
    other = [fail("a/s0"), fail("b/s0", "ValueError: bad"), fail("a/s1"), fail("b/s1")]
    assert shared_failure(other, cells=10, variants=2).stop is None
    assert shared_failure(other[:2], cells=10, variants=2).final  # settled: no need to look again
    done_first = [Attempt("a/s0", "a", None), fail("b/s0"), fail("a/s1"), fail("b/s1")]
    check = shared_failure(done_first, cells=10, variants=2)
    assert check.stop is None and check.final
    # A cell that completes after the first k failed does not undo the stop.
    late = [fail("a/s0"), fail("b/s0"), fail("a/s1"), Attempt("b/s1", "b", None)]
    assert shared_failure(late, cells=10, variants=2).stop is not None


def test_fewer_cells_than_k_stop_once_all_failed() -> None:
    assert shared_failure([fail("a/s0")], cells=2, variants=2).stop is None
    check = shared_failure([fail("a/s0"), fail("b/s0")], cells=2, variants=2)
    assert check.stop == (NORM, ("a/s0", "b/s0"))


def test_a_retry_counts_once_and_one_variant_alone_is_not_every_cell() -> None:
    retried = [fail("a/s0"), fail("a/s0"), fail("b/s0")]
    assert shared_failure(retried, cells=10, variants=2).stop is None
    # Three failures in one variant's cells (a stacked group, say) while another variant waits:
    one_variant = [fail("a/s0"), fail("a/s1"), fail("a/s2")]
    assert shared_failure(one_variant, cells=10, variants=2).stop is None
    assert shared_failure([*one_variant, fail("b/s0")], cells=10, variants=2).stop is not None
    assert shared_failure(one_variant, cells=10, variants=1).stop is not None  # a one-variant run


def test_what_names_the_cell_is_not_part_of_the_error() -> None:
    a = "OSError: cannot write /r/cells/.no_pe-s1.partial-1a2b/x.json for no_pe seed 1\nTraceback ..."
    b = "OSError: cannot write /r/cells/.baseline-s4.partial-9f/x.json for baseline seed 4"
    assert failure_key(a, "no_pe") == failure_key(b, "baseline")
    assert failure_key("OSError: disk full", "x") != failure_key("OSError: quota exceeded", "x")
    assert failure_key("RuntimeError: boom", "a") != failure_key("ValueError: boom", "a")


def grid_store(tmp_path: Path, seeds: int = 2) -> CellStore:
    spec = spec_from_dict(
        {
            "name": "tiny",
            "base": TINY_BASE,
            "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
            "seeds": seeds,
        }
    )
    store = open_store(spec, sqlite_url(tmp_path / "study.db"), create=True)
    store.ensure_cells()
    return store


def run_one(store: CellStore, error: str | None, variant: str | None = None) -> str:
    """Claim a cell (of ``variant``) and fail it with ``error``, or complete it (None)."""
    trial = store.claim(variant)
    assert trial is not None
    if error is None:
        store.study.tell(trial, 0.5)
    else:
        trial.set_user_attr("error", error)
        store.study.tell(trial, state=TrialState.FAIL)
    return trial.user_attrs["cell"]


def test_the_worker_stops_claiming_and_the_driver_sees_why(tmp_path: Path) -> None:
    store = grid_store(tmp_path)  # 4 cells, 2 variants
    since = datetime.now()
    served = [Study(store, tmp_path, since)]
    run_one(store, f"{NORM} (cell 1)", "baseline")
    run_one(store, f"{NORM} (cell 2)", "no_pe")
    assert check_shared_failure(store, since).stop is None  # 2 of the first 3
    claimed = claim_group(served, poll_s=0.01)
    assert claimed is not None  # the third cell
    claimed[1][0].set_user_attr("error", f"{NORM} (cell 3)")
    store.study.tell(claimed[1][0], state=TrialState.FAIL)
    assert claim_group(served, poll_s=0.01) is None  # stopped: the fourth cell is never claimed
    assert served[0].stop is not None and NORM in served[0].stop and "--retry-failed" in served[0].stop
    states = [c.state for c in store.states().values()]
    assert sorted(states) == ["failed", "failed", "failed", "waiting"]
    # The run's start bounds what counts: a later run (after a fix) is not stopped by them.
    later = datetime.now() + timedelta(seconds=1)
    assert check_shared_failure(store, later).stop is None and not check_shared_failure(store, later).final


def test_a_run_with_a_completed_cell_is_never_stopped(tmp_path: Path) -> None:
    store = grid_store(tmp_path)
    since = datetime.now()
    run_one(store, None)
    for _ in range(3):
        if store.claim() is None:
            break
    check = check_shared_failure(store, since)
    assert check.stop is None and check.final


@pytest.mark.parametrize("before", [True, False])
def test_cells_complete_before_the_run_are_not_its_cells(tmp_path: Path, before: bool) -> None:
    """With 3 of 4 cells complete before the run, the one left failing is all of its cells."""
    store = grid_store(tmp_path)
    for _ in range(3):
        run_one(store, None)
    since = datetime.now() if before else datetime.now() - timedelta(hours=1)
    run_one(store, NORM)
    check = check_shared_failure(store, since)
    assert (check.stop is not None) is before  # if the completions are this run's, they settle it
