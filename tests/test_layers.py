"""Imports go one way: errors < lit_modules | datamodules < experiments < sweeps < tables | api < cli < benchmarks.

A package may import its own modules and any package of a lower layer, never one above it or
beside it, so the model and the data never depend on orchestration and there is no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

LAYERS = {
    "errors": 0,
    "lit_modules": 1,
    "datamodules": 1,
    "experiments": 2,
    "sweeps": 3,
    "tables": 4,
    "api": 4,
    "cli": 5,
    "__main__": 6,
    "benchmarks": 6,
}


def unit(path: Path) -> str:
    """The layer unit of a source file: its top folder, or its stem for a root module."""
    rel = path.relative_to(REPO)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_units(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ablate" and len(parts) > 1 and parts[1] in LAYERS:
                found.add(parts[1])
    return found


SOURCES = sorted(
    p
    for p in REPO.rglob("*.py")
    if not {".venv", "tests", "build"} & set(p.relative_to(REPO).parts) and unit(p) in LAYERS
)


def test_every_source_file_is_in_a_layer() -> None:
    assert len(SOURCES) > 40
    assert {unit(p) for p in SOURCES} == set(LAYERS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_imports_point_down(path: Path) -> None:
    own = unit(path)
    upward = sorted(u for u in imported_units(path) if u != own and LAYERS[u] >= LAYERS[own])
    assert not upward, f"{path.relative_to(REPO)} ({own}, layer {LAYERS[own]}) imports {upward}"
