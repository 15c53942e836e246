"""W&B sweeps: an experiment spec as a W&B sweep configuration, and the cell its agent runs.

``wandb agent`` runs the sweep's ``command`` once per sweep run, with
``${args_no_hyphens}`` expanded to ``variant=NAME seed=N [key=value ...]``:
W&B writes each parameter as ``f"{name}={value}"`` (``create_sweep_command_args``
in ``wandb/sdk/launch/sweeps/utils.py``), ``${env}`` as ``/usr/bin/env`` and
``${interpreter}`` as ``python`` (so the agent runs with this project's
virtual environment activated). ``ablate train --spec`` takes exactly those
arguments and calls the same ``run_trial`` as every other command.

A W&B sweep needs a W&B server (``wandb sweep`` and ``wandb agent`` cannot run
offline); offline, ``ablate sweep`` runs the same grid on an Optuna study.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ablate.errors import require
from ablate.experiments.specs.search_spec import ParamSpace, SearchSpec
from ablate.experiments.specs.spec import ExperimentSpec, cell_from_args
from ablate.experiments.specs.spec_file import load_spec
from ablate.files import input_file
from ablate.sweeps.integrations import wandb_glue

if TYPE_CHECKING:
    from ablate.experiments.runner.cells import TrialResult

METHODS = ("grid", "random", "bayes")
# Not run (the command says how to start ablate), but the agent reads it and W&B shows it.
PROGRAM = "cli.py"


def sweep_config(
    spec: ExperimentSpec, spec_path: str, *, method: str, profile: str | None, overrides: list[str]
) -> dict[str, Any]:
    """The W&B sweep configuration (a plain dict, ready for ``yaml.safe_dump``).

    ``grid`` is the ablation: every variant x seed once, scored on the spec's
    metric. A search block is ignored there, and so is pruning: every cell is
    a result that enters the medians, so none may be stopped early.

    ``random``/``bayes`` tune the spec's ``search`` block on its validation
    metric, with ``variant`` and ``seed`` as two more parameters; a spec
    without a search block is refused (random would redraw the same cells and
    bayes would optimise the test metric). A search key that a variant sets
    itself stays the variant's (``ablate train --spec`` applies the variant
    last), as in ``ablate search``; W&B still shows the drawn value.

    ``overrides`` (checked by the caller's ``load_spec``) and ``profile`` are
    carried in the command, so every agent run builds the same base.
    """
    require(method in METHODS, f"method {method!r}; choose one of {', '.join(METHODS)}")
    parameters: dict[str, Any] = {
        "variant": {"values": list(spec.variants)},
        "seed": {"values": list(spec.seeds)},
    }
    metric, goal = spec.metric, spec.direction
    early: dict[str, Any] | None = None
    if method != "grid":
        require(
            spec.search is not None,
            f"--method {method} tunes the spec's search block and {spec.name} has none; "
            "use --method grid (every variant x seed once) or add a search block",
        )
        assert spec.search is not None
        parameters.update({key: wandb_parameter(p) for key, p in spec.search.space.items()})
        metric, goal = spec.search.metric, spec.search.direction
        early = early_terminate(spec.search)
    # -P: the agent's current folder is not put on sys.path, so a folder holding its own
    # ``ablate/`` package cannot replace the installed one (as for ablate sweep's workers).
    command = ["${env}", "${interpreter}", "-P", "-m", "ablate", "train", "--spec", spec_path]
    command += ["--profile", profile] if profile else []
    command += ["--no-progress", *overrides, "${args_no_hyphens}"]
    config: dict[str, Any] = {
        "program": PROGRAM,
        "name": spec.name,
        "project": wandb_glue.project(spec),
        "method": method,
        "metric": {"name": metric, "goal": goal},
        "parameters": parameters,
        "command": command,
    }
    if early is not None:
        config["early_terminate"] = early
    return config


def sweep_yaml(spec_path: str, *, method: str, profile: str | None, overrides: list[str]) -> str:
    spec = load_spec(input_file(spec_path), overrides, profile=profile)  # validates every variant first
    config = sweep_config(spec, spec_path, method=method, profile=profile, overrides=overrides)
    return yaml.safe_dump(config, sort_keys=False)


def wandb_parameter(p: ParamSpace) -> dict[str, Any]:
    """One search key as a W&B parameter (the distributions of ``ablate search``).

    An integer log range is ``q_log_uniform_values`` with an integer ``q``: W&B
    then returns integers (the sweeps package casts when ``q`` is an int).
    """
    if p.choices:
        return {"values": [_arg(v) for v in p.choices]}
    if p.is_int:
        low, high = int(p.low or 0), int(p.high or 0)
        if p.log:
            return {"distribution": "q_log_uniform_values", "min": low, "max": high, "q": 1}
        return {"distribution": "int_uniform", "min": low, "max": high}
    dist = "log_uniform_values" if p.log else "uniform"
    return {"distribution": dist, "min": float(p.low or 0.0), "max": float(p.high or 0.0)}


def _arg(value: Any) -> Any:
    """A choice whose ``str()`` reads back as itself; else its JSON text (W&B writes ``str(value)``).

    ``None`` would arrive as the string ``'None'`` and ``'off'`` as False (YAML
    1.1); ``null`` and ``"off"`` read back right. Floats are kept: the config
    reads ``1e-05`` (a YAML string) as a float.
    """
    if isinstance(value, float) or yaml.safe_load(str(value)) == value:
        return value
    return json.dumps(value)


def early_terminate(search: SearchSpec) -> dict[str, Any] | None:
    """The search block's pruner as W&B early termination (W&B has only hyperband).

    An iteration is one logged value of the metric, i.e. one validation every
    ``trainer.val_every`` steps: the unit of ``ablate search``'s pruner steps.
    ``hyperband`` maps one to one (min_resource -> min_iter, reduction_factor
    -> eta). ``median`` (stop a trial below the median of earlier trials at the
    same validation, after the first ``n_warmup_steps`` validations) becomes hyperband
    with eta 2: a run outside the top half at validations min_iter x 2^k is
    stopped, i.e. the median rule at geometrically spaced validations; W&B has
    no ``n_startup_trials``.
    """
    if search.pruner == "hyperband":
        return {"type": "hyperband", "min_iter": search.min_resource, "eta": search.reduction_factor}
    if search.pruner == "median":
        return {"type": "hyperband", "min_iter": search.n_warmup_steps + 1, "eta": 2}
    return None


def train_cell(
    spec_path: str, args: list[str], *, profile: str | None, out: str | None, progress: bool
) -> tuple[Path, TrialResult]:
    """Train one cell of a spec into ``out``, logged as a W&B run grouped by ``<experiment>/<variant>``.

    Under ``wandb agent`` the run attaches to the agent's sweep run (W&B sets
    ``WANDB_SWEEP_ID``/``WANDB_RUN_ID``); offline it is an offline run in
    ``out/wandb``. Returns the output folder and the ``TrialResult``.
    """
    spec = load_spec(input_file(spec_path), profile=profile)
    variant, seed, cfg = cell_from_args(spec, args)
    from ablate.experiments.runner.cells import run_trial
    from ablate.files import atomic_dir

    run_id = os.environ.get("WANDB_RUN_ID")  # set by the agent: two agents never share a folder
    name = f"{variant}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}" + (f"-{run_id}" if run_id else "")
    folder = Path(out or Path("runs") / spec.name / "wandb-sweep" / name)
    with atomic_dir(folder) as tmp:
        logger = wandb_glue.cell_logger(spec, variant, seed, cfg, tmp)
        try:
            result = run_trial(cfg, tmp, progress=progress, logger=logger)
            wandb_glue.log_cell(logger, result.to_dict(), None)
        except BaseException as err:
            logger.experiment  # noqa: B018 (opens the agent's run: the sweep sees it fail, not hang)
            interrupted = isinstance(err, (KeyboardInterrupt, SystemExit))
            wandb_glue.end_cell(logger, "interrupted" if interrupted else "failed")
            raise
        wandb_glue.end_cell(logger, wandb_glue.COMPLETE)  # no trial here: trained and scored is complete
    return folder, result
