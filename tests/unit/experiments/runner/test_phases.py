"""A cell's phases: the runner's and a sweep worker's, in metrics.json, and fit's validations
taken out of its training time."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ablate.benchmarks.cell import phase_table
from ablate.experiments.runner.cells import run_trial
from ablate.experiments.runner.phases import (
    RUNNER_PHASES,
    WORKER_PHASES,
    FitTimer,
    Phases,
    non_step_share,
    process_age,
)
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.loading import load_config
from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import finished_run


def test_phases_sum_per_name_and_split_a_stack() -> None:
    phases = Phases()
    for _ in range(2):
        with phases("a"):
            time.sleep(0.01)
    with pytest.raises(RuntimeError), phases("b"):
        raise RuntimeError  # a phase that raises is still timed
    assert phases.seconds["a"] >= 0.02 and "b" in phases.seconds
    phases.add("a", 1.0)
    assert phases.shared(4)["a"] == round(phases.seconds["a"] / 4, 3)
    assert non_step_share({"train": 3.0, "setup": 1.0}) == 0.25 and non_step_share({}) is None
    before = process_age()
    time.sleep(0.05)
    assert before is not None and before > 0 and process_age() >= before + 0.04


def test_a_cell_records_each_phase_and_fit_validations_apart(tiny_config: Path, tmp_path: Path) -> None:
    cfg: TrainConfig = load_config(tiny_config, ["trainer.max_steps=6", "trainer.val_every=2"])
    result = run_trial(cfg, tmp_path / "cell")
    written = json.loads((tmp_path / "cell" / "metrics.json").read_text())["phases"]
    assert set(RUNNER_PHASES) - {"write"} <= set(written) and set(result.phases) == set(RUNNER_PHASES)
    assert all(v >= 0 for v in result.phases.values()) and result.phases["validation"] > 0
    assert result.phases["train"] > result.phases["fit_loop"] / 10  # the batches are most of fit
    # the runner's phases are the cell's wall time, to rounding (write comes after it)
    assert sum(v for k, v in result.phases.items() if k != "write") == pytest.approx(result.wall_s, abs=0.01)
    without = run_trial(cfg.override(["trainer.val_every=0"]))
    assert without.phases["validation"] == 0 and without.metrics == result.metrics


def test_the_fit_timer_counts_only_what_lies_between_start_and_end() -> None:
    timer = FitTimer()
    timer.on_validation_end()  # no start: nothing
    timer.on_train_batch_start()
    time.sleep(0.01)
    timer.on_train_batch_end()
    timer.on_validation_start()
    time.sleep(0.02)
    timer.on_validation_end()
    assert 0.01 <= timer.steps_s < 0.02 <= timer.validation_s < 1


def test_a_sweep_worker_adds_its_phases_and_marks_its_first_cell(tmp_path: Path) -> None:
    run = finished_run(tmp_path, TINY_BASE, seeds=2)
    docs = [json.loads(p.read_text()) for p in sorted((run / "cells").glob("*/metrics.json"))]
    assert len(docs) == 4
    for doc in docs:
        assert (
            {*RUNNER_PHASES, "logging", "record", "other"}
            <= set(doc["phases"])
            <= {*RUNNER_PHASES, *WORKER_PHASES}
        )
        assert ("startup" in doc["phases"]) == doc["first_in_worker"] and doc["phases"]["other"] >= 0
    # one process ran all four: at most one of them came first (an earlier test may have run one)
    assert sum(doc["first_in_worker"] for doc in docs) <= 1
    table = phase_table(run)
    later = table["later"]
    assert table["cells"] == 4 and later["cells"] + table.get("first", {}).get("cells", 0) == 4
    assert 0 < later["non_step_share"] < 1 and later["median_s"]["train"] > 0
    assert list(later["median_s"])[:3] == ["setup", "model", "train"]  # the order a cell runs them
    for doc_path in (run / "cells").glob("*/metrics.json"):
        doc = json.loads(doc_path.read_text())
        doc_path.write_text(json.dumps({k: v for k, v in doc.items() if k != "phases"}))
    with pytest.raises(SystemExit, match="no cell with phases"):
        phase_table(run)
