"""``ablate.files`` reads the umask when it writes, never at import: importing a module must not
touch process state (a notebook, a worker, another library's thread creating files)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ablate import files
from tests.helpers.paths import REPO

IMPORT_WATCHED = """
import os, sys
calls = []
real = os.umask
os.umask = lambda mask: calls.append(mask) or real(mask)
import ablate.files
print(calls, oct(real(0o022)))
"""


def test_importing_files_does_not_call_umask() -> None:
    """In a fresh interpreter with a distinctive umask: no os.umask call, and the umask stays."""
    ran = subprocess.run(
        [sys.executable, "-c", f"import os; os.umask(0o027)\n{IMPORT_WATCHED}"],
        capture_output=True,
        text=True,
        cwd=REPO.parent,  # `import ablate` finds the installed package, not a folder named so
        check=True,
    )
    assert ran.stdout.split() == ["[]", "0o27"], ran.stderr


@pytest.fixture
def umask_027() -> object:
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_written_files_and_folders_get_the_current_umask(tmp_path: Path, umask_027: object) -> None:
    """The umask in force when the file is written, not the one at import (0o022 in the tests)."""
    assert files.current_umask() == 0o027
    path = files.atomic_write(tmp_path / "a.json", "{}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    with files.atomic_dir(tmp_path / "out") as tmp:
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o750


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="Linux: the umask from /proc")
def test_reading_the_umask_on_linux_does_not_set_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def no_umask(mask: int) -> int:
        raise AssertionError("os.umask called: it sets the umask to read it")

    monkeypatch.setattr(files.os, "umask", no_umask)
    files.atomic_write(tmp_path / "b.txt", "x")


def test_without_proc_the_umask_is_read_once_and_restored(
    monkeypatch: pytest.MonkeyPatch, umask_027: object
) -> None:
    def no_proc(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError("/proc/self/status")

    monkeypatch.setattr(files, "open", no_proc, raising=False)
    monkeypatch.setattr(files, "_UMASK_FALLBACK", None)
    assert files.current_umask() == 0o027 == files.current_umask()
    assert os.umask(0o027) == 0o027  # left as it was
