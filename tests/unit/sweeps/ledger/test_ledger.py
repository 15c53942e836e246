"""The ledger load test (benchmarks/ledger.py) on a few cells: every cell once, no duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("backend", ["sqlite", "journal"])
def test_a_claim_does_not_read_the_whole_grid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """40 claims read the waiting list a few times and scan the grid once (the old claim read
    every trial twice per cell: O(cells^2) for a sweep). A second worker taking cells from
    under the first one's cached list costs the first lost compare-and-sets, never a duplicate."""
    from ablate.benchmarks.ledger import ledger_spec
    from ablate.sweeps.ledger import cells as store_mod

    monkeypatch.setattr(store_mod, "UPKEEP_EVERY_S", float("inf"))
    url = f"sqlite:///{tmp_path / 'study.db'}" if backend == "sqlite" else f"journal:{tmp_path / 'j.log'}"
    spec = ledger_spec(40)
    first = store_mod.open_store(spec, url, create=True)
    other = store_mod.open_store(spec, url)
    assert first.claim() is not None  # enqueues the 40 cells, reads the waiting list
    reads = []
    real = first.study.get_trials
    monkeypatch.setattr(first.study, "get_trials", lambda *a, **k: reads.append(k) or real(*a, **k))
    won = {"first": 1, "other": 0}
    for i in range(39):
        who = other if i % 3 == 0 else first  # `other` takes every third cell from under the cache
        trial = who.claim()
        assert trial is not None
        won["other" if who is other else "first"] += 1
        who.study.tell(trial, 0.0)
    assert first.claim() is None
    states = [c.state for c in first.states().values()]
    assert states.count("complete") == 39 and states.count("running") == 1, states
    assert won == {"first": 27, "other": 13}
    # `first` loses at most the 13 cells `other` took: a re-read per 3 losses in a row, at most
    # 4; then, used up, one read, the grid scan and one more read. Never one read per claim.
    waiting_reads = [k for k in reads if k.get("states") == (store_mod.TrialState.WAITING,)]
    assert 2 <= len(waiting_reads) <= 6, reads


def test_a_store_opened_between_the_first_stores_two_writes_finds_a_whole_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drivers started together race to write the study's record ("spec", "identity"). One
    that opens the study between the first one's two writes must not fail: it did with
    KeyError 'spec' when "identity" was written first (a driver exited 1 under load)."""
    import optuna

    from ablate.benchmarks.ledger import ledger_spec
    from ablate.sweeps.ledger.cells import open_store

    url, spec = f"journal:{tmp_path / 'j.log'}", ledger_spec(4)
    opened_between = []
    real = optuna.Study.set_user_attr

    def set_then_let_another_open(study: optuna.Study, key: str, value: object) -> None:
        real(study, key, value)
        if not opened_between:
            opened_between.append(key)  # once: the racing driver's own writes go straight through
            opened_between.append(open_store(spec, url))

    monkeypatch.setattr(optuna.Study, "set_user_attr", set_then_let_another_open)
    first = open_store(spec, url, create=True)
    assert len(opened_between) == 2
    assert first.study.user_attrs["identity"] == spec.identity()
    assert first.study.user_attrs["spec"]["name"] == spec.name
