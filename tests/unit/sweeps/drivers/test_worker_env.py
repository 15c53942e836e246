"""Starting workers leaves the driver's environment as it was (sweeps/drivers/loop.py): the storage
URL and a pinned ISA's variables go to the workers (their ``env=``, or for submitit jobs the
environment of the submission only), so a notebook that ran a sweep keeps its ``os.environ``."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ablate.sweeps.drivers import loop
from ablate.sweeps.drivers.launcher import Launcher
from ablate.sweeps.drivers.options import RunOptions
from ablate.sweeps.ledger.secrets import STORAGE_ENV

URL = "postgresql://ablate:s3cret-pw@db.example/studies"
PIN = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}


class Done:
    """A worker (process or job) that has already finished, cleanly."""

    returncode = 0

    def running(self) -> bool:
        return False

    def failed(self) -> bool:
        return False

    def poll(self) -> int:
        return 0


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr(loop, "console", Console(file=out, soft_wrap=True))  # not a terminal: lines
    monkeypatch.setattr(loop.time, "sleep", lambda _: None)
    for key in (STORAGE_ENV, *PIN):
        monkeypatch.delenv(key, raising=False)
    return out


def run(tmp_path: Path, options: RunOptions, url: str | None) -> None:
    loop.run_workers(
        loop.WorkerCommand("ablate.sweeps.drivers.worker", ["--run-dir", str(tmp_path)], dict(PIN)),
        tmp_path,
        options,
        workers=2,
        url=url,
        watch=loop.Watch("tiny", 1, lambda: (1, "0 running")),
    )


def test_processes_get_the_url_and_the_pin_and_the_driver_keeps_its_environment(
    tmp_path: Path, quiet: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    envs: list[dict[str, str]] = []

    def popen(cmd: list[str], **kwargs: Any) -> Done:
        assert not any("s3cret" in part for part in cmd)  # the URL is never on a command line
        envs.append(kwargs["env"])
        return Done()

    monkeypatch.setattr(loop.subprocess, "Popen", popen)
    before = dict(os.environ)
    run(tmp_path, RunOptions(storage=URL), URL)
    assert dict(os.environ) == before
    assert len(envs) == 2 and all(e[STORAGE_ENV] == URL and e.items() >= PIN.items() for e in envs)
    assert "s3cret" not in quiet.getvalue()


@pytest.mark.parametrize("outer", [None, "sqlite:////elsewhere/study.db"])
@pytest.mark.parametrize("url", [URL, None])
def test_jobs_see_the_url_only_while_they_are_submitted(
    tmp_path: Path,
    quiet: io.StringIO,
    monkeypatch: pytest.MonkeyPatch,
    outer: str | None,
    url: str | None,
) -> None:
    """submitit jobs take the driver's environment at submission (the URL must not be pickled
    with the job); before and after, the driver's environment is what it was."""
    if outer is not None:
        monkeypatch.setenv(STORAGE_ENV, outer)
    seen: dict[str, Any] = {}

    def start_jobs(launcher: Launcher, command: list[str], workers: int, *args: Any) -> list[Done]:
        seen.update(url=os.environ.get(STORAGE_ENV), env=args[-1], command=command)
        return [Done() for _ in range(workers)]

    monkeypatch.setattr(loop, "start_jobs", start_jobs)
    before = dict(os.environ)
    run(tmp_path, RunOptions(storage=url, launcher=Launcher("local")), url)
    assert dict(os.environ) == before
    assert seen["url"] == url  # set for the submission (or unset: each run folder's own study)
    assert seen["env"] == PIN and not any(k in os.environ for k in PIN)  # the pin travels with the job
    assert not any("s3cret" in part for part in seen["command"])


def test_scoped_environ_restores_on_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABLATE_TEST_KEEP", "1")
    monkeypatch.delenv("ABLATE_TEST_NEW", raising=False)
    before = dict(os.environ)
    with pytest.raises(RuntimeError), loop.scoped_environ({"ABLATE_TEST_KEEP": None, "ABLATE_TEST_NEW": "x"}):
        assert "ABLATE_TEST_KEEP" not in os.environ and os.environ["ABLATE_TEST_NEW"] == "x"
        raise RuntimeError
    assert dict(os.environ) == before


def test_the_worker_environment_is_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STORAGE_ENV, "sqlite:////stale.db")
    before = dict(os.environ)
    env = loop._worker_env(0, None, PIN)
    assert STORAGE_ENV not in env and env.items() >= PIN.items()  # no stale URL reaches a worker
    assert dict(os.environ) == before
