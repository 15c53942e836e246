"""The validation curve (lit_modules/systems/curves.py): what each validation of fit logged, per
seed on the single and the stacked path, capped in length, and recorded without changing a number."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from lightning.pytorch.loggers import CSVLogger

from ablate.experiments.runner import cells
from ablate.experiments.runner.cells import run_cells, run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.loading import load_config
from ablate.lit_modules.systems import curves
from ablate.lit_modules.systems.curves import ValidationCurve

# Validation every 2 of 6 steps, dropout on (a random draw that recording must not move).
OVERRIDES = ["trainer.max_steps=6", "trainer.val_every=2", "model.dropout=0.1"]


@pytest.fixture
def cfg(tiny_config: Path) -> TrainConfig:
    return load_config(tiny_config).override(OVERRIDES)


def _logged(path: Path, metric: str) -> list[float]:
    """``metric`` as the CSV logger wrote it, one value per validation (fit's, then the final one)."""
    with path.open() as f:
        return [float(r[metric]) for r in csv.DictReader(f) if r.get(metric)]


@pytest.mark.parametrize("k", [1, 2])
def test_the_curve_is_what_each_validation_logged(
    cfg: TrainConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    """Against the CSV logger's own record, member by member: val/loss moves at every validation of
    this tiny run (its val/acc sits at 0.5), so a stale, shifted or other member's value shows."""
    monkeypatch.setattr(cells, "CURVE_METRIC", "val/loss")
    cfg = cfg.override([f"trainer.seed_parallel={k}"])
    dirs = [tmp_path / f"seed{s}" for s in range(k)]
    results = run_cells(cfg, list(range(k)), dirs, loggers=[CSVLogger(d, name="", version="") for d in dirs])
    for d, result in zip(dirs, results, strict=True):
        logged = _logged(d / "metrics.csv", "val/loss")  # 3 of fit, then evaluate's at step 6
        assert result.curve == {"metric": "val/loss", "steps": [2, 4, 6], "values": logged[:3]}
        assert logged[3] == result.metrics["val/loss"] == logged[2]  # the last step's validation, once
        assert len(set(logged[:3])) == 3
        assert json.loads((d / "metrics.json").read_text())["curve"] == result.curve
    if k == 2:
        assert results[0].curve != results[1].curve  # each member its own


def test_the_default_curve_is_val_acc_and_the_final_validation_closes_it(
    cfg: TrainConfig, tmp_path: Path
) -> None:
    """Without a validation at the last step (val_every 4 of 6), the final one is the last point."""
    result = run_trial(cfg.override(["trainer.val_every=4"]), tmp_path)
    assert result.curve is not None and result.curve["metric"] == "val/acc" == curves.CURVE_METRIC
    assert result.curve["steps"] == [4, 6] and result.curve["values"][-1] == result.metrics["val/acc"]
    assert "curve" not in result.to_dict()  # the train command's table: metrics.json has it
    assert json.loads((tmp_path / "metrics.json").read_text())["curve"] == result.curve


def test_recording_the_curve_changes_no_number(cfg: TrainConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same cell with the callback recording nothing: every metric bit-identical."""
    recorded = run_trial(cfg)
    monkeypatch.setattr(ValidationCurve, "on_validation_end", lambda self, trainer, module: None)
    silent = run_trial(cfg)
    assert silent.curve == {"metric": "val/acc", "steps": [6], "values": [silent.metrics["val/acc"]]}
    assert recorded.metrics == silent.metrics and recorded.steps == silent.steps
    assert len(recorded.curve["steps"]) == 3


def test_a_curve_is_capped_evenly_and_keeps_its_ends() -> None:
    callback = ValidationCurve(1)
    callback.points[0] = [(s, s / 1000) for s in range(1, 1001)] + [(1001, float("nan"))]
    curve = callback.curve(0, 1001, None)
    assert len(curve["steps"]) == curves.MAX_POINTS == len(set(curve["steps"]))
    assert curve["steps"][0] == 1 and curve["steps"][-1] == 1001 and curve["values"][-1] is None
    gaps = {b - a for a, b in zip(curve["steps"], curve["steps"][1:], strict=False)}
    assert gaps <= {5, 6}  # 1000 gaps over 199 steps: evenly spread
    # A member whose stack trained on after it diverged: its curve stops at its own last step.
    callback.points[0] = [(2, 0.5), (4, 0.6), (6, 0.7)]
    assert callback.curve(0, 4, 0.6) == {"metric": "val/acc", "steps": [2, 4], "values": [0.5, 0.6]}
