"""``ablate wandb-report RUN_DIR``: a W&B Report that reviews one sweep.

The report is built with ``wandb-workspaces`` from the run folder's spec.json (and summary.json
when the sweep has reported) and holds, each panel grid on runs of this experiment only:

- the summary run's per-variant table (``variants``) and plot (``metric_plot``);
- a bar per variant of each final metric (the spec's metric and extra metrics);
- train/val curves, one line per variant: the **median** over its seeds, with a min-max band;
- the attention heatmaps (``attention/layer{i}``) of the heatmap seeds' runs.

W&B groups by the ``variant`` config key, and every runset filters on what ``wandb_glue`` logs:
``job_type`` = experiment and config ``experiment`` for the cells, the summary run's id for the
table. Of the cell runs, only those that count (``counted_filters``): once the sweep has
reported, the runs of the cells results.csv counts complete, by run id (the cells summary.json's
statistics are over; an interrupted copy of a cell, a failed attempt or another study of the
same name stays out); before, the runs ``wandb_glue.end_cell`` marked ``ablate/cell_state`` =
complete. Runsets name no project, so they read the report's own project, and building the spec
needs no network. Online the report is saved and its URL printed. Offline its spec (the
library's ``ReportViewspec`` model, as JSON) is written to ``RUN_DIR/wandb-report.json``;
after ``wandb sync``, ``ablate wandb-report RUN_DIR --from-spec`` creates it from that file.

The command also builds the project **workspace** of the sweep (wandb_workspace.py: the cells
grouped by variant, a parallel-coordinates plot over the swept keys, the runs table), written
to ``RUN_DIR/wandb-workspace.json`` and saved alongside the report, online or ``--from-spec``
(wandb_review.py writes and saves both).

Runs tables cannot aggregate by median; line and bar plots can, which is why the medians are
charts here (the report's statistics are medians, and a mean line would disagree with them).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.integrations import wandb_glue
from ablate.sweeps.integrations.review_files import REPORT_FILE
from ablate.sweeps.stats.rows import CellRow

if TYPE_CHECKING:
    import wandb_workspaces.reports.v2 as wr

GROUP_KEY = "variant"  # the config key every cell run carries (wandb_glue.cell_logger)
AGG, BAND = "median", "minmax"  # per step: the median over a variant's seeds, min..max band
X_AXIS = "trainer/global_step"  # Lightning's WandbLogger logs it with every row
WIDTH = 24  # a report's panel grid is 24 units wide
STAT_KEYS = ("n", "median", "q1", "q3")  # what wandb_glue.summary_scalars reads of every variant


def summary_run_id(spec: ExperimentSpec) -> str:
    """The id ``wandb_glue.log_summary`` gives the study's summary run (one per study)."""
    return f"{spec.name}-summary-{spec.identity()}"


def curve_metrics(spec: ExperimentSpec) -> list[str]:
    """``train/`` and ``val/`` loss plus the statistic of each reported metric (``test/f1`` -> f1):
    the names LitClassifier logs (a seed-parallel stack logs the same names per member)."""
    stats = dict.fromkeys(["loss", *(m.rsplit("/", 1)[1] for m in (spec.metric, *spec.extra_metrics))])
    return [f"{stage}/{stat}" for stat in stats for stage in ("train", "val")]


def heatmap_keys(spec: ExperimentSpec) -> list[str]:
    """``attention/layer{i}`` for every layer of the deepest variant (``wandb_glue.log_cell``)."""
    depth = max(spec.cell_config(v, spec.seeds[0]).model.n_layers for v in spec.variants)
    return [f"attention/layer{i}" for i in range(depth)]


def counted_filters(run_ids: list[str] | None) -> list[Any]:
    """The cell runs that count: those of ``run_ids`` (the complete cells' runs, ``complete_run_ids``)
    when it names any, else those ``wandb_glue.end_cell`` marked complete (an interrupted or failed
    attempt of a cell is marked otherwise, and its rerun is the run that counts)."""
    from wandb_workspaces import expr

    if run_ids:
        return [expr.Metric("ID").isin(list(run_ids))]
    return [expr.Summary(wandb_glue.CELL_STATE_KEY) == wandb_glue.COMPLETE]


def cell_filters(
    spec: ExperimentSpec, *, seeds: tuple[int, ...] = (), run_ids: list[str] | None = None
) -> list[Any]:
    """This experiment's cell runs that count (``counted_filters``; optionally only ``seeds``):
    job_type and config ``experiment`` (the summary run has neither: job type ``summary``, no
    ``experiment`` key; the config check also keeps out summary runs logged before they had their
    own job type)."""
    from wandb_workspaces import expr

    filters = [expr.Metric("JobType") == spec.name, expr.Config("experiment") == spec.name]
    filters += counted_filters(run_ids)
    return filters + ([expr.Config("seed").isin(list(seeds))] if seeds else [])


def summary_filters(spec: ExperimentSpec) -> list[Any]:
    """This study's summary run: group ``<experiment>/summary`` and the study's run id, so that
    the summary run of an older study of the same name (other variants) stays out."""
    from wandb_workspaces import expr

    return [
        expr.Metric("Group") == wandb_glue.group(spec, "summary"),
        expr.Metric("ID") == summary_run_id(spec),
    ]


def layouts(n: int, *, per_row: int = 2, h: int = 8) -> list[wr.Layout]:
    """``n`` panels, ``per_row`` to a row, left to right, top to bottom."""
    import wandb_workspaces.reports.v2 as wr

    w = WIDTH // per_row
    return [wr.Layout(x=(i % per_row) * w, y=(i // per_row) * h, w=w, h=h) for i in range(n)]


def intro(spec: ExperimentSpec, summary: dict[str, Any] | None, run_ids: list[str] | None = None) -> str:
    """What the experiment compares, which runs the charts show and how to read them, then the
    medians (if reported)."""
    lines = [
        f"**{spec.name}**" + (f": {spec.description.strip()}" if spec.description.strip() else ""),
        "",
        f"Metric `{spec.metric}` ({spec.direction}); baseline `{spec.baseline}`; "
        f"{len(spec.seeds)} seeds per variant.",
        "",
        *(
            f"- `{v}`: " + ", ".join(f"`{k}={x}`" for k, x in ov.items())
            for v, ov in spec.variants.items()
            if ov
        ),
        "",
        f"Charts group runs by config `{GROUP_KEY}`: a line is the {AGG} over the variant's seeds, "
        "the band spans their minimum to maximum.",
        "",
        (
            f"Runs: those of the {len(run_ids)} cells results.csv counts complete (by W&B run id), "
            "the cells of summary.json."
            if run_ids
            else f"Runs: the cell runs marked `{wandb_glue.CELL_STATE_KEY}` = {wandb_glue.COMPLETE}."
        ),
    ]
    if summary is None:
        lines += ["", "No summary.json yet (the sweep has not reported): the table fills in later."]
    else:
        lines += ["", medians_table(summary)]
    return "\n".join(lines)


def medians_table(summary: dict[str, Any]) -> str:
    """The per-variant statistics as a markdown table: the summary run's scalars, so the text
    and the runs table agree (Δ, CI and p are paired where the design is)."""
    scalars = wandb_glue.summary_scalars(summary)
    cols = ("n", "median", "q1", "q3", "delta", "ci_lo", "ci_hi", "ci_confidence", "p", "p_holm")

    def cell(v: str, k: str) -> str:
        x = scalars.get(f"{v}/{k}")
        return "" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)

    rows = [f"| {v} | " + " | ".join(cell(v, k) for k in cols) + " |" for v in summary["variants"]]
    head = "| variant | " + " | ".join(cols) + " |"
    return "\n".join([head, "|" + "---|" * (len(cols) + 1), *rows])


def build_report(
    spec: ExperimentSpec,
    summary: dict[str, Any] | None,
    *,
    entity: str,
    project: str,
    run_ids: list[str] | None = None,
) -> wr.Report:
    """The review report of one sweep (see the module docstring for its panels); its cell runs are
    those ``counted_filters(run_ids)`` keeps."""
    import wandb_workspaces.reports.v2 as wr

    def grouped(name: str) -> wr.Runset:
        filters = cell_filters(spec, run_ids=run_ids)
        return wr.Runset(name=name, filters=filters, groupby=[f"config.{GROUP_KEY}"])

    by_variant = {"groupby": wr.Config(GROUP_KEY), "groupby_aggfunc": AGG, "groupby_rangefunc": BAND}
    finals = [spec.metric, *spec.extra_metrics]
    curves = curve_metrics(spec)
    keys = heatmap_keys(spec)
    heatmap_runs = wr.Runset(
        name="heatmap cells",
        filters=cell_filters(spec, seeds=spec.heatmap_seeds, run_ids=run_ids),
        # Ungrouped: a heatmap belongs to one (variant, seed) run; names sort variant-major.
        order=[wr.OrderBy("Name", ascending=True)],
    )
    table, plot = layouts(2, per_row=1, h=9)
    blocks = [
        wr.MarkdownBlock(text=intro(spec, summary, run_ids)),
        wr.H2(text="Summary"),
        wr.PanelGrid(
            runsets=[wr.Runset(name="summary run", filters=summary_filters(spec))],
            panels=[
                wr.WeavePanelSummaryTable(table_name="variants", layout=table),
                wr.MediaBrowser(title="per-seed values", media_keys=["metric_plot"], layout=plot),
            ],
        ),
        wr.H2(text="Final metric per variant"),
        wr.PanelGrid(
            runsets=[grouped("cells by variant")],
            panels=[
                wr.BarPlot(title=f"{m} ({AGG}, {BAND})", metrics=[m], layout=lay, **by_variant)
                for m, lay in zip(finals, layouts(len(finals)), strict=True)
            ],
        ),
        wr.H2(text="Training curves"),
        wr.PanelGrid(
            runsets=[grouped("cells by variant")],
            panels=[
                wr.LinePlot(title=m, x=X_AXIS, y=[m], title_x="step", layout=lay, **by_variant)
                for m, lay in zip(curves, layouts(len(curves)), strict=True)
            ],
        ),
    ]
    if spec.heatmap_seeds:  # a hand-written spec.json may list none
        blocks += [
            wr.H2(text="Attention heatmaps"),
            wr.PanelGrid(
                runsets=[heatmap_runs],
                panels=[
                    wr.MediaBrowser(title=k, media_keys=[k], num_columns=len(spec.heatmap_seeds), layout=lay)
                    for k, lay in zip(keys, layouts(len(keys), per_row=1, h=10), strict=True)
                ],
            ),
        ]
    title = f"{spec.name}: ablation review"[:128]  # the library's limit
    return wr.Report(
        entity=entity, project=project, title=title, description=spec.description.strip(), blocks=blocks
    )


def report_spec(report: wr.Report) -> dict[str, Any]:
    """The report as the JSON W&B stores (``ReportViewspec``).

    ``Report._to_model`` is what ``Report.save`` sends; the library has no public serializer
    (``Base._spec`` calls a name-mangled method that does not exist).
    """
    return report._to_model().model_dump(by_alias=True, exclude_none=True, mode="json")


def validated(model_class: Any, data: Any, path: Path, what: str) -> Any:
    """``data`` as the library's pydantic ``model_class``, or a ConfigError naming the first problem
    and how to write the file again."""
    import pydantic

    try:
        return model_class.model_validate(data)
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"{path} is not a W&B {what} spec ({err.error_count()} problem(s); first: {where}: "
            f"{first['msg']}); rewrite it with `ablate wandb-report {path.parent}`"
        ) from None


def report_from_spec(data: Any, path: Path) -> wr.Report:
    """The report a ``report_spec`` JSON describes (the library's own load path, as ``from_url``)."""
    import wandb_workspaces.reports.v2 as wr
    from wandb_workspaces.reports.v2 import internal

    model = validated(internal.ReportViewspec, data, path, "report")
    report = wr.Report._from_model(model)
    # wandb-workspaces 0.4.13's WeavePanelSummaryTable._from_model drops the panel's layout (the
    # table would shrink to 8x6): restore every panel's layout from the model, grid by grid.
    grids = [b for b in model.spec.blocks if isinstance(b, internal.PanelGrid)]
    loaded = [b for b in report.blocks if isinstance(b, wr.PanelGrid)]
    for grid, block in zip(grids, loaded, strict=True):
        for stored, panel in zip(grid.metadata.panel_bank_section_config.panels, block.panels, strict=True):
            panel.layout = wr.Layout._from_model(stored.layout)
    return report


def read_spec_file(run_dir: Path, name: str) -> Any:
    """The JSON of ``RUN_DIR/name``, a spec ``write_review`` wrote; a ConfigError when it is
    missing or not a JSON object."""
    from ablate.sweeps.ledger.run_folder import read_json_object

    what = f"a run folder with W&B views (write them with `ablate wandb-report {run_dir}`)"
    return read_json_object(run_dir / name, what, {})


def read_report_spec(run_dir: Path) -> wr.Report:
    return report_from_spec(read_spec_file(run_dir, REPORT_FILE), run_dir / REPORT_FILE)


def read_stats(run_dir: Path) -> dict[str, Any] | None:
    """The run folder's summary.json, None before the sweep has reported; a ConfigError when it
    lacks what the report's table reads (the baseline, and each variant's n, median, q1, q3)."""
    from ablate.sweeps.ledger.run_folder import read_summary

    if not (run_dir / "summary.json").exists():
        return None
    summary = read_summary(run_dir)
    lacking = [v for v, stats in summary["variants"].items() if not all(k in stats for k in STAT_KEYS)]
    if summary.get("baseline") not in summary["variants"] or lacking:
        raise ConfigError(
            f"{run_dir / 'summary.json'} is not a sweep's summary: it needs 'baseline' (one of its "
            f"variants) and per variant {', '.join(STAT_KEYS)}"
            + (f"; missing in {', '.join(lacking)}" if lacking else "")
            + f"; rewrite it with `ablate report {run_dir}`"
        )
    return summary


def complete_run_ids(run_dir: Path) -> list[str] | None:
    """The W&B run ids of the cells the run folder's results.csv counts complete (the cells its
    summary.json is over), in its order; None before the sweep has reported (no results.csv); a
    ConfigError when the file is not a results.csv."""
    path = run_dir / "results.csv"
    if not path.exists():
        return None
    again = f"rewrite it with `ablate report {run_dir}`"
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            lines = list(reader)
            columns = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ConfigError(f"cannot read {path}: {err}; {again}") from None
    missing = [c for c in ("variant", "seed", "state", "wandb_id") if c not in columns]
    if missing:
        raise ConfigError(f"{path} is not a sweep's results.csv: no column {', '.join(missing)}; {again}")
    try:
        rows = [CellRow.from_csv(line) for line in lines]
    except ValueError as err:  # a seed, a trial number or a wall time that is not a number
        raise ConfigError(f"{path} is not a sweep's results.csv ({err}); {again}") from None
    return [r.wandb_id for r in rows if r.state == "complete" and r.wandb_id]


def default_entity() -> str:
    """Where the cell runs went: ``WANDB_ENTITY``, else the logged-in user's default entity."""
    if os.environ.get("WANDB_ENTITY"):
        return os.environ["WANDB_ENTITY"]
    import wandb

    return wandb.Api().default_entity or ""


def online() -> bool:
    return wandb_glue.wandb_mode() == "online"


def save(report: wr.Report) -> str:
    """Save the report to W&B; its URL."""
    if not report.entity:  # a spec written offline names no entity
        report.entity = default_entity()
    report.save()
    return report.url
