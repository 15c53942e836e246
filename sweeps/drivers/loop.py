"""What the grid and the search share: the driver that starts worker processes and shows one
progress bar, and the worker's claim / run / fail loop.

A worker claims a unit of work (a group of cells, a search trial) from the study, runs it
while its trials send heartbeats, and on an error or Ctrl-C marks what it claimed failed, so
that the same command resumes it. A killed worker sends no more heartbeats; Optuna fails its
trials after the grace period and the next claim takes them again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from optuna.storages import BaseStorage
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ablate.errors import ConfigError
from ablate.sweeps.drivers.launcher import STOPPED, Launcher, start_jobs, stop_reason
from ablate.sweeps.drivers.options import RunOptions
from ablate.sweeps.ledger.journal import is_journal, journal_path, journal_url
from ablate.sweeps.ledger.secrets import STORAGE_ENV, shown
from ablate.sweeps.ledger.storage import default_storage, heartbeat, retry_db
from ablate.sweeps.ledger.study_file import check_storage_url

# Off a terminal (a log, a pipe) a note is one line, not broken at rich's default 80 columns.
console = Console(stderr=True, soft_wrap=not Console(stderr=True).is_terminal)

INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
LOG_TAIL = 64 * 1024  # bytes of a failed worker's log read for its stop reason
# Off a terminal, how often the progress count is read: a finished cell's line within a second.
LINE_POLL_S = 0.5
W = TypeVar("W")


def prepare_run(run_dir: Path, storage: str | None, workers: int) -> str:
    """The driver's checks before anything is made: ``--workers`` and ``--storage`` (a bad URL or
    a driver that is not installed); the storage URL. Open the study inside
    ``new_output_folder(run_dir)``, so that a refused run leaves no empty run folder."""
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if storage is None:
        return default_storage(run_dir)
    check_storage_url(storage)
    # Workers may start in another folder (a SLURM job): a journal is named by its absolute path.
    return journal_url(journal_path(storage)) if is_journal(storage) else storage


@contextlib.contextmanager
def heartbeats(storage: BaseStorage, trial_ids: list[int]) -> Iterator[None]:
    """Heartbeats for every claimed trial while the work runs."""
    with contextlib.ExitStack() as beats:
        for trial_id in trial_ids:
            beats.enter_context(heartbeat(storage, trial_id))
        yield


def work_loop(
    claim: Callable[[], W | None],
    run: Callable[[W], int],
    fail: Callable[[W, str | None], None],
    *,
    describe: Callable[[W], str],
    log: logging.Logger,
) -> int:
    """Claim and run work until ``claim()`` returns None; return the units run here.

    ``run(work)`` returns how many units it completed. If it raises, ``fail(work, error)``
    marks the claimed trials failed: ``error`` is the message, or None for Ctrl-C (the
    worker then exits) and SystemExit; a failure to mark them is logged, and their missing
    heartbeats fail them later.
    """
    done = 0
    while True:
        # A Ctrl-C during the claim waits until the claimed work is inside the try below, which
        # marks it failed; raised inside the claim it would leave a trial RUNNING until its
        # heartbeat expires.
        with deferred_interrupts() as pending:
            work = retry_db("cannot claim work", claim)
        if work is None:
            if pending:
                raise KeyboardInterrupt
            return done
        what = describe(work)
        try:
            if pending:
                raise KeyboardInterrupt
            log.info("%s: start", what)
            done += run(work)
            log.info("%s: done", what)
        except BaseException as err:  # Ctrl-C, SystemExit from Lightning, or a bug
            interrupted = isinstance(err, (KeyboardInterrupt, SystemExit))
            if interrupted:
                # Ctrl-C reaches a worker twice (the terminal's and the driver's): a second
                # KeyboardInterrupt while marking would leave a trial RUNNING until its heartbeat expires.
                for sig in INTERRUPTS:
                    signal.signal(sig, signal.SIG_IGN)
            try:
                fail(work, None if interrupted else f"{type(err).__name__}: {err}")
            except Exception:  # the storage may be gone too; heartbeats will expire the trials
                log.exception("%s: could not mark it failed", what)
            if interrupted:
                raise KeyboardInterrupt from None
            if isinstance(err, ConfigError):  # the user's to fix, said in one line: no traceback
                log.error("%s failed: %s", what, err)
            else:
                log.error("%s failed:\n%s", what, traceback.format_exc())


@dataclass
class _Deferral:
    pending: list[int]
    idle: bool = False  # the claim holds nothing and waits (``idle_wait``): interrupts raise


_deferral: _Deferral | None = None  # the claim in progress in this process's main thread


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[list[int]]:
    """Inside: SIGINT/SIGTERM are recorded in the yielded list instead of raising, except while
    the claim waits in ``idle_wait`` (main thread only; signals reach no other thread's code)."""
    global _deferral
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    state = _Deferral([])

    def record(signum: int, frame: object) -> None:
        if state.idle:
            raise KeyboardInterrupt
        state.pending.append(signum)

    old = {sig: signal.signal(sig, record) for sig in INTERRUPTS}
    _deferral = state
    try:
        yield state.pending
    finally:
        _deferral = None
        for sig, handler in old.items():
            signal.signal(sig, handler)


def idle_wait(seconds: float) -> None:
    """``time.sleep`` for a claim that holds nothing yet: Ctrl-C stops it at once."""
    state = _deferral
    if state is None:
        time.sleep(seconds)
        return
    if state.pending:
        raise KeyboardInterrupt
    state.idle = True
    try:
        time.sleep(seconds)
    finally:
        state.idle = False


def worker_command(module: str, args: list[str]) -> list[str]:
    """The command line of a worker running ``module`` with exactly the driver's code
    (an absolute entry point and ``-P``; see sweeps/drivers/entry.py), never the current folder's."""
    return [sys.executable, "-P", str(Path(__file__).resolve().with_name("entry.py")), module, *args]


@dataclass(frozen=True)
class WorkerCommand:
    """What every worker runs: ``module`` (python -m style, started by ``worker_command``) with
    ``args``, and ``env``: variables added to its environment only (a pinned CPU ISA's, read when
    the worker's torch loads); the driver's own environment stays as it is."""

    module: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Watch:
    """The driver's one progress bar: ``title``, ``total`` units, and ``poll()`` -> (units done,
    a status text)."""

    title: str
    total: int
    poll: Callable[[], tuple[int, str]]


def _worker_env(index: int, url: str | None, extra: dict[str, str]) -> dict[str, str]:
    """Worker ``index``'s environment: a copy of this process's, with the storage URL (or
    without one) and ``extra``; this process's environment is not changed."""
    env = {k: v for k, v in os.environ.items() if k != STORAGE_ENV} | ({STORAGE_ENV: url} if url else {})
    env |= extra  # a pinned CPU ISA: read when the worker's torch loads
    import torch

    gpus = torch.cuda.device_count()
    if gpus > 1 and "CUDA_VISIBLE_DEVICES" not in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = str(index % gpus)  # one worker per GPU
    # No thread count here: a cell's CPU threads are its config's trainer.cpu_threads, whatever
    # the worker count, so a cell gives the same number from `ablate train` and from any sweep.
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@contextlib.contextmanager
def scoped_environ(changes: dict[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``changes`` (None: the variable unset) inside the body, and every
    variable it names back as it was after, on any exit."""
    before = {k: os.environ.get(k) for k in changes}
    try:
        for key, value in changes.items():
            _set_env(key, value)
        yield
    finally:
        for key, value in before.items():
            _set_env(key, value)


def _set_env(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


@dataclass
class ProcessHandle:
    """A worker process on this machine (``--launcher processes``), and its log file."""

    proc: subprocess.Popen
    log: Path | None = None

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.running():
            self.proc.send_signal(signal.SIGINT)

    def wait(self) -> None:
        self.proc.wait()

    def failed(self) -> bool:
        return self.proc.returncode != 0

    def reason(self) -> str | None:
        """Why the worker stopped, as the end of its log says (``stop_reason``), or None."""
        if self.log is None:
            return None
        try:
            with self.log.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL))
                return stop_reason(f.read().decode(errors="replace"))
        except OSError:
            return None


def _start_processes(
    command: WorkerCommand, run_dir: Path, workers: int, url: str | None
) -> list[ProcessHandle]:
    (run_dir / "logs").mkdir(exist_ok=True)
    stem = command.module.rsplit(".", 1)[-1]
    handles = []
    for i in range(workers):
        path = run_dir / "logs" / f"{stem}-{i}.log"
        log = open(path, "a")  # noqa: SIM115 (lives as long as the worker)
        cmd = worker_command(command.module, command.args)
        env = _worker_env(i, url, command.env)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        handles.append(ProcessHandle(proc, path))
    return handles


def _start_jobs(
    command: WorkerCommand, run_dir: Path, workers: int, url: str | None, launcher: Launcher, title: str
) -> list[Any]:
    """submitit jobs (``--launcher local|slurm``). They take the driver's environment when they
    are submitted (sbatch exports it; the local executor copies it), so the URL reaches them
    there, for the submission only, without entering the pickled job or its command line; the
    pinned ISA's variables travel with each job (its worker starts with them)."""
    with scoped_environ({STORAGE_ENV: url or None}):
        handles = start_jobs(
            launcher, worker_command(command.module, command.args), workers, run_dir, title, command.env
        )
    console.print(f"submitted {workers} {launcher.kind} job(s); their logs: {run_dir / 'jobs'}", markup=False)
    return handles


def _watch_bar(handles: list[Any], poll: Callable[[], tuple[int, str]], title: str, total: int) -> None:
    """A progress bar, redrawn every second, on a terminal."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        done, state = poll()
        task = bar.add_task(title, total=total, completed=done, state=state)
        while any(h.running() for h in handles):
            time.sleep(1.0)
            done, state = poll()
            bar.update(task, completed=done, state=state)


def _watch_lines(handles: list[Any], poll: Callable[[], tuple[int, str]], title: str, total: int) -> None:
    """In a log or a pipe, where a redrawn bar would pile up: one line each time the count of
    finished work changes, flushed at once (a reader of the pipe sees a finished cell within
    LINE_POLL_S and the time one poll takes)."""
    start = time.monotonic()
    shown_done = -1
    while True:
        running = any(h.running() for h in handles)
        done, state = poll()
        if done != shown_done:
            elapsed = time.strftime("%H:%M:%S", time.gmtime(time.monotonic() - start))
            console.print(f"{title}: {done}/{total} done, {state}, {elapsed}", markup=False, soft_wrap=True)
            with contextlib.suppress(OSError, ValueError):  # rich flushes too; a closed pipe is rich's
                console.file.flush()
            shown_done = done
        if not running:
            return
        time.sleep(LINE_POLL_S)


def on_terminal() -> bool:
    """Whether the progress goes to a terminal that redraws a bar: rich says so and the stream is
    one. FORCE_COLOR or TTY_COMPATIBLE=1 make rich call a pipe a terminal, where a redrawn bar
    sends no line until the end; a pipe gets lines."""
    try:
        return console.is_terminal and console.file.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def run_workers(
    command: WorkerCommand, run_dir: Path, options: RunOptions, *, workers: int, url: str | None, watch: Watch
) -> None:
    """Start ``workers`` workers running ``command`` (processes here, or submitit jobs as
    ``options.launcher`` says; see sweeps/drivers/launcher.py) and show one progress bar until
    they all ended.

    ``url`` is the storage every worker opens (None: each run folder's own study.db). Ctrl-C is
    passed on to the workers (SIGINT, or the jobs are cancelled), which mark their running trial
    failed so that the same command resumes it.
    """
    launcher = options.launcher
    if launcher is None or launcher.kind == "processes":
        handles: list[Any] = _start_processes(command, run_dir, workers, url)
        logs = run_dir / "logs"
    else:
        handles = _start_jobs(command, run_dir, workers, url, launcher, watch.title)
        logs = run_dir / "jobs"
    # SIGTERM (kill, scancel, a CI timeout) stops the workers as Ctrl-C does; left to its default
    # it would end this process alone and leave the workers training.
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, signal.default_int_handler) if main else None
    try:
        show = _watch_bar if on_terminal() else _watch_lines
        show(handles, watch.poll, watch.title, watch.total)
    except KeyboardInterrupt:
        for h in handles:
            h.stop()
        for h in handles:
            h.wait()
        console.print(
            f"interrupted: finished work is stored in {shown(url) if url else 'each run folder'}; run the "
            "same command again to resume",
            markup=False,
        )
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    bad = [h for h in handles if h.failed()]
    if bad:  # paths and URLs are printed as text: a '[' in them is not rich markup
        console.print(f"{len(bad)} worker(s) exited with errors; see {logs}", markup=False, style="yellow")
        for reason in dict.fromkeys(r for h in bad if (r := h.reason())):  # each once, in order
            console.print(f"{STOPPED}{reason}", markup=False, style="yellow", soft_wrap=True)
