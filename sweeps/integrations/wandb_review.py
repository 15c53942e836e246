"""``ablate wandb-report RUN_DIR``: the review of one sweep in W&B, its report (wandb_report.py)
and its project workspace (wandb_workspace.py), written as specs and, online, saved.

This module sits above both, so that the workspace can use the report's filters and names
without the two importing each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ablate.errors import ConfigError
from ablate.files import write_json
from ablate.sweeps.integrations import wandb_glue, wandb_workspace
from ablate.sweeps.integrations.review_files import REPORT_FILE, WORKSPACE_FILE
from ablate.sweeps.integrations.wandb_report import (
    build_report,
    complete_run_ids,
    default_entity,
    online,
    read_report_spec,
    read_spec_file,
    read_stats,
    report_spec,
    save,
)


class Review(NamedTuple):
    """What ``write_review`` wrote (the report's and the workspace's specs) and, online, their URLs."""

    report: Path
    workspace: Path
    urls: tuple[str, str] | None


def create_from_spec(run_dir: Path) -> tuple[str, str]:
    """Create the report and save the workspace from the specs ``write_review`` wrote offline
    (after ``wandb sync``); their URLs. Both specs are read before anything is saved."""
    report = read_report_spec(run_dir)
    workspace = wandb_workspace.workspace_from_spec(
        read_spec_file(run_dir, WORKSPACE_FILE), run_dir / WORKSPACE_FILE
    )
    if not online():
        raise ConfigError(
            f"W&B is {wandb_glue.wandb_mode()}: a report and a workspace can only be created online; "
            f"`wandb login` (or set WANDB_API_KEY and unset WANDB_MODE), `wandb sync "
            f"{run_dir}/wandb/offline-run-*`, then rerun `ablate wandb-report {run_dir} --from-spec`"
        )
    return save(report), wandb_workspace.save(workspace)


def write_review(run_dir: Path) -> Review:
    """Build the review report and the workspace of a sweep run folder and write their specs
    (RUN_DIR/wandb-report.json, RUN_DIR/wandb-workspace.json); online, also save both."""
    from ablate.sweeps.ledger.run_folder import read_run_spec  # imports optuna: only in this command

    spec = read_run_spec(run_dir)
    summary = read_stats(run_dir)
    run_ids = complete_run_ids(run_dir)  # the runs both views keep: the cells summary.json counts
    entity = default_entity() if online() else ""
    project = wandb_glue.project(spec)
    report = build_report(spec, summary, entity=entity, project=project, run_ids=run_ids)
    workspace = wandb_workspace.build_workspace(spec, entity=entity, project=project, run_ids=run_ids)
    paths = Review(run_dir / REPORT_FILE, run_dir / WORKSPACE_FILE, None)
    # Both specs first: a failed upload still leaves them.
    write_json(paths.report, report_spec(report))
    write_json(paths.workspace, wandb_workspace.workspace_spec(workspace))
    if not online():
        return paths
    return paths._replace(urls=(save(report), wandb_workspace.save(workspace)))
