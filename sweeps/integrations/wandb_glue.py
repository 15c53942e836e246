"""Weights & Biases glue: one run per cell grouped by ``<experiment>/<variant>``, one summary run per sweep.

Groups carry the experiment's name because W&B's grouped views average every run of a group
in a project: a bare ``baseline`` group would average the baselines of every task logged there.
Cells have job type ``<experiment>``, the summary run ``summary`` (SUMMARY_JOB_TYPE), so the
two never mix in a view filtered or grouped by job type. Both configs are flat dotted keys
(``model.n_heads``; ``base.model.n_heads`` in the summary run), data keys only where the task
reads them (``DataConfig.applicable``).

A cell's run ends with its state in the summary (CELL_STATE_KEY, ``ablate/cell_state``) and an
exit code to match: ``complete`` (exit 0) only once the cell's trial is committed complete,
``failed`` (1) or ``interrupted`` (130, as a shell reports Ctrl-C) otherwise; a run killed
outright ends with no state. A run that counts is one marked complete: an interrupted copy of a
cell, and its rerun, are two runs of which only the rerun counts (wandb_report.py selects them).

Optuna's W&B callback is deprecated and logs one run per trial without
groups, so the sweep writes its own glue. Without credentials W&B runs in
offline mode under ``<run_dir>/wandb`` and ``wandb sync`` uploads later.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.schema.machine import numerics_key
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.ledger.secrets import masked_argv
from ablate.sweeps.report.text import verdict_lines
from ablate.sweeps.stats.rows import INTERVAL_KEYS, VARIANT_KEYS
from ablate.trees import flatten

SUMMARY_JOB_TYPE = "summary"
CELL_STATE_KEY = "ablate/cell_state"  # a cell run's summary key: how its cell ended (end_cell)
COMPLETE = "complete"  # the state of a run that counts: its cell's trial is complete
CellState = Literal["complete", "failed", "interrupted"]
EXIT_CODES: dict[str, int] = {"complete": 0, "failed": 1, "interrupted": 130}


def wandb_mode() -> str:
    """``WANDB_MODE`` if set; offline unless an API key or a netrc login exists."""
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    has_login = os.environ.get("WANDB_API_KEY") or (Path.home() / ".netrc").is_file()
    return "online" if has_login else "offline"


def project(spec: ExperimentSpec) -> str:
    return os.environ.get("WANDB_PROJECT") or spec.wandb_project or "ablate"


def group(spec: ExperimentSpec, variant: str) -> str:
    """The W&B group of a variant's runs: unique per experiment within a project."""
    return f"{spec.name}/{variant}"


def run_config(cfg: TrainConfig) -> dict[str, Any]:
    """``cfg.flat()`` without the data keys its task does not read: a text task's run has no
    ``data.n_train``, a synthetic one no ``data.source`` (the rule is ``DataConfig.applicable``)."""
    data = {f"data.{k}" for k in cfg.data.applicable()}
    return {k: v for k, v in cfg.flat().items() if not k.startswith("data.") or k in data}


def summary_config(spec: ExperimentSpec) -> dict[str, Any]:
    """The summary run's config: the spec as flat dotted keys (``base.model.n_heads``,
    ``variants.no_pe.model.pe``, ``seeds``, ``metric``, ...) plus ``baseline``. The base is a
    cell's config (``run_config``); no ``experiment`` key, which marks cell runs."""
    rest = {k: v for k, v in spec.to_dict().items() if k != "base"}
    base = {f"base.{k}": v for k, v in run_config(spec.base).items()}
    return {"baseline": spec.baseline, **base, **flatten(rest)}


def cell_logger(spec: ExperimentSpec, variant: str, seed: int, cfg: TrainConfig, run_dir: Path) -> Any:
    """A WandbLogger for one (variant, seed) cell: group ``<experiment>/<variant>``, job_type = experiment."""
    os.environ.setdefault("WANDB_SILENT", "true")
    from lightning.pytorch.loggers import WandbLogger

    return WandbLogger(
        project=project(spec),
        group=group(spec, variant),
        job_type=spec.name,
        name=f"{variant}-s{seed}",
        config={**run_config(cfg), "experiment": spec.name, "variant": variant, "seed": seed},
        tags=[spec.name, variant, *spec.tags],
        save_dir=str(run_dir),
        mode=wandb_mode(),
    )


def log_cell(logger: Any, result: dict[str, Any], heads: dict[str, Any] | None) -> str:
    """Write a trained cell's final metrics (and heatmaps, entropy, importance) to its run and
    return the run's id; the run stays open until ``end_cell`` says how the cell ended."""
    import wandb

    run = logger.experiment
    run.summary.update({k: v for k, v in result.items() if not isinstance(v, dict)})
    if result.get("numerics"):  # the run's numerics: one string, and the record in its config
        run.summary["numerics"] = numerics_key(result["numerics"])
        run.config.update({"numerics": result["numerics"]}, allow_val_change=True)
    if result.get("splits"):  # the split sizes the cell trained and was scored on
        run.config.update({"splits": result["splits"]}, allow_val_change=True)
    if heads is not None:
        images = {f"attention/layer{i}": wandb.Image(str(p)) for i, p in enumerate(heads["pngs"])}
        run.log(images)
        for name in ("entropy", "importance"):
            for layer, per_head in enumerate(heads.get(name) or []):
                for head, value in enumerate(per_head):
                    run.summary[f"heads/{name}/l{layer}h{head}"] = value
    return run.id


def end_cell(logger: Any, state: CellState) -> None:
    """Finish a cell's run with ``state`` under CELL_STATE_KEY and its exit code (EXIT_CODES).

    ``complete`` only after the cell's trial is committed complete (sweeps/drivers/worker.py
    ``run_claimed``), so that a run marked complete always has a complete trial. A run the logger
    never opened (the cell stopped before training began) is not opened just to be ended.
    """
    run = logger.experiment if state == COMPLETE else getattr(logger, "_experiment", None)
    if run is None:  # WandbLogger opens its run at the first use of ``experiment``
        return
    run.summary[CELL_STATE_KEY] = state
    run.finish(exit_code=EXIT_CODES[state])


def summary_run_id(spec: ExperimentSpec) -> str:
    """One summary run per study: rerunning the sweep updates it instead of adding another."""
    return f"{spec.name}-summary-{spec.identity()}"


def summary_target(spec: ExperimentSpec) -> dict[str, str | None]:
    """Where ``log_summary`` logs: the run, project, mode, entity and server (a finished sweep
    run again logs its summary again only when this or its report changed: report/current.py)."""
    return {
        "id": summary_run_id(spec),
        "project": project(spec),
        "mode": wandb_mode(),
        "entity": os.environ.get("WANDB_ENTITY"),
        "base_url": os.environ.get("WANDB_BASE_URL"),
    }


def log_summary(spec: ExperimentSpec, summary: dict[str, Any], plot_png: Path, run_dir: Path) -> str:
    """One run per sweep with the per-variant table and the plot."""
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb

    # W&B records this process's command line at init: the driver's, where --storage may hold a
    # password (the process keeps its own).
    with masked_argv():
        run = wandb.init(
            id=summary_run_id(spec),
            resume="allow",
            project=project(spec),
            job_type=SUMMARY_JOB_TYPE,
            group=group(spec, "summary"),
            name=f"{spec.name}-summary",
            config=summary_config(spec),
            tags=[spec.name, "summary", *spec.tags],
            notes="\n".join(verdict_lines(summary)),  # the headline, shown on the run's overview
            dir=str(run_dir),
            mode=wandb_mode(),
        )
    columns, rows = table_rows(summary)
    table = wandb.Table(columns=columns, data=rows)
    run.log({"variants": table, "metric_plot": wandb.Image(str(plot_png))})
    run.summary.update(
        {"cells_total": summary["cells"]["total"], "cells_complete": summary["cells"]["complete"]}
    )
    run.summary.update(summary_scalars(summary))
    run.summary.update({f"{name}/verdict": text for name, text in (summary.get("verdicts") or {}).items()})
    run_id = run.id
    run.finish()
    return run_id


def table_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The summary run's ``variants`` table: a row per variant, a column per statistic of the
    summary's schema (stats/rows.py ``VARIANT_KEYS``), each interval as ``<key>_lo``, ``<key>_hi``."""
    columns = ["variant"]
    for k in VARIANT_KEYS:
        columns += [f"{k}_lo", f"{k}_hi"] if k in INTERVAL_KEYS else [k]
    rows = []
    for name, v in summary["variants"].items():
        row: list[Any] = [name]
        for k in VARIANT_KEYS:
            row += list(v.get(k) or [None, None]) if k in INTERVAL_KEYS else [v.get(k)]
        rows.append(row)
    return columns, rows


def summary_scalars(summary: dict[str, Any]) -> dict[str, float | int | None]:
    """``<variant>/<statistic>`` scalars of the summary, where W&B's run table and charts read them.

    Δ, its interval (``ci_lo``, ``ci_hi``, at ``ci_confidence``) and p are the report's: the
    primary test of the design and its inversion; p is p_seq under adaptive seeds.
    """
    out: dict[str, float | int | None] = {}
    for name, v in summary["variants"].items():
        ci = v.get("ci") or [None, None]
        stats = {
            "n": v["n"],
            "median": v["median"],
            "q1": v["q1"],
            "q3": v["q3"],
            "iqm": v.get("iqm"),
            "delta": v.get("delta"),
            "ci_lo": ci[0],
            "ci_hi": ci[1],
            "ci_confidence": v.get("ci_confidence"),
            "p": v["p_seq"] if v.get("p_seq") is not None else v.get("p_value"),
            "p_holm": v.get("p_holm"),
            "p_improve": v.get("p_improve"),
        }
        if name == summary["baseline"]:  # compared with itself: no Δ, CI or p
            stats = {k: x for k, x in stats.items() if k in ("n", "median", "q1", "q3", "iqm")}
        out.update({f"{name}/{k}": x for k, x in stats.items() if x is not None})
    return out
