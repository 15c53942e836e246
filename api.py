"""The Python API: what a notebook needs, re-exported by ``import ablate``.

    import ablate

    cfg = ablate.load_config("order.yaml", ["trainer.max_steps=50", "model.pe=none"])
    result = ablate.run_trial(cfg)                        # one cell: (config, seed)
    spec = ablate.load_spec("pe.yaml")                    # an experiment: variants x seeds
    summary = ablate.sweep(spec, "runs/pe")               # every variant x seed, then the report
    summary = ablate.load_summary("runs/pe")              # a finished (or partial) run folder
    table = ablate.cells("runs/pe")                       # one row per cell: a pandas DataFrame

Each function is the one the CLI calls (``ablate train``, ``sweep``, ``search``, ``lr-check``,
``reproduce``, ``report``, ``power``, ``aggregate``, ``compare``), so a notebook gets the numbers
the command line gets, and the same W&B rule (``sweep``). Errors the user can fix raise
``ablate.ConfigError`` (the CLI's exit 2). A call prints no log lines (``quiet_logs``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ablate.errors import ConfigError
from ablate.experiments.runner import cells as runner
from ablate.experiments.runner.cells import TrialResult
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.loading import load_config
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import load_spec
from ablate.sweeps.drivers.defaults import LR_FACTORS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ConfigError",
    "ExperimentSpec",
    "TrainConfig",
    "TrialResult",
    "aggregate",
    "cells",
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

P = ParamSpec("P")
R = TypeVar("R")
LIBRARY_LOGGER = "ablate"  # every module's logger is logging.getLogger(__name__): under this one
# ``cells``' columns besides the metrics (float64): nullable types, so that a failed cell's
# missing values stay missing (<NA>) without turning an integer column into floats.
CELL_DTYPES = {
    **dict.fromkeys(("variant", "state", "wandb_id", "error", "numerics"), "string"),
    **{"seed": "int64", "diverged": "boolean", "wall_s": "float64", "n_params": "Int64", "trial": "Int64"},
}


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """What a notebook sees of an API call: its result (and a sweep's progress), no log lines.

    ablate's warnings (a small evaluation split, seeds that cannot reach p Holm <= 0.05) are
    WARNING records of the ``ablate.*`` loggers. With no logging configured, Python prints them
    on stderr, which is what the command line shows; here a NullHandler on ``ablate`` keeps them
    out of the notebook, while a configuration of the user's (``logging.basicConfig()``) still
    receives them. Optuna's verbosity is WARNING meanwhile: no "A new study created in RDB ..."
    lines. Both are restored on return, the user's own optuna verbosity included."""
    import optuna

    level = optuna.logging.get_verbosity()
    quiet = logging.NullHandler()
    logging.getLogger(LIBRARY_LOGGER).addHandler(quiet)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)
        logging.getLogger(LIBRARY_LOGGER).removeHandler(quiet)


def _quiet(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run inside ``quiet_logs`` (its signature and docstring kept)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        with quiet_logs():
            return fn(*args, **kwargs)

    return call


run_trial = _quiet(runner.run_trial)


@_quiet
def sweep(
    spec: ExperimentSpec,
    run_dir: str | Path,
    *,
    workers: int = 1,
    storage: str | None = None,
    use_wandb: bool = True,
) -> dict[str, Any]:
    """Run (or resume) every (variant, seed) cell of ``spec`` in ``run_dir``, then write the report.

    The same grid as ``ablate sweep``: an Optuna study (``run_dir/study.db`` unless ``storage``
    is a URL), ``workers`` worker processes. Returns the summary that ``load_summary`` reads
    back: ``summary["variants"][name]`` holds the median, IQR, IQM, Δ to the baseline with its
    CI, p values and P(improve).

    W&B, one rule for the API and the CLI: each cell and the sweep's summary are logged unless
    ``use_wandb=False`` (the CLI's ``--no-wandb``); online with a login (``WANDB_API_KEY`` or
    ``wandb login``), else offline under ``run_dir/wandb`` (``wandb sync`` uploads it later);
    ``WANDB_MODE``, when set, decides. Why on, as the CLI: the API is the command's function,
    so the same sweep leaves the same records wherever it was started, and without a login
    nothing leaves the machine. (Before this rule the API's default was off: pass
    ``use_wandb=False`` to keep that.)
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


def cells(run_dir: str | Path) -> pd.DataFrame:
    """One row per cell of a sweep's report (``run_dir/results.csv``), as a pandas DataFrame:
    ``variant``, ``seed``, ``state`` (complete, failed, running, waiting, missing), ``diverged``,
    ``wall_s``, ``n_params``, ``trial``, ``wandb_id``, ``error``, ``numerics``, then every metric
    (``val/acc``, ``test/acc``, ...; NaN where a cell has no value). ``run_dir`` may also be a
    committed result prefix, as ``ablate verify`` takes. A folder that is not a run folder, or
    one whose report was not written, is a ConfigError naming the path and what is missing.

    Each seed's difference to the baseline, the paired comparison the report tests, plotted:

    ```python
    import matplotlib.pyplot as plt

    import ablate

    run = "runs/order-api"  # the sweep of the example above
    summary = ablate.load_summary(run)
    metric, baseline = summary["metric"], summary["baseline"]
    table = ablate.cells(run)
    values = table[table.state == "complete"].pivot(index="seed", columns="variant", values=metric)
    differences = values.drop(columns=baseline).sub(values[baseline], axis=0)  # seed x variant
    fig, ax = plt.subplots(figsize=(5, 3))
    for x, variant in enumerate(differences.columns):
        ax.plot([x] * len(differences), differences[variant], "o", alpha=0.7)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(differences.columns)), differences.columns)
    ax.set_ylabel(f"{metric}: variant - {baseline}")
    fig.savefig("differences-per-seed.png", bbox_inches="tight")
    ```
    """
    import pandas as pd

    from ablate.sweeps.drivers.verify import locate, read_rows
    from ablate.sweeps.stats.rows import CELL_COLUMNS, CellRow

    _, results = locate(run_dir)  # a run folder's results.csv (or a committed prefix's)
    text_rows, metrics = read_rows(results)
    try:
        rows = [CellRow.from_csv(r) for r in text_rows]
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(
            f"{results}: a row that is not a cell ({err}); rewrite it with `ablate report`"
        ) from None
    records = [
        {**{c: getattr(r, c) for c in CELL_COLUMNS}, **{m: r.metrics.get(m) for m in metrics}} for r in rows
    ]
    table = pd.DataFrame.from_records(records, columns=[*CELL_COLUMNS, *metrics])
    return table.astype({**CELL_DTYPES, **dict.fromkeys(metrics, "float64")})


@_quiet
def report(run_dir: str | Path, *, storage: str | None = None) -> dict[str, Any]:
    """Write the report of a run folder's study again (``ablate report``); its summary."""
    from ablate.sweeps.report.build import rewrite_report

    return rewrite_report(Path(run_dir), storage)


@_quiet
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


@_quiet
def lr_check(
    spec_path: str | Path,
    out: str | Path = "runs",
    *,
    overrides: list[str] | None = None,
    profile: str | None = None,
    factors: tuple[float, ...] = LR_FACTORS,
    workers: int = 1,
    use_wandb: bool = True,
) -> dict[str, dict[str, Any]]:
    """The experiment again at its shared lr times each factor (``ablate lr-check``), each a sweep
    into ``out/<name>-lr<f>x``; run name -> its summary. W&B as ``sweep`` says."""
    from ablate.sweeps.drivers.lr_check import lr_check as check

    runs = check(
        Path(spec_path),
        list(overrides or []),
        profile=profile,
        factors=list(factors),
        run_grid=lambda s: sweep(s, Path(out) / s.name, workers=workers, use_wandb=use_wandb),
    )
    return {s.name: summary for s, summary in runs}


@_quiet
def reproduce(
    name: str,
    out: str | Path = "runs",
    *,
    overrides: list[str] | None = None,
    profile: str | None = None,
    workers: int | None = None,
    storage: str | None = None,
    use_wandb: bool = True,
) -> dict[str, Any]:
    """A preset end to end (``ablate reproduce``): each experiment's sweep into ``out/<name>``,
    then the table across tasks. Returns {"summaries": name -> summary, "aggregate": ... | None}.
    W&B as ``sweep`` says."""
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


@_quiet
def power(run_dir: str | Path, *, storage: str | None = None, **options: Any) -> dict[str, Any]:
    """Seeds each comparison needs (``ablate power``), from a finished study; also power.json.
    ``options``: ``delta``, ``target`` (power), ``alpha``, ``max_seeds``."""
    from ablate.sweeps.report.power_table import write_power

    return write_power(Path(run_dir), storage=storage, **options)


@_quiet
def aggregate(run_dirs: list[str | Path], out: str | Path, *, storage: str | None = None) -> dict[str, Any]:
    """One table across tasks (``ablate aggregate``): IQM and P(improve) of normalized scores,
    written to OUT.json and OUT.md."""
    from ablate.sweeps.report.across_tasks import write_aggregate

    return write_aggregate([Path(d) for d in run_dirs], Path(out), storage)


@_quiet
def compare(run_a: str | Path, run_b: str | Path, out: str | Path) -> dict[str, Path]:
    """Two run folders side by side (``ablate compare``): medians and attention changes; the paths
    of compare.md, compare.html and the figures."""
    from ablate.sweeps.report.compare import compare_runs

    return compare_runs(Path(run_a), Path(run_b), Path(out))
