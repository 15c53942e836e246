"""What a study shows in optuna-dashboard: a named objective, report.md as the study note (after
GRID_NOTE, which says the study is an ablation grid), report.html and the metric plot as study
artifacts, and trial user attributes that fit a table.

A trial's user attributes are scalars only (the dashboard draws a dict as one tall JSON cell
per row): each metric under its own name (``test/acc``), ``diverged``, ``steps``, ``wall_s``,
``n_params`` (the model's trainable parameters), the validation curve ``curve`` as compact JSON
(``{"metric", "steps", "values"}``, lit_modules/systems/curves.py), each of the variant's overrides
as ``override.<key>``, and each data split's size and source as ``split.<name>.n`` and
``split.<name>.source`` (datamodules/splits.py). The full resolved config is the trial artifact
``config.yaml``, the same file as the cell folder's ``config.yaml``.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.artifacts import FileSystemArtifactStore, download_artifact, upload_artifact
from optuna.trial import FrozenTrial

from ablate.datamodules.splits import in_order
from ablate.experiments.schema.config import TrainConfig
from ablate.files import atomic_write, write_yaml

OVERRIDE_PREFIX = "override."
SPLIT_PREFIX = "split."
CONFIG_ARTIFACT = "config.yaml"
PLOT_FILE = "metric.png"
Scalar = str | int | float | bool | None
# Optuna's system-attribute prefix of artifact records (optuna/artifacts/_upload.py).
ARTIFACT_ATTR = "artifacts:"
# The first lines of the study note. optuna-dashboard draws every single-objective study as an
# optimisation, with no setting to turn that off (0.21: the "Best Trial" card and badge, the
# best-value line on History, PED-ANOVA importance over the params `seed` and `variant`, Slice
# on the first param by name, `seed`); the note is the first card of the study's page.
GRID_NOTE = (
    "> **This study is an ablation grid, not an optimisation.** Each trial is one (variant, seed) "
    "cell, and every cell enters the statistics. The *Best Trial* badge, the best-value line on "
    "*History* and the *Hyperparameter Importance* (which ranks `seed` beside `variant`) are not "
    "results: the verdicts and the table below are, as in the run folder's report.html "
    "(`ablate dashboard RUN_DIR` opens it at `/`)."
)


def open_artifacts(run_dir: Path) -> FileSystemArtifactStore:
    """The run folder's artifact store (``artifacts/``), where workers put heatmaps and configs."""
    (run_dir / "artifacts").mkdir(exist_ok=True)
    return FileSystemArtifactStore(str(run_dir / "artifacts"))


def name_objective(study: optuna.Study, metric: str) -> None:
    """Show the metric's name (``test/acc``) instead of "Objective 0"; writes only when it differs."""
    if study.metric_names != [metric]:
        with warnings.catch_warnings():  # "experimental" since Optuna 3.2; optuna-dashboard reads it
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names([metric])


# ---- trial attributes ----------------------------------------------------------------


def is_metric(key: str) -> bool:
    """Metrics are named ``<stage>/<name>`` (``val/acc``); no other user attribute has a ``/``."""
    return "/" in key and not key.startswith(OVERRIDE_PREFIX)


def scalar(value: Any) -> Scalar:
    """A table cell: scalars as they are, anything else (a list override) as compact JSON."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, separators=(",", ":"))


def result_attrs(
    metrics: dict[str, float],
    overrides: dict[str, Any],
    *,
    diverged: bool,
    wall_s: float,
    splits: dict[str, dict[str, Any]] | None = None,
    n_params: int | None = None,
    curve: dict[str, Any] | None = None,
) -> dict[str, Scalar]:
    """The user attributes of a finished trial: every metric, the outcome, what it cost (wall time,
    parameters), its validation curve, the variant's overrides, and the data splits' sizes and
    sources."""
    attrs: dict[str, Scalar] = dict(metrics)
    attrs.update(diverged=diverged, wall_s=round(wall_s, 3))
    if n_params is not None:
        attrs["n_params"] = n_params
    if curve is not None:
        attrs["curve"] = scalar(curve)  # one table cell, not a tall JSON one
    attrs.update({f"{OVERRIDE_PREFIX}{k}": scalar(v) for k, v in overrides.items()})
    for name, split in (splits or {}).items():
        attrs.update({f"{SPLIT_PREFIX}{name}.{k}": scalar(v) for k, v in split.items()})
    return attrs


def set_attrs(trial: optuna.Trial, attrs: dict[str, Scalar]) -> None:
    for key, value in attrs.items():
        trial.set_user_attr(key, value)


def trial_metrics(attrs: dict[str, Any]) -> dict[str, float]:
    """A trial's metrics from its user attributes; a study written before they were scalars keeps
    them in one ``metrics`` dict, which is read the same way."""
    legacy = attrs.get("metrics")
    if isinstance(legacy, dict):
        return dict(legacy)
    return {k: v for k, v in attrs.items() if is_metric(k)}


def trial_curve(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """A trial's validation curve ``{"metric", "steps", "values"}`` from its ``curve`` attribute;
    None for a trial recorded without one, or whose record is not a curve."""
    value = attrs.get("curve")
    try:
        curve = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if not isinstance(curve, dict) or not isinstance(curve.get("metric"), str):
        return None
    steps, values = curve.get("steps"), curve.get("values")
    if not isinstance(steps, list) or not isinstance(values, list) or len(steps) != len(values):
        return None
    return {"metric": curve["metric"], "steps": steps, "values": values}


def trial_splits(attrs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{split: {"n", "source"}}`` from a trial's ``split.<name>.<key>`` attributes (empty for a
    trial recorded before ablate stored them)."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(SPLIT_PREFIX):
            name, _, field = key[len(SPLIT_PREFIX) :].rpartition(".")
            out.setdefault(name, {})[field] = value
    return in_order(out)


def artifact_ids(system_attrs: dict[str, Any], filename: str) -> list[str]:
    """The ids of the artifacts named ``filename`` in a study's or trial's system attributes.

    Not ``optuna.artifacts.get_all_artifact_meta``: it fails on an artifact deleted in
    optuna-dashboard, which leaves its record as JSON ``null``; here such a record is skipped.
    """
    records = (json.loads(v) for k, v in system_attrs.items() if k.startswith(ARTIFACT_ATTR))
    return [r["artifact_id"] for r in records if r is not None and r["filename"] == filename]


# ---- the config artifact --------------------------------------------------------------


def upload_config(trial: optuna.Trial, config_yaml: Path, artifacts: FileSystemArtifactStore) -> None:
    """The trial's resolved config (a cell folder's ``config.yaml``) as its artifact."""
    assert config_yaml.name == CONFIG_ARTIFACT, config_yaml  # the artifact is named by the file
    upload_artifact(artifact_store=artifacts, file_path=str(config_yaml), study_or_trial=trial)


def upload_config_of(trial: optuna.Trial, cfg: TrainConfig, artifacts: FileSystemArtifactStore) -> None:
    """A config that has no cell folder (a search trial): written to a scratch file, then uploaded."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / CONFIG_ARTIFACT
        write_yaml(path, cfg.to_dict())
        upload_config(trial, path, artifacts)


def trial_config(
    trial: FrozenTrial, storage: optuna.storages.BaseStorage, artifacts: FileSystemArtifactStore
) -> dict[str, Any]:
    """The resolved config stored with a trial (nested, as ``TrainConfig.to_dict``)."""
    ids = artifact_ids(storage.get_trial_system_attrs(trial._trial_id), CONFIG_ARTIFACT)
    if not ids:
        raise KeyError(f"trial {trial.number} has no {CONFIG_ARTIFACT} artifact")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / CONFIG_ARTIFACT
        download_artifact(artifact_store=artifacts, artifact_id=ids[-1], file_path=str(path))
        return yaml.safe_load(path.read_text())


# ---- the study's note and artifacts ---------------------------------------------------


def put_study_file(study: optuna.Study, path: Path, artifacts: FileSystemArtifactStore) -> None:
    """Upload ``path`` as a study artifact, or overwrite the one of the same name (a report
    rewritten by ``ablate report`` replaces its old version instead of adding a second)."""
    ids = artifact_ids(study._storage.get_study_system_attrs(study._study_id), path.name)
    if not ids:
        upload_artifact(artifact_store=artifacts, file_path=str(path), study_or_trial=study)
        return
    with path.open("rb") as body:
        artifacts.write(ids[0], body)


def study_note(report_md: str) -> str:
    """The study note: GRID_NOTE, then report.md."""
    return f"{GRID_NOTE}\n\n{report_md}"


def publish_report(
    study: optuna.Study, run_dir: Path, files: dict[str, Path], plot_png: bytes | None
) -> None:
    """GRID_NOTE and report.md as the study note; report.html and the metric plot (``metric.png``)
    as study artifacts. ``files`` is what ``write_report`` returned."""
    from optuna_dashboard import get_note, save_note  # a note is optuna-dashboard's, not Optuna's

    note = study_note(files["markdown"].read_text(encoding="utf-8"))
    if get_note(study) != note:
        save_note(study, note)
    artifacts = open_artifacts(run_dir)
    put_study_file(study, files["html"], artifacts)
    if plot_png is not None:
        plot = run_dir / PLOT_FILE
        atomic_write(plot, plot_png)
        put_study_file(study, plot, artifacts)
