"""``ablate search``: tune every variant on validation, then run the tuned grid over seeds.

A variant can lose an ablation only because the shared learning rate suits the
baseline better (Post-LN wants a lower one). So each variant gets its own
Optuna study (``<name>.search.<variant>``) with a seeded TPE sampler over the
spec's ``search.space`` and a pruner fed by the validation metric during
training; test data is never looked at. ``--then-evaluate`` takes each
variant's best parameters and runs the ordinary multi-seed grid with them.

Workers (``python -m ablate.sweeps.drivers.search_worker``; studies in ``sweeps/ledger/search_store.py``) ask for trials under the study lock, so
a study never gets more than ``trials`` finished or running trials however many
workers run; a trial whose worker died stops sending heartbeats, is failed and
is asked again. Finished and pruned trials are kept when the command reruns.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.schema.machine import isa_env
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import new_output_folder, write_json
from ablate.sweeps.drivers.loop import Watch, WorkerCommand, prepare_run, run_workers
from ablate.sweeps.drivers.options import RunOptions
from ablate.sweeps.ledger.run_folder import check_run_folder, mark_run_folder
from ablate.sweeps.ledger.search_store import SearchStore


def check_search(
    spec: ExperimentSpec, variants: list[str] | None, trials: int | None, *, then_evaluate: bool = False
) -> tuple[list[str], int]:
    """The variants to tune (default: all) and the trials per variant (default: the spec's), or a
    ConfigError before anything is written."""
    if spec.search is None:
        raise ConfigError(
            f"{spec.name} has no 'search' block (search.space, trials, metric, pruner); see the docs"
        )
    chosen = list(spec.variants) if variants is None else variants
    unknown = [v for v in chosen if v not in spec.variants]
    if unknown or len(set(chosen)) != len(chosen):
        raise ConfigError(
            f"--variants {','.join(chosen)!r}: choose distinct names among {', '.join(spec.variants)}"
        )
    if then_evaluate and spec.baseline not in chosen:
        raise ConfigError(f"--then-evaluate needs the baseline {spec.baseline!r} among --variants")
    return chosen, spec.search.trials if trials is None else trials


def tuned_spec(spec: ExperimentSpec, summary: dict[str, Any]) -> ExperimentSpec:
    """The grid with each variant's best parameters: the baseline's go into the base.

    A variant's own overrides still win (a no-warmup variant was never tuned on warmup).
    """
    best = {v: e["best_params"] for v, e in summary["variants"].items()}
    missing = [v for v, p in best.items() if p is None]
    if missing:
        raise ConfigError(
            f"no finished search trial for {missing}; run more --trials (all were pruned or failed)"
        )
    if spec.baseline not in best:
        raise ConfigError(f"--then-evaluate needs the baseline {spec.baseline!r} among --variants")
    variants = {v: ({} if v == spec.baseline else {**best[v], **spec.variants[v]}) for v in best}
    tuned = {
        v: {**best[v], f"{summary['metric']} (search)": round(summary["variants"][v]["best_value"], 4)}
        for v in best
    }
    return dataclasses.replace(
        spec,
        name=f"{spec.name}-tuned",
        base=spec.base.override(best[spec.baseline]),
        variants=variants,
        base_overrides={**spec.base_overrides, **best[spec.baseline]},
        tuned=tuned,
    )


def search(
    spec: ExperimentSpec, run_dir: Path, options: RunOptions, *, variants: list[str], trials: int
) -> dict[str, Any]:
    """Run (or resume) the per-variant searches; write and return ``search.json``.
    ``options.launcher``: where the workers run (sweeps/drivers/launcher.py; default
    ``options.workers`` processes here)."""
    url = prepare_run(run_dir, options.storage, options.workers)
    with new_output_folder(run_dir):
        check_run_folder(run_dir, "search", spec.name)
        store = SearchStore(spec, url, variants, trials, create=True, **options.heartbeats)
        mark_run_folder(run_dir, "search", spec.name)
    write_json(run_dir / "spec.json", spec.to_dict())

    def poll() -> tuple[int, str]:
        counts = [store.counts(v) for v in variants]
        pruned = sum(c["pruned"] for c in counts)
        running = sum(c["running"] for c in counts)
        return sum(store.done(v) for v in variants), f"{running} running, {pruned} pruned"

    args = ["--run-dir", str(run_dir), "--variants", ",".join(variants)]  # the storage: STORAGE_ENV
    args += ["--trials", str(trials), *options.worker_args()]
    run_workers(
        WorkerCommand("ablate.sweeps.drivers.search_worker", args, isa_env(spec.base.trainer.cpu_isa)),
        run_dir,
        options,
        workers=min(options.workers, trials * len(variants)),  # no more workers than trials
        url=url,
        watch=Watch(f"{spec.name} search", trials * len(variants), poll),
    )
    summary = {"experiment": spec.name, "trials": trials, **store.summary()}
    write_json(run_dir / "search.json", summary)
    return summary
