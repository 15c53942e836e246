"""The Python API: what a notebook needs, re-exported by ``import ablate``.

    import ablate

    cfg = ablate.load_config("order.yaml", ["trainer.max_steps=50", "model.pe=none"])
    result = ablate.run_trial(cfg)                        # one cell: (config, seed)
    spec = ablate.load_spec("pe.yaml")                    # an experiment: variants x seeds
    summary = ablate.sweep(spec, "runs/pe")               # every variant x seed, then the report
    summary = ablate.load_summary("runs/pe")              # a finished (or partial) run folder

Each function is the one the CLI calls (``ablate train``, ``sweep``, ``search``, ``lr-check``,
``reproduce``, ``report``, ``power``, ``aggregate``, ``compare``), so a notebook gets the numbers
the command line gets. Errors the user can fix raise ``ablate.ConfigError`` (the CLI's exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.runner.cells import TrialResult, run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.loading import load_config
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import load_spec
from ablate.sweeps.drivers.defaults import LR_FACTORS

__all__ = [
    "ConfigError",
    "ExperimentSpec",
    "TrainConfig",
    "TrialResult",
    "aggregate",
    "compare",
    "load_config",
    "load_spec",
    "load_summary",
    "lr_check",
    "power",
    "report",
    "reproduce",
    "run_trial",
    "search",
    "sweep",
    "tuned_spec",
]


def sweep(
    spec: ExperimentSpec,
    run_dir: str | Path,
    *,
    workers: int = 1,
    storage: str | None = None,
    use_wandb: bool = False,
) -> dict[str, Any]:
    """Run (or resume) every (variant, seed) cell of ``spec`` in ``run_dir``, then write the report.

    The same grid as ``ablate sweep``: an Optuna study (``run_dir/study.db`` unless ``storage``
    is a URL), ``workers`` worker processes, W&B only with ``use_wandb=True`` (offline without a
    login). Returns the summary that ``load_summary`` reads back: ``summary["variants"][name]``
    holds the median, IQR, IQM, Δ to the baseline with its CI, p values and P(improve).
    """
    from ablate.sweeps.drivers.grid import sweep as run_sweep
    from ablate.sweeps.drivers.options import RunOptions

    options = RunOptions(workers=workers, storage=storage, use_wandb=use_wandb)
    summary, _ = run_sweep(spec, Path(run_dir), options)
    return summary  # summary["cells"] counts complete, failed and missing cells


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """``run_dir/summary.json``: the statistics of a sweep's report (see ``sweep``)."""
    from ablate.sweeps.ledger.run_folder import read_summary

    return read_summary(Path(run_dir))


def report(run_dir: str | Path, *, storage: str | None = None) -> dict[str, Any]:
    """Write the report of a run folder's study again (``ablate report``); its summary."""
    from ablate.sweeps.report.build import rewrite_report

    return rewrite_report(Path(run_dir), storage)


def search(
    spec: ExperimentSpec,
    run_dir: str | Path,
    *,
    variants: list[str] | None = None,
    trials: int | None = None,
    workers: int = 1,
    storage: str | None = None,
) -> dict[str, Any]:
    """Tune each variant on validation (``ablate search``): TPE and pruning over the spec's
    ``search`` block; returns search.json (each variant's best parameters and value).
    ``tuned_spec(spec, result)`` is the grid with those parameters, for ``sweep``."""
    from ablate.sweeps.drivers.options import RunOptions
    from ablate.sweeps.drivers.search import check_search
    from ablate.sweeps.drivers.search import search as run_search

    variants, trials = check_search(spec, variants, trials)
    options = RunOptions(workers=workers, storage=storage)
    return run_search(spec, Path(run_dir), options, variants=variants, trials=trials)


def tuned_spec(spec: ExperimentSpec, search_result: dict[str, Any]) -> ExperimentSpec:
    """The grid with each variant's best parameters from ``search`` (``--then-evaluate``)."""
    from ablate.sweeps.drivers.search import tuned_spec as tuned

    return tuned(spec, search_result)


def lr_check(
    spec_path: str | Path,
    out: str | Path = "runs",
    *,
    overrides: list[str] | None = None,
    profile: str | None = None,
    factors: tuple[float, ...] = LR_FACTORS,
    workers: int = 1,
) -> dict[str, dict[str, Any]]:
    """The experiment again at its shared lr times each factor (``ablate lr-check``), each a sweep
    into ``out/<name>-lr<f>x``; run name -> its summary."""
    from ablate.sweeps.drivers.lr_check import lr_check as check

    runs = check(
        Path(spec_path),
        list(overrides or []),
        profile=profile,
        factors=list(factors),
        run_grid=lambda s: sweep(s, Path(out) / s.name, workers=workers),
    )
    return {s.name: summary for s, summary in runs}


def reproduce(
    name: str,
    out: str | Path = "runs",
    *,
    overrides: list[str] | None = None,
    profile: str | None = None,
    workers: int | None = None,
    storage: str | None = None,
    use_wandb: bool = False,
) -> dict[str, Any]:
    """A preset end to end (``ablate reproduce``): each experiment's sweep into ``out/<name>``,
    then the table across tasks. Returns {"summaries": name -> summary, "aggregate": ... | None}."""
    from ablate.experiments.specs.presets import preset_specs
    from ablate.sweeps.drivers.grid import sweep_pool
    from ablate.sweeps.drivers.options import RunOptions
    from ablate.sweeps.drivers.reproduce import default_profile, default_workers
    from ablate.sweeps.drivers.reproduce import reproduce as run_preset

    specs = preset_specs(name, list(overrides or []), profile or default_profile())
    summaries: dict[str, Any] = {}

    def run(chosen: list[ExperimentSpec]) -> list[Any]:
        options = RunOptions(workers=workers or default_workers(), storage=storage, use_wandb=use_wandb)
        results = sweep_pool([(s, Path(out) / s.name) for s in chosen], title=name, options=options)
        summaries.update({s.name: summary for s, (summary, _) in zip(chosen, results, strict=True)})
        return [outcome for _, outcome in results]

    _, agg = run_preset(name, specs, Path(out), run, storage)
    return {"summaries": summaries, "aggregate": agg}


def power(run_dir: str | Path, *, storage: str | None = None, **options: Any) -> dict[str, Any]:
    """Seeds each comparison needs (``ablate power``), from a finished study; also power.json.
    ``options``: ``delta``, ``target`` (power), ``alpha``, ``max_seeds``."""
    from ablate.sweeps.report.power_table import write_power

    return write_power(Path(run_dir), storage=storage, **options)


def aggregate(run_dirs: list[str | Path], out: str | Path, *, storage: str | None = None) -> dict[str, Any]:
    """One table across tasks (``ablate aggregate``): IQM and P(improve) of normalized scores,
    written to OUT.json and OUT.md."""
    from ablate.sweeps.report.across_tasks import write_aggregate

    return write_aggregate([Path(d) for d in run_dirs], Path(out), storage)


def compare(run_a: str | Path, run_b: str | Path, out: str | Path) -> dict[str, Path]:
    """Two run folders side by side (``ablate compare``): medians and attention changes; the paths
    of compare.md, compare.html and the figures."""
    from ablate.sweeps.report.compare import compare_runs

    return compare_runs(Path(run_a), Path(run_b), Path(out))
