"""The test suite's own layout: modules named from their path under the rootdir (never after
the checkout's folder), shared code in tests/helpers, no machine's absolute paths."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.helpers.paths import REPO

TEST_SOURCES = sorted((REPO / "tests").rglob("*.py"))


def test_test_modules_are_named_from_their_path_not_the_checkout_folder() -> None:
    """The root is the package ``ablate``: pytest's default import mode walked up into it and
    named this module ``<checkout folder>.tests.unit.test_suite_layout``."""
    assert __name__ == "tests.unit.test_suite_layout"
    assert not [m for m in sys.modules if ".tests." in m or m.endswith(".tests")]


def test_no_test_imports_conftest() -> None:
    """Fixtures come from conftest.py by name; shared code from tests/helpers."""
    offenders = []
    for path in TEST_SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if any(n and n.split(".")[-1] == "conftest" for n in names):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


SYSTEM = ("/usr", "/etc", "/bin", "/lib", "/proc", "/dev", "/tmp", "/sys", "/opt", "/var")


def names_a_machine_path(value: str) -> bool:
    """An absolute path that exists here, outside this checkout and the system's folders: it
    would be missing, or something else, on another machine."""
    if not value.startswith("/") or "\n" in value or len(Path(value).parts) < 3:
        return False
    path = Path(value)
    return path.exists() and not value.startswith(SYSTEM) and REPO not in path.resolve().parents


def test_no_test_names_a_machine_path() -> None:
    """Data beside the checkout is found from the checkout (tests.helpers.paths), never by a path
    that exists on one machine only (``/work/shared/data/sst2``)."""
    found = [
        f"{path.relative_to(REPO)}: {node.value!r}"
        for path in TEST_SOURCES
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and names_a_machine_path(node.value)
    ]
    assert found == []
    data = REPO.parent / "shared" / "data"
    if not str(data).startswith(SYSTEM):  # a checkout in /tmp: its data is in a system folder
        assert names_a_machine_path(str(data)) == data.exists()
    assert not names_a_machine_path("/work/shared-looking/nowhere")
