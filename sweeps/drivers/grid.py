"""``ablate sweep``: run every (variant, seed) cell of an experiment, then report.

The driver process creates the study and its cells, starts ``--workers``
worker processes (``python -m ablate.sweeps.drivers.worker``), shows one progress bar for
the whole grid (sweeps/drivers/loop.py) and writes the report when the workers are done. Running the
same command again resumes: finished cells are kept, dead workers' cells are
rerun.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from optuna.storages import RDBStorage
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.experiments.schema.machine import isa_env
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import new_output_folder, write_json, write_yaml
from ablate.sweeps.drivers.loop import Watch, WorkerCommand, console, prepare_run, run_workers
from ablate.sweeps.drivers.options import RunOptions
from ablate.sweeps.drivers.outcome import Outcome, check_shared_failure, grid_outcome, shared_failure_message
from ablate.sweeps.ledger.cells import CellStore, cell_key, collect_rows, open_store
from ablate.sweeps.ledger.journal import is_journal, journal_path, journal_url
from ablate.sweeps.ledger.run_folder import check_run_folder, mark_run_folder
from ablate.sweeps.ledger.storage import default_storage, open_storage
from ablate.sweeps.ledger.study_file import check_storage_url, file_identity, file_lost
from ablate.sweeps.ledger.study_views import PLOT_FILE
from ablate.sweeps.report.current import current_report, log_summary_once
from ablate.sweeps.stats.inference import ALPHA, seeds_to_reject
from ablate.sweeps.stats.summary import data_changing_keys

# The warnings before a sweep runs (its data, its seeds' reach) are WARNING records, not prints:
# with no logging configured Python shows them on stderr (the command line); the Python API keeps
# them out of a notebook (api.py ``quiet_logs``).
log = logging.getLogger(__name__)


@dataclasses.dataclass
class Grid:
    """One study of a sweep: its spec, cell store, run folder and storage URL."""

    spec: ExperimentSpec
    store: CellStore
    run_dir: Path
    url: str
    opened: tuple[int, int] | None  # the study file's identity when opened (file_lost)
    stopped: str | None = None  # the last round stopped on a failure its cells share


def reach_warning(spec: ExperimentSpec) -> str | None:
    """One line, before anything runs, when some comparison of ``spec`` cannot reach p Holm <=
    0.05 with its seeds (the primary test's smallest p at these seeds, held to alpha / (k looks)),
    with the seeds it would need; None when every comparison can."""
    others = [v for v in spec.variants if v != spec.baseline]
    if not others:
        return None
    looks = spec.adaptive.looks if spec.adaptive else 1
    n = spec.adaptive.max if spec.adaptive else len(spec.seeds)
    level = ALPHA / (len(others) * looks)
    short = {}
    for name in others:
        paired = not data_changing_keys(spec.variants[name])
        if (need := seeds_to_reject(paired, level)) > n:
            short[name] = need
    if not short:
        return None
    need = max(short.values())
    where = f"{len(others)} comparison{'s' * (len(others) > 1)}" + (f" x {looks} looks" if looks > 1 else "")
    return (
        f"{spec.name}: {n} seeds per variant cannot reach p Holm <= {ALPHA} for {', '.join(short)} "
        f"({where}); the primary test needs at least {need} (seeds: {need})"
    )


def prepare_data(specs: list[ExperimentSpec]) -> None:
    """Load and cache every distinct data set of ``specs`` once, here, before any run folder or
    cell exists: a data set that cannot be read (a hub that cannot be reached, a missing file, a
    bad column) is then one error in seconds with nothing written, instead of the same failure
    in every cell, retried. The workers find the cache built (keyed by the data's config and
    content, datamodules/datamodule.py), so their cells are the ones they would have built.
    A validation or test split below MIN_EVAL_EXAMPLES, or splits that share examples, is one
    warning per data set and process, logged here (the workers log it only to their logs)."""
    if not specs:  # nothing to prepare: not even the data module's imports (lightning)
        return
    from ablate.datamodules.datamodule import ClassificationDataModule

    seen: set[str] = set()
    for spec in specs:
        for i, variant in enumerate(spec.variants):
            dm = ClassificationDataModule(spec.cell_config(variant, spec.seeds[0]).data)
            if (key := str(dm.cache_path)) in seen:
                continue
            seen.add(key)
            try:
                dm.prepare_data()
            except ConfigError as err:
                raise ConfigError(f"{spec.name}: variant {variant!r}: {err}") from None
            dm.log_warnings(spec.name if i == 0 else f"{spec.name}: variant {variant!r}")


def finished(spec: ExperimentSpec, run_dir: Path, storage: str | None) -> bool:
    """Whether the study file of an earlier run of ``spec`` (``--storage``'s SQLite file or journal,
    else the run folder's study.db) already holds a complete trial for every cell: then no cell
    runs, and ``prepare_data`` (seconds of imports, and minutes for a text set not yet cached) is
    skipped; the study's checks (``_open``) refuse a changed spec, plugin or data as always.
    Read only; False for a study server (not opened twice), an adaptive spec (the study holds
    its later rounds' seeds), and whenever it cannot tell."""
    if spec.adaptive is not None:
        return False
    url = storage if storage is not None else default_storage(run_dir)
    try:
        if check_storage_url(url) is None:  # a server: opened once, by _open
            return False
        if is_journal(url):  # as prepare_run names it
            url = journal_url(journal_path(url))
        db = open_storage(url)  # create=False: no file, no study
        try:
            study = db.get_study_id_from_name(spec.name)
            trials = db.get_all_trials(study, deepcopy=False, states=(TrialState.COMPLETE,))
        finally:
            if isinstance(db, RDBStorage):
                db.engine.dispose()
    except Exception:  # no study yet, or one that cannot be read: the usual path says why
        return False
    done = {t.user_attrs.get("cell") for t in trials}
    return all(cell_key(v, s) in done for v, s in spec.cells())


def _open(spec: ExperimentSpec, run_dir: Path, options: RunOptions) -> Grid:
    """Check and claim the run folder, open (or create) the study, and forgive failed cells if asked."""
    if warning := reach_warning(spec):
        log.warning("%s; running anyway: the report will say 'not distinguishable'.", warning)
    url = prepare_run(run_dir, options.storage, options.workers)
    with new_output_folder(run_dir):
        check_run_folder(run_dir, "sweep", spec.name)
        # A plugin fixed under cells that all failed: taken here, with a note (CellStore).
        store = open_store(spec, url, create=True, plugin_fix=True, **options.heartbeats)
        mark_run_folder(run_dir, "sweep", spec.name)
    grid = Grid(spec, store, run_dir, url, file_identity(url))
    for note in store.notes:  # e.g. a plugin fixed under cells that had all failed
        console.print(f"{spec.name}: {note}", markup=False, soft_wrap=True)
    if options.retry_failed and (retried := store.retry_failed()):
        console.print(
            f"{spec.name}: retrying {len(retried)} cell(s) that had failed for good: {', '.join(retried)}",
            markup=False,
        )
    return grid


def _run_round(grids: list[Grid], options: RunOptions, *, title: str) -> None:
    """Write the specs the workers read, enqueue their cells, run workers until none is left. The
    workers claim from the grids in this order (the most expensive cells first: no core waits for
    a long tail). A grid whose first cells all fail with the same error stops early (the workers
    check, sweeps/drivers/outcome.py ``shared_failure``); its message is printed once, here."""
    since = datetime.now()  # this round's attempts: what the stop rule looks at
    _write_round(grids)
    states = [c.state for g in grids for c in g.store.states().values()]
    left = sum(s != "complete" for s in states)
    pin = _one_pin(grids, title)
    if not any(s in ("waiting", "running") for s in states):
        # Every cell complete or failed for good: a worker would claim nothing and exit (after
        # seconds of imports). The count is shown once, as the progress line shows it.
        done, state = _progress(grids)
        total = sum(len(g.spec.cells()) for g in grids)
        console.print(
            f"{title}: {done}/{total} done, {state}; none left to run", markup=False, soft_wrap=True
        )
        return
    run_workers(
        WorkerCommand("ablate.sweeps.drivers.worker", _worker_args(grids, options, since), isa_env(pin)),
        grids[0].run_dir,
        options,
        # No more workers than cells left: the rest would only wait.
        workers=max(1, min(options.workers, left)),
        # One URL for every study (a --storage given), else each run folder's own study.db.
        url=grids[0].url if options.storage is not None or len(grids) == 1 else None,
        watch=Watch(title, sum(len(g.spec.cells()) for g in grids), lambda: _progress(grids)),
    )
    _note_stops(grids, since)


def _write_round(grids: list[Grid]) -> None:
    """The spec each study's workers read (spec.json; spec.yaml for people), and its cells."""
    for g in grids:
        write_json(g.run_dir / "spec.json", g.spec.to_dict())
        write_yaml(g.run_dir / "spec.yaml", g.spec.to_dict())
        g.store.ensure_cells()


def _progress(grids: list[Grid]) -> tuple[int, str]:
    """(cells complete, "N running[, M failed]") over every grid of the round."""
    states = [c for g in grids for c in g.store.states().values()]
    running = sum(c.state == "running" for c in states)
    failed = sum(c.state == "failed" for c in states)
    done = sum(c.state == "complete" for c in states)
    return done, f"{running} running" + (f", {failed} failed" if failed else "")


def _worker_args(grids: list[Grid], options: RunOptions, since: datetime) -> list[str]:
    """The workers' command line: every run folder, the options and the round's start (the
    storage URL travels in STORAGE_ENV, never here)."""
    args = [a for g in grids for a in ("--run-dir", str(g.run_dir))]
    args += [*options.worker_args(), "--since", since.isoformat()]
    return args + (["--no-wandb"] if not options.use_wandb else [])


def _one_pin(grids: list[Grid], title: str) -> str:
    """The CPU ISA every study of the round pins (one set of workers runs one)."""
    pins = {g.spec.base.trainer.cpu_isa for g in grids}
    if len(pins) > 1:
        raise ConfigError(
            f"{title}: the studies pin different CPU ISAs ({', '.join(sorted(pins))}); one set of workers "
            "runs one; sweep them one at a time"
        )
    return pins.pop()


def _note_stops(grids: list[Grid], since: datetime) -> None:
    """Each grid whose cells of this round all failed alike: stopped, with its message printed."""
    for g in grids:
        check = check_shared_failure(g.store, since)
        g.stopped = shared_failure_message(g.spec.name, check.stop) if check.stop else None
        if g.stopped:
            console.print(g.stopped, markup=False, style="bold yellow", soft_wrap=True)


def _finish(grid: Grid, use_wandb: bool) -> tuple[dict[str, Any], Outcome]:
    """The report (the stored one when nothing it is made from changed: sweeps/report/current.py)
    and the W&B summary run (logged again only when its report or target changed), then the
    cell counts."""
    summary, key, rebuilt = current_report(grid.spec, grid.store, grid.run_dir, grid.url)
    if not rebuilt:
        console.print(f"{grid.spec.name}: the report is up to date with the study; kept", markup=False)
    if use_wandb and summary["cells"]["complete"]:  # the study's summary run beside its cells
        from ablate.sweeps.integrations import wandb_glue

        log_summary_once(
            grid.run_dir,
            key,
            wandb_glue.summary_target(grid.spec),
            lambda: wandb_glue.log_summary(grid.spec, summary, grid.run_dir / PLOT_FILE, grid.run_dir),
        )
    outcome = grid_outcome(collect_rows(grid.store))
    outcome = dataclasses.replace(outcome, lost=file_lost(grid.url, grid.opened))
    if grid.stopped and not outcome.ok:  # its message named the error: not again as "a failed cell"
        outcome = dataclasses.replace(outcome, stopped=grid.stopped, first_error=None)
    return summary, outcome


def _next_round(spec: ExperimentSpec, store: CellStore) -> ExperimentSpec | None:
    """Adaptive seeds: record this round's verdicts on the study; the grown spec, or None to stop."""
    from ablate.sweeps.drivers.adaptive import decide, grow
    from ablate.sweeps.report.build import study_splits
    from ablate.sweeps.stats.design import chance_of

    verdicts = decide(spec, collect_rows(store), chance_of(spec.metric, study_splits(store)["sets"]))
    undecided = [v for v, e in verdicts.items() if not e["decided"]]
    uninformative = [v for v, e in verdicts.items() if e["uninformative"]]
    seeds = {v: sum(w == v for w, _ in spec.cells()) for v in spec.variants}
    entry = {
        "seeds": seeds,
        "undecided": undecided,
        "ci": {v: e["ci"] for v, e in verdicts.items()},
        "p_seq": {v: e["p_seq"] for v, e in verdicts.items()},
        "uninformative": uninformative,
    }
    rounds = list(store.study.user_attrs.get("rounds", []))
    if rounds and rounds[-1]["seeds"] == seeds:
        rounds[-1] = entry  # a rerun of a round already judged: judge it again, do not repeat it
    else:
        rounds.append(entry)
    grown = grow(spec, undecided) if undecided else None
    store.study.set_user_attr("rounds", rounds)
    if grown is None:
        reason = "every comparison decided" if not undecided else f"max seeds ({spec.adaptive.max}) reached"
        if uninformative:  # counted as decided: more seeds cannot make such a design answer
            others = (
                reason if undecided else "the others decided" if len(uninformative) < len(verdicts) else ""
            )
            reason = f"the design check stopped {', '.join(uninformative)} (see its verdict)"
            reason += f"; {others}" if others else ""
        store.study.set_user_attr("stop_reason", reason)
    else:
        store.study.set_user_attr("extra_seeds", {v: list(s) for v, s in grown.extra_seeds.items()})
    return grown


def sweep(spec: ExperimentSpec, run_dir: Path, options: RunOptions) -> tuple[dict[str, Any], Outcome]:
    """Run (or resume) every cell, then report; the summary and the cell counts (complete, failed
    for good, missing). With adaptive seeds, in rounds (sweeps/drivers/adaptive.py).
    ``options.launcher``: where the workers run (sweeps/drivers/launcher.py; default
    ``options.workers`` processes here); ``options.retry_failed``: run again the cells that
    failed for good (their cause fixed)."""
    prepare_data([] if finished(spec, run_dir, options.storage) else [spec])
    grid = _open(spec, run_dir, options)
    if spec.adaptive is not None:  # resume: the seeds earlier rounds added
        added = grid.store.study.user_attrs.get("extra_seeds", {})
        grid.spec = dataclasses.replace(spec, extra_seeds={v: tuple(s) for v, s in added.items()})
        grid.store = open_store(grid.spec, grid.url, **options.heartbeats)
    while True:
        _run_round([grid], options, title=grid.spec.name)
        if grid.stopped:  # no next round of seeds for a study whose cells all fail
            return _finish(grid, options.use_wandb)
        grown = _next_round(grid.spec, grid.store) if spec.adaptive is not None else None
        if grown is None:
            return _finish(grid, options.use_wandb)
        grid.spec, grid.store = grown, open_store(grown, grid.url, **options.heartbeats)


def sweep_pool(
    specs: list[tuple[ExperimentSpec, Path]], *, title: str, options: RunOptions
) -> list[tuple[dict[str, Any], Outcome]]:
    """Several studies (a preset's experiments) with one set of workers that claim cells from any
    of them, the most expensive study's first (``cell_cost``), so that the studies overlap and no
    core waits for one study's tail; then each study's report. A cell's number is the same as in
    its own sweep (it depends on its config and seed only). With an adaptive spec among them (its
    rounds need their own workers), or one spec, each runs as ``sweep``, one after another."""
    # Every study's data, before the first study runs (a finished study's: not needed).
    prepare_data([s for s, d in specs if not finished(s, d, options.storage)])
    if len(specs) == 1 or any(s.adaptive is not None for s, _ in specs):  # rounds need their own workers
        return [sweep(s, d, options) for s, d in specs]
    grids = [_open(s, d, options) for s, d in specs]
    _run_round(sorted(grids, key=lambda g: -cell_cost(g.spec)), options, title=title)
    return [_finish(g, options.use_wandb) for g in grids]


def cell_cost(spec: ExperimentSpec) -> float:
    """A cell's relative cost: steps x tokens per batch x (parameters per token, roughly)."""
    cfg = spec.base
    m = cfg.model
    tokens = cfg.data.batch_size * (cfg.data.longest_input() + 1)
    return cfg.trainer.max_steps * tokens * m.n_layers * (4 * m.d_model**2 + 2 * m.d_model * m.d_ff)
