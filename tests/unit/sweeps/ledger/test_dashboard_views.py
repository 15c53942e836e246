"""What optuna-dashboard shows for a study (sweeps/ledger/study_views.py): the objective named by the
spec's metric, report.md as the study note (after a paragraph saying the study is an ablation
grid), report.html and metric.png as study artifacts, trial user attributes that are scalars,
and the resolved config as a trial artifact."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.artifacts import FileSystemArtifactStore, get_all_artifact_meta

from ablate.experiments.schema.config import TrainConfig
from ablate.sweeps.ledger.study_views import (
    name_objective,
    open_artifacts,
    publish_report,
    put_study_file,
    result_attrs,
    study_note,
    trial_config,
    trial_metrics,
    upload_config_of,
)
from tests.helpers.configs import TINY_BASE

SCALARS = (str, int, float, bool, type(None))


def quiet_study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(direction="maximize")


# ---- fast: no training ---------------------------------------------------------------


def test_result_attrs_are_scalars_and_read_back_as_metrics() -> None:
    metrics = {"test/acc": 0.75, "val/acc": 0.5, "val/loss": 1.25}
    overrides = {"model.pe": "none", "model.n_heads": 1, "optim.betas": [0.9, 0.98]}
    attrs = result_attrs(metrics, overrides, diverged=False, wall_s=1.23456)
    assert all(isinstance(v, SCALARS) for v in attrs.values()), attrs
    assert attrs["override.model.pe"] == "none" and attrs["override.model.n_heads"] == 1
    assert attrs["override.optim.betas"] == "[0.9,0.98]"  # a list override: one cell, not a column per item
    assert attrs["wall_s"] == 1.235 and attrs["diverged"] is False
    assert trial_metrics({**attrs, "cell": "no_pe/s0", "seed": 0}) == metrics
    # A study written before the attributes were scalars keeps its metrics readable.
    assert trial_metrics({"metrics": metrics, "diverged": False}) == metrics


def test_name_objective_writes_once() -> None:
    study = quiet_study()
    assert study.metric_names is None
    name_objective(study, "test/acc")
    name_objective(study, "test/acc")
    assert study.metric_names == ["test/acc"]


def test_config_artifact_round_trips(tmp_path: Path) -> None:
    study = quiet_study()
    cfg = TrainConfig.from_dict(TINY_BASE).override({"model.pe": "none", "seed": 2})
    artifacts = FileSystemArtifactStore(str(tmp_path))
    trial = study.ask()
    upload_config_of(trial, cfg, artifacts)
    study.tell(trial, 0.5)
    frozen = study.trials[0]
    assert TrainConfig.from_dict(trial_config(frozen, study._storage, artifacts)) == cfg
    study.tell(study.ask(), 0.25)  # a trial without a config artifact
    with pytest.raises(KeyError, match="no config.yaml artifact"):
        trial_config(study.trials[1], study._storage, artifacts)


def test_publish_report_note_and_artifacts_replace_not_add(tmp_path: Path) -> None:
    study = quiet_study()
    md, html = tmp_path / "report.md", tmp_path / "report.html"
    md.write_text("| variant | median |\n|---|---|\n| baseline | 0.5 |\n")
    html.write_text("<html>v1</html>")
    publish_report(study, tmp_path, {"markdown": md, "html": html}, b"\x89PNG v1")
    html.write_text("<html>v2</html>")
    publish_report(study, tmp_path, {"markdown": md, "html": html}, b"\x89PNG v2")
    from optuna_dashboard import get_note

    note = get_note(study)
    assert note == study_note(md.read_text()) and note.endswith(md.read_text())
    # The note's first lines say the study is an ablation grid, before the optimisation views.
    first = note.split("\n\n")[0]
    assert first.startswith("> **This study is an ablation grid, not an optimisation.**")
    assert all(w in first for w in ("*Best Trial*", "best-value line", "*Hyperparameter Importance*"))
    metas = get_all_artifact_meta(study)
    assert sorted(m.filename for m in metas) == ["metric.png", "report.html"]  # rewritten, not added
    store = open_artifacts(tmp_path)
    by_name = {m.filename: store.open_reader(m.artifact_id).read() for m in metas}
    assert by_name == {"report.html": b"<html>v2</html>", "metric.png": b"\x89PNG v2"}
    # A third file of another name is added next to them.
    other = tmp_path / "other.txt"
    other.write_text("x")
    put_study_file(study, other, store)
    assert len(get_all_artifact_meta(study)) == 3
    # An artifact deleted in optuna-dashboard (its record set to null) is uploaded anew.
    html_id = next(m.artifact_id for m in metas if m.filename == "report.html")
    study._storage.set_study_system_attr(study._study_id, f"artifacts:{html_id}", json.dumps(None))
    publish_report(study, tmp_path, {"markdown": md, "html": html}, None)
    attrs = study._storage.get_study_system_attrs(study._study_id)
    live = [json.loads(v) for k, v in attrs.items() if k.startswith("artifacts:")]
    assert sorted(r["filename"] for r in live if r) == ["metric.png", "other.txt", "report.html"]


# ---- a tiny sweep, read back through the storage and the dashboard's JSON API ----------


def test_a_cells_parameters_and_curve_reach_its_trial_and_read_back(tmp_path: Path) -> None:
    """A real tiny cell's n_params and validation curve as the trial's user attributes (scalars: the
    curve one compact JSON cell), read back by collect_rows as the report reads them."""
    from ablate.experiments.runner.cells import run_trial
    from ablate.experiments.specs.spec_file import spec_from_dict
    from ablate.sweeps.ledger.cells import collect_rows, open_store
    from ablate.sweeps.ledger.storage import sqlite_url
    from ablate.sweeps.ledger.study_views import set_attrs

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    base = {**TINY_BASE, "trainer": {"max_steps": 4, "val_every": 2, "log_every": 1}}
    spec = spec_from_dict({"name": "tiny", "base": base, "variants": {"baseline": {}}, "seeds": 1})
    result = run_trial(spec.cell_config("baseline", 0))
    assert result.curve is not None and result.curve["steps"] == [2, 4] and result.n_params
    attrs = result_attrs(
        result.metrics,
        {},
        diverged=result.diverged,
        wall_s=result.wall_s,
        n_params=result.n_params,
        curve=result.curve,
    )
    assert all(isinstance(v, SCALARS) for v in attrs.values()), attrs
    assert json.loads(attrs["curve"]) == result.curve
    store = open_store(spec, sqlite_url(tmp_path / "study.db"), create=True)
    store.ensure_cells()
    trial = store.claim()
    set_attrs(trial, attrs)
    store.study.tell(trial, result.metrics["test/acc"])
    (row,) = collect_rows(store)
    assert row.n_params == result.n_params and row.curve == result.curve
    assert row.metrics == result.metrics  # n_params and the curve are not metrics
