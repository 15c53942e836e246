"""The catalog harness: ``ablate <argv>`` in a forked child of the test process (its own cwd,
stdout, stderr and exit code; the parent's imports are already done, so a case costs
milliseconds instead of ~8 CPU-seconds of interpreter start-up), and the "failed cleanly" check
of a bad-input case."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import datasets.packaged_modules.csv  # noqa: F401  (imported here once, not in every forked child)
import optuna  # noqa: F401
import pytest
from lightning.pytorch.loggers import CSVLogger  # noqa: F401

import ablate.experiments.runner.cells  # noqa: F401
from ablate import cli
from tests.helpers.configs import TINY_YAML as TINY


@dataclass
class Case:
    args: list[str]
    expect: list[str]  # substrings of stderr, e.g. the key, the valid choices, the file and the line
    files: dict[str, str | None] | None = None  # written into the working folder; None makes a folder


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_forked(argv: list[str], cwd: Path, timeout: float = 120.0) -> Ran:
    """``ablate <argv>`` in a forked child of this process: cwd, stdout, stderr and exit code its own."""
    logs = Path(tempfile.mkdtemp(prefix="ablate-cli-"))
    out, err = logs / "stdout", logs / "stderr"
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 70
        try:
            os.chdir(cwd)
            with out.open("w") as so, err.open("w") as se:
                sys.stdout, sys.stderr = so, se
                try:
                    code = cli.main(argv)
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else 1
                except BaseException:
                    traceback.print_exc()
                    code = 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"ablate {' '.join(argv)} ran past {timeout} s")
        time.sleep(0.02)
    return Ran(os.waitstatus_to_exitcode(status), out.read_text(), err.read_text())


def prepare(tmp_path: Path, case: Case) -> list[str]:
    """Write the case's files (default: the tiny config) and return the full ``train`` argv."""
    files = {"tiny.yaml": TINY, **(case.files or {})}
    for name, content in files.items():
        if content is None:
            (tmp_path / name).mkdir(parents=True)
        else:
            (tmp_path / name).write_text(content)
    config, overrides = "tiny.yaml", list(case.args)
    if overrides and overrides[0].startswith("@"):
        config = overrides.pop(0)[1:]
    return ["train", config, *overrides, "--out", "out", "--no-progress"]


def assert_failed_cleanly(tmp_path: Path, ran: Ran, case: Case) -> None:
    assert ran.returncode == 2, f"exit {ran.returncode}\nstdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"
    assert "Traceback" not in ran.stderr
    message = " ".join(ran.stderr.split())  # rich may wrap long lines
    for part in case.expect:
        assert part in message, f"{part!r} not in stderr:\n{ran.stderr}"
    if case.files and "out/keep.txt" in case.files:
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["keep.txt"]
    else:
        assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out.partial-*"))
