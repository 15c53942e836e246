"""A round of the grid driver (sweeps/drivers/grid.py ``_run_round``), job by job: the workers'
command line, the progress count, the one CPU pin, and what it hands ``run_workers``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ablate.errors import ConfigError
from ablate.sweeps.drivers import grid
from ablate.sweeps.drivers.options import RunOptions

URL = "postgresql://ablate:s3cret-pw@db.example/studies"
SINCE = datetime(2026, 1, 2, 3, 4, 5)


def fake_grid(run_dir: str, states: list[str], cpu_isa: str = "native", cells: int = 0) -> Any:
    store = SimpleNamespace(
        states=lambda: {i: SimpleNamespace(state=s) for i, s in enumerate(states)},
        ensure_cells=lambda: None,
    )
    base = SimpleNamespace(trainer=SimpleNamespace(cpu_isa=cpu_isa))
    spec = SimpleNamespace(name=run_dir, base=base, cells=lambda: [None] * cells, to_dict=lambda: {"n": 1})
    return SimpleNamespace(spec=spec, store=store, run_dir=Path(run_dir), url=URL, stopped=None)


@pytest.mark.parametrize("use_wandb", [True, False])
def test_worker_args_name_every_run_folder_and_never_the_url(use_wandb: bool) -> None:
    grids = [fake_grid("runs/a", []), fake_grid("runs/b", [])]
    options = RunOptions(storage=URL, use_wandb=use_wandb, heartbeat_s=5, grace_s=15)
    args = grid._worker_args(grids, options, SINCE)
    expected = ["--run-dir", "runs/a", "--run-dir", "runs/b", "--heartbeat", "5", "--grace", "15"]
    expected += ["--since", SINCE.isoformat(), *([] if use_wandb else ["--no-wandb"])]
    assert args == expected


def test_progress_counts_cells_over_every_grid() -> None:
    grids = [fake_grid("a", ["complete", "running", "waiting"]), fake_grid("b", ["failed", "complete"])]
    assert grid._progress(grids) == (2, "1 running, 1 failed")
    assert grid._progress([fake_grid("c", ["running", "running"])]) == (0, "2 running")


def test_one_set_of_workers_runs_one_pin() -> None:
    assert grid._one_pin([fake_grid("a", [], "avx2"), fake_grid("b", [], "avx2")], "t") == "avx2"
    with pytest.raises(ConfigError, match=r"t: the studies pin different CPU ISAs \(avx2, native\)"):
        grid._one_pin([fake_grid("a", [], "avx2"), fake_grid("b", [])], "t")


def test_a_round_hands_run_workers_the_options_and_no_more_workers_than_cells_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(grid, "run_workers", lambda *a, **kw: calls.append({"args": a, **kw}))
    monkeypatch.setattr(grid, "check_shared_failure", lambda store, since: SimpleNamespace(stop=None))
    grids = [fake_grid(str(tmp_path / "a"), ["complete", "waiting"], "avx2", cells=2)]
    options = RunOptions(workers=8, storage=URL)
    grid._run_round(grids, options, title="tiny")
    (call,) = calls
    command, run_dir, passed = call["args"]
    assert passed is options and run_dir == tmp_path / "a"
    assert command.module == "ablate.sweeps.drivers.worker" and command.env["ATEN_CPU_CAPABILITY"] == "avx2"
    assert call["workers"] == 1 and call["url"] == URL  # one cell left: one worker
    assert (call["watch"].title, call["watch"].total, call["watch"].poll()) == ("tiny", 2, (1, "0 running"))
    assert (tmp_path / "a" / "spec.json").read_text() == '{\n  "n": 1\n}\n'
