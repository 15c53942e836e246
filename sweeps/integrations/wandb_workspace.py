"""The W&B project workspace of one sweep, built with ``wandb-workspaces`` (``ablate wandb-report``).

Where the report (wandb_report.py) is a document, the workspace is where W&B's users work: the
project page with its runs table and panels. Its one runset keeps this experiment's cell runs
that count (``wandb_report.cell_filters``: job type and config ``experiment``, and the complete
cells' run ids of results.csv, else ``ablate/cell_state`` = complete: the report's cells; the
summary run, job type ``summary``, stays out, it lives in the report) and **groups them by
config ``variant``**, so
the runs table shows a row per variant with its seeds beneath, and the panels:

- a parallel-coordinates plot over the swept keys (each variant override's config key, then
  ``seed``) to the primary metric, one line per cell;
- a bar per variant of each final metric and the train/val curves, each the **median** over the
  variant's seeds with a min-max band (as in the report);
- a run comparer (the configs side by side, differences only).

The runs table pins ``variant``, ``seed``, the primary metric and ``diverged``.

Cells log flat dotted config keys (``model.pe``), which W&B stores as ``{"model.pe": {"value":
...}}``: their accessor is ``config:model.pe.value``. The library's ``Config("model.pe")``
means a nested ``model`` dict (``config:model.value.pe``), so parallel-coordinates columns are
``FlatConfigColumn``. The workspace's view name (``view_name``) is fixed per experiment, so
saving it again updates the same workspace instead of adding one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import wandb_workspaces.reports.v2 as wr
import wandb_workspaces.workspaces as ws
from pydantic.dataclasses import dataclass
from wandb_workspaces import expr
from wandb_workspaces.reports.v2.interface import dataclass_config

from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.integrations.wandb_report import (
    AGG,
    BAND,
    GROUP_KEY,
    X_AXIS,
    cell_filters,
    curve_metrics,
    default_entity,
    validated,
)

TABLE_KEYS = ("diverged",)  # summary keys the runs table pins after variant, seed and the metric


@dataclass(config=dataclass_config, repr=False)
class FlatConfigColumn(wr.ParallelCoordinatesPlotColumn):
    """A parallel-coordinates column on a flat config key: ``config:<key>.value`` whatever dots
    the key holds (the library would read ``model.pe`` as ``model``'s ``pe``)."""

    def _to_model(self) -> Any:
        model = super()._to_model()
        if isinstance(self.metric, wr.Config):
            model.accessor = f"config:{self.metric.name}.value"
        return model


def swept_keys(spec: ExperimentSpec) -> list[str]:
    """The config keys the variants override, in order of first appearance."""
    return list(dict.fromkeys(k for overrides in spec.variants.values() for k in overrides if k != "seed"))


def table_columns(spec: ExperimentSpec) -> list[str]:
    """The runs table's pinned columns (W&B's accessors; the run name comes first by itself)."""
    return [
        f"config:{GROUP_KEY}.value",
        "config:seed.value",
        f"summary:{spec.metric}",
        *(f"summary:{k}" for k in TABLE_KEYS),
    ]


def view_name(spec: ExperimentSpec) -> str:
    """The workspace's view name in its project (``nw-<id>-v``, the library's form): the same for
    every run of the command on this experiment."""
    digest = hashlib.sha256(f"ablate-workspace:{spec.name}".encode()).hexdigest()[:11]
    return f"nw-{digest}-v"


def build_workspace(
    spec: ExperimentSpec, *, entity: str, project: str, run_ids: list[str] | None = None
) -> ws.Workspace:
    """The workspace of one sweep (see the module docstring); its runs are those
    ``wandb_report.counted_filters(run_ids)`` keeps, as the report's."""
    by_variant = {"groupby": wr.Config(GROUP_KEY), "groupby_aggfunc": AGG, "groupby_rangefunc": BAND}
    finals = [spec.metric, *spec.extra_metrics]
    columns = [FlatConfigColumn(metric=wr.Config(k)) for k in (*swept_keys(spec), "seed")]
    section = {"is_open": True, "panel_settings": ws.SectionPanelSettings(x_axis=X_AXIS)}
    workspace = ws.Workspace(
        entity=entity,
        project=project,
        name=f"{spec.name}: ablation workspace",
        sections=[
            ws.Section(
                name="Variants",
                panels=[
                    wr.ParallelCoordinatesPlot(
                        title=f"swept keys and seed -> {spec.metric}",
                        columns=[
                            *columns,
                            wr.ParallelCoordinatesPlotColumn(metric=wr.SummaryMetric(spec.metric)),
                        ],
                    ),
                    *(wr.BarPlot(title=f"{m} ({AGG}, {BAND})", metrics=[m], **by_variant) for m in finals),
                    wr.RunComparer(diff_only="split"),
                ],
                **section,
            ),
            ws.Section(
                name="Training curves",
                panels=[
                    wr.LinePlot(title=m, x=X_AXIS, y=[m], title_x="step", **by_variant)
                    for m in curve_metrics(spec)
                ],
                **section,
            ),
        ],
        settings=ws.WorkspaceSettings(x_axis=X_AXIS, max_runs=max(10, len(spec.cells()))),
        runset_settings=ws.RunsetSettings(
            filters=cell_filters(spec, run_ids=run_ids),
            groupby=[expr.Config(GROUP_KEY)],
            order=[expr.Ordering(expr.Metric("Name"), ascending=True)],
            pinned_columns=table_columns(spec),
        ),
    )
    workspace._internal_name = view_name(spec)
    return workspace


def workspace_spec(workspace: ws.Workspace) -> dict[str, Any]:
    """The workspace as the JSON W&B stores (the library's ``View`` model, what ``save`` sends)."""
    return workspace._to_model().model_dump(by_alias=True, exclude_none=True, mode="json")


def workspace_from_spec(data: Any, path: Path) -> ws.Workspace:
    """The workspace a ``workspace_spec`` JSON describes (the library's load path, as ``from_url``)."""
    from wandb_workspaces.workspaces import internal

    workspace = ws.Workspace._from_model(validated(internal.View, data, path, "workspace"))
    for section in workspace.sections:  # loaded columns are the library's: flat keys again
        for panel in section.panels:
            if isinstance(panel, wr.ParallelCoordinatesPlot):
                panel.columns = [
                    FlatConfigColumn(
                        metric=c.metric, display_name=c.display_name, inverted=c.inverted, log=c.log
                    )
                    for c in panel.columns
                ]
    return workspace


def existing_view_id(workspace: ws.Workspace) -> str:
    """The id of the view saved under this workspace's name, "" when there is none yet (or the
    library cannot read it: then the upsert, which carries the name, finds it by that name)."""
    from wandb_workspaces.workspaces import internal
    from wandb_workspaces.workspaces.errors import SpecVersionError

    try:
        return internal.View.from_name(workspace.entity, workspace.project, workspace._internal_name).id
    except (ValueError, SpecVersionError):  # not found (the library's ValueError), or unreadable
        return ""


def save(workspace: ws.Workspace) -> str:
    """Save the workspace to W&B, over the one saved before for this experiment (its id, looked
    up by the fixed view name); its URL."""
    if not workspace.entity:  # a spec written offline names no entity
        workspace.entity = default_entity()
    workspace._internal_id = existing_view_id(workspace)
    workspace.save()
    return workspace.url
