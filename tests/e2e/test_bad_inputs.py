"""A catalog of user errors: each exits with code 2, names the problem, and leaves no ``out`` folder.

Every case is a real ``ablate train ... --out out`` process in its own working folder. Starting the
interpreter costs ~8 CPU-seconds of imports (torch, lightning, datasets), so the catalog forks this
already-importing test process and runs the CLI's ``main`` in the child (same argv parsing, same exit
code, its own cwd, stdout and stderr); one case also goes through the console entry point proper.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/cli/test_bad_inputs.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.forked import Ran, assert_failed_cleanly, prepare
from tests.helpers.paths import ablate_cmd
from tests.unit.cli.test_bad_inputs import CASES


@pytest.mark.multiprocess
def test_console_entry_point_exits_2(tmp_path: Path) -> None:
    """The catalog's fork shortcut agrees with a real ``python -m ablate`` process."""
    case = CASES["label-not-integer"]
    proc = subprocess.run(
        ablate_cmd(*prepare(tmp_path, case)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert_failed_cleanly(tmp_path, Ran(proc.returncode, proc.stdout, proc.stderr), case)
