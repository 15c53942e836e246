"""What optuna-dashboard shows for a study (sweeps/ledger/study_views.py): the objective named by the
spec's metric, report.md as the study note, report.html and metric.png as study artifacts,
trial user attributes that are scalars, and the resolved config as a trial artifact."""

from __future__ import annotations

import json
import subprocess
import wsgiref.util
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.artifacts import FileSystemArtifactStore, get_all_artifact_meta
from optuna.trial import TrialState

from ablate.experiments.config import TrainConfig
from ablate.experiments.spec import spec_from_resolved
from ablate.sweeps.ledger.study_views import (
    name_objective,
    open_artifacts,
    publish_report,
    put_study_file,
    result_attrs,
    trial_config,
    trial_metrics,
    upload_config_of,
)
from ablate.sweeps.report.text import HEADER
from tests.conftest import REPO, TINY_BASE, ablate_cmd, run_sweep, write_spec

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

    assert get_note(study) == md.read_text()
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


def api(app: Any, path: str) -> Any:
    """GET ``path`` from the dashboard's WSGI app in this process (no server, no port)."""
    environ: dict[str, Any] = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ["PATH_INFO"] = path
    status: list[str] = []
    body = b"".join(app(environ, lambda s, headers, exc_info=None: status.append(s)))
    assert status[0].startswith("200"), (path, status, body[:300])
    return json.loads(body)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny sweep: baseline vs no_pe, 2 seeds, heatmaps for seed 1."""
    tmp = tmp_path_factory.mktemp("views")
    write_spec(tmp, seeds=2)
    proc = run_sweep(tmp, "--no-wandb")
    assert proc.returncode == 0, proc.stderr
    return tmp / "runs" / "tiny"


@pytest.mark.multiprocess
def test_sweep_study_answers_in_the_dashboard(run_dir: Path) -> None:
    import optuna_dashboard

    from ablate.sweeps.ledger.storage import open_storage, sqlite_url

    storage = open_storage(sqlite_url(run_dir / "study.db"))
    study = optuna.load_study(study_name="tiny", storage=storage)
    artifacts = FileSystemArtifactStore(str(run_dir / "artifacts"))
    spec = spec_from_resolved(json.loads((run_dir / "spec.json").read_text()))
    assert study.metric_names == ["test/acc"]

    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(complete) == 4
    for t in complete:
        assert all(isinstance(v, SCALARS) for v in t.user_attrs.values()), t.user_attrs
        assert t.value == t.user_attrs["test/acc"] and "config" not in t.user_attrs
        variant, seed = t.params["variant"], t.params["seed"]
        assert {k for k in t.user_attrs if k.startswith("override.")} == {
            f"override.{k}" for k in spec.variants[variant]
        }
        # The config artifact is the cell's resolved config, the same as its folder's config.yaml.
        cfg = trial_config(t, storage, artifacts)
        assert TrainConfig.from_dict(cfg) == spec.cell_config(variant, seed)
        assert cfg == yaml.safe_load((run_dir / "cells" / f"{variant}-s{seed}" / "config.yaml").read_text())

    app = optuna_dashboard.wsgi(storage, artifact_store=artifacts)
    study_id = next(
        s["study_id"] for s in api(app, "/api/studies")["study_summaries"] if s["study_name"] == "tiny"
    )
    detail = api(app, f"/api/studies/{study_id}")
    assert detail["objective_names"] == ["test/acc"]
    report_md = (run_dir / "report.md").read_text()
    table = "| " + " | ".join(HEADER) + " |"  # the report's table, rendered as Markdown in the note
    assert detail["note"]["body"] == report_md and table in report_md
    assert all(f"| {v} |" in report_md for v in spec.variants)
    assert sorted(a["filename"] for a in detail["artifacts"]) == ["metric.png", "report.html"]
    # Every user attribute is a sortable column; a metric's column sorts numerically.
    columns = {a["key"]: a["sortable"] for a in detail["union_user_attrs"]}
    assert columns["test/acc"] and columns["wall_s"] and "override.model.pe" in columns
    html = next(a for a in detail["artifacts"] if a["filename"] == "report.html")
    assert artifacts.open_reader(html["artifact_id"]).read() == (run_dir / "report.html").read_bytes()

    # `ablate report` rewrites the study's report in place: the same artifacts, the same note.
    proc = subprocess.run(
        ablate_cmd("report", str(run_dir)), cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    again = optuna.load_study(study_name="tiny", storage=storage)
    assert sorted(m.filename for m in get_all_artifact_meta(again)) == ["metric.png", "report.html"]
    from optuna_dashboard import get_note

    assert get_note(again) == (run_dir / "report.md").read_text()
