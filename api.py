"""The Python API: what a notebook needs, re-exported by ``import ablate``.

    import ablate

    cfg = ablate.load_config("experiments/order.yaml", ["trainer.max_steps=50", "model.pe=none"])
    result = ablate.run_trial(cfg)                        # one cell: (config, seed)
    spec = ablate.load_spec("experiments/ablations/remove-pe-single-head-order.yaml", profile="cpu")
    summary = ablate.sweep(spec, "runs/order")            # every variant x seed, then the report
    summary = ablate.load_summary("runs/order")           # a finished (or partial) run folder

Each function is the one the CLI calls, so a notebook gets the numbers ``ablate train`` and
``ablate sweep`` get. Errors the user can fix raise ``ablate.ConfigError`` (the CLI's exit code 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.config import TrainConfig
from ablate.experiments.loading import load_config
from ablate.experiments.run import TrialResult, run_trial
from ablate.experiments.spec import ExperimentSpec, load_spec

__all__ = [
    "ConfigError",
    "ExperimentSpec",
    "TrainConfig",
    "TrialResult",
    "load_config",
    "load_spec",
    "load_summary",
    "run_trial",
    "sweep",
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
    from ablate.sweeps.run.grid import sweep as run_sweep

    summary, _ = run_sweep(spec, Path(run_dir), storage=storage, workers=workers, use_wandb=use_wandb)
    return summary  # summary["cells"] counts complete, failed and missing cells


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """``run_dir/summary.json``: the statistics of a sweep's report (see ``sweep``)."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise ConfigError(
            f"{path} not found: is {run_dir} a run folder of `ablate sweep` (or `ablate report`)?"
        )
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path} is not valid JSON ({err}); rewrite it with `ablate report {run_dir}`"
        ) from None
