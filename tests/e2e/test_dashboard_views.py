"""What optuna-dashboard shows for a study (sweeps/ledger/study_views.py): the objective named by the
spec's metric, report.md as the study note, report.html and metric.png as study artifacts,
trial user attributes that are scalars, and the resolved config as a trial artifact.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/ledger/test_dashboard_views.py.
"""

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

from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.spec import spec_from_resolved
from ablate.sweeps.ledger.study_views import study_note, trial_config
from ablate.sweeps.report.text import HEADER
from tests.helpers.configs import write_spec
from tests.helpers.paths import REPO, ablate_cmd
from tests.helpers.sweeps import run_sweep
from tests.unit.sweeps.ledger.test_dashboard_views import SCALARS


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
    assert detail["note"]["body"] == study_note(report_md) and table in report_md
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

    assert get_note(again) == study_note((run_dir / "report.md").read_text())
