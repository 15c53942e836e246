"""Where the workers run: ``--launcher processes`` (the default: ``--workers`` processes on this
machine), ``slurm`` (a SLURM job array through submitit) or ``local`` (submitit's local
executor: the SLURM code path on one machine, what the tests run end to end).

Each submitit job runs the ordinary worker command (``python -P .../sweeps/entry.py
ablate.sweeps.drivers.worker ...``) against the shared ``--storage``; the driver only waits, shows the
study's progress and writes the report. Jobs own nothing: a job that dies or times out leaves
its cell RUNNING until its heartbeats stop, and the next claim (or the same command later,
which submits new jobs) runs it again.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import cloudpickle
import yaml

from ablate.errors import ConfigError

Kind = Literal["processes", "local", "slurm"]
LAUNCHERS: tuple[Kind, ...] = ("processes", "local", "slurm")
# Folders that are node-local by convention: a SLURM job on another node cannot see them.
NODE_LOCAL = ("/tmp", "/var/tmp", "/dev/shm", "/run")
# submitit's keys that take a list or a mapping, which KEY=VALUE,... cannot spell.
NOT_SCALAR = frozenset({"setup", "teardown", "srun_args", "additional_parameters"})
LOCAL_TIMEOUT_MIN = 7 * 24 * 60  # submitit's local default is 2 minutes
# A worker's log line when a ConfigError stopped it (a plugin changed since the driver recorded
# it, a study that refuses the spec): the driver prints what follows the mark, so that the reason
# is in its own output, not only in a worker's log.
STOPPED = "worker stopped: "


def stop_reason(text: str) -> str | None:
    """What the last ``STOPPED`` line of a worker's log ``text`` says, or None."""
    reasons = [line.partition(STOPPED)[2].strip() for line in text.splitlines() if STOPPED in line]
    return reasons[-1] if reasons else None


@dataclass(frozen=True)
class Launcher:
    kind: Kind
    slurm: dict[str, Any] = field(default_factory=dict)


def slurm_keys() -> list[str]:
    """What ``--slurm`` accepts: submitit's sbatch parameters and its generic names
    (``timeout_min``, ``gpus_per_node``, ``mem_gb``, ...)."""
    from submitit.slurm.slurm import SlurmExecutor, _get_default_parameters

    generic = SlurmExecutor._equivalence_dict() or {}
    return sorted((set(_get_default_parameters()) | set(generic)) - NOT_SCALAR)


def parse_slurm(text: str) -> dict[str, Any]:
    """``partition=gpu,gpus_per_node=1,timeout_min=120`` -> a dict of YAML scalars."""
    valid = slurm_keys()
    out: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in valid:
            what = f"unknown key {key!r}" if eq else f"{item!r} is not KEY=VALUE"
            raise ConfigError(f"--slurm: {what}; valid keys: {', '.join(valid)}")
        parsed = yaml.safe_load(value) if value.strip() else None
        if not isinstance(parsed, (str, int, float, bool)):
            raise ConfigError(f"--slurm {key}={value!r}: give a number, a word or true/false")
        out[key] = parsed
    return out


def node_local(path: Path) -> str | None:
    """The node-local folder ``path`` lies in, or None."""
    resolved = path.absolute()
    roots = [*NODE_LOCAL, os.environ.get("TMPDIR") or "/tmp"]
    return next((r for r in roots if resolved.is_relative_to(r)), None)


def check_launcher(kind: str, slurm: str | None, run_dir: Path, storage_file: Path | None) -> Launcher:
    """The launcher the options name; every job must reach the run folder and the storage.

    ``storage_file`` is the SQLite file or journal of ``--storage`` (None for a database server).
    """
    if kind not in LAUNCHERS:
        raise ConfigError(f"--launcher {kind!r}: choose one of {', '.join(LAUNCHERS)}")
    if slurm is not None and kind != "slurm":
        raise ConfigError(f"--slurm is for --launcher slurm, not --launcher {kind}")
    if kind != "slurm":
        return Launcher(kind)  # one machine: any file it can open, the jobs can too
    parsed = parse_slurm(slurm or "")
    for what, path in (("the run folder", run_dir), ("the --storage file", storage_file)):
        if path is not None and (root := node_local(path)):
            raise ConfigError(
                f"--launcher slurm: {what} {path} is under {root}, which jobs on other nodes cannot "
                "see; put it on a shared file system (--runs, --storage journal:/shared/study.log)"
            )
    if not (shutil.which("sbatch") and shutil.which("srun")):
        raise ConfigError("--launcher slurm: no sbatch/srun here; run ablate sweep on a SLURM login node")
    return Launcher(kind, parsed)


class WorkerJob:
    """One submitit job: run the worker command, pass Ctrl-C / SIGTERM on to it as SIGINT (the
    worker then marks its claimed cells failed, so that they are rerun) and return its exit code.

    Pickled by value (see ``start_jobs``), so the job's Python needs only the standard library and
    submitit to load it; the worker then imports exactly the driver's code (sweeps/drivers/entry.py).
    """

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command = command
        self.env = env

    def __call__(self) -> int:
        proc = subprocess.Popen(self.command, env={**os.environ, **self.env})

        def forward(signum: int, frame: object) -> None:
            proc.send_signal(signal.SIGINT)

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        code = proc.wait()
        if code != 0:
            raise RuntimeError(f"worker exited with code {code}: {' '.join(self.command)}")
        return code


@dataclass
class JobHandle:
    """A submitted worker job, as the driver's wait loop sees it."""

    job: Any  # submitit.Job

    def running(self) -> bool:
        return not self.job.done()

    def stop(self) -> None:
        self.job.cancel(check=False)

    def wait(self, limit_s: float = 60.0) -> None:
        """Until the job ended (a cancelled SLURM job shows as done within about a minute)."""
        deadline = time.monotonic() + limit_s
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.5)

    def failed(self) -> bool:
        return self.job.exception() is not None

    def reason(self) -> str | None:
        """Why the job's worker stopped, as its log says (``stop_reason``), or None."""
        try:
            return stop_reason((self.job.stdout() or "") + (self.job.stderr() or ""))
        except OSError:
            return None


def make_executor(launcher: Launcher, folder: Path, name: str) -> Any:
    import submitit

    if launcher.kind == "local":
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=LOCAL_TIMEOUT_MIN)
        return executor
    executor = submitit.SlurmExecutor(folder=folder)  # check_launcher found sbatch
    params = {"job_name": f"ablate-{name}", **launcher.slurm}
    try:
        executor.update_parameters(**executor._convert_parameters(params))
    except ValueError as err:
        raise ConfigError(f"--slurm: {str(err).splitlines()[0]}") from None
    return executor


def start_jobs(
    launcher: Launcher,
    command: list[str],
    workers: int,
    run_dir: Path,
    name: str,
    env: dict[str, str] | None = None,
) -> list[JobHandle]:
    """Submit ``workers`` jobs running ``command`` (one SLURM array); their logs go to run_dir/jobs.
    ``env``: variables each job's worker starts with (pickled with the job: nothing secret)."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    executor = make_executor(launcher, run_dir / "jobs", name)
    envs = [{**(env or {}), **_job_env(launcher, i)} for i in range(workers)]
    with executor.batch():
        jobs = [executor.submit(WorkerJob(command, env)) for env in envs]
    return [JobHandle(job) for job in jobs]


def _job_env(launcher: Launcher, index: int) -> dict[str, str]:
    """SLURM gives each job its GPUs; the local executor hides them, so spread its jobs over them."""
    env = {"PYTHONUNBUFFERED": "1"}
    if launcher.kind == "local":
        import torch

        gpus = torch.cuda.device_count()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        elif gpus:
            env["CUDA_VISIBLE_DEVICES"] = str(index % gpus)
    return env
