"""Imports go one way, from the model up to the command line:

    errors < lit_modules | datamodules < experiments | components | testing
           < sweeps.stats < sweeps.ledger < sweeps.report < sweeps.integrations < sweeps.drivers
           < api < cli | ablate/__init__.py < __main__ | benchmarks | docs | examples

A unit may import its own modules and any unit of a lower layer, never one above it or beside
it, so the model and the data never depend on orchestration, the statistics never on storage,
and there is no cycle. Every source file belongs to a unit (a file in no layer fails), and the
rooms of ``sweeps/`` are units of their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

LAYERS = {
    "errors": 0,
    "files": 0.5,  # atomic files: imports errors only
    "lit_modules": 1,
    "datamodules": 1,
    "experiments": 2,
    "components": 2,  # ablate.components: the registries' public face (lit_modules)
    "testing": 2,  # ablate.testing: the conformance kit for pytest (lit_modules)
    "sweeps": 3,  # sweeps/__init__.py: a docstring, no imports
    "sweeps.stats": 3,
    "sweeps.ledger": 4,
    "sweeps.report": 5,
    "sweeps.integrations": 6,
    "sweeps.drivers": 7,
    "api": 8,
    "__init__": 9,  # ablate/__init__.py re-exports the API lazily
    "cli": 9,
    "__main__": 10,
    "benchmarks": 10,
    "docs": 10,
    "examples": 10,
}
ROOMS = {"stats", "ledger", "report", "integrations", "drivers"}


def unit_of_parts(parts: tuple[str, ...]) -> str:
    """The unit of a module path inside the package (``("sweeps", "run", "grid")`` -> sweeps.run)."""
    if parts[0] == "sweeps" and len(parts) > 1 and parts[1] in ROOMS:
        return f"sweeps.{parts[1]}"
    return parts[0]


def unit(path: Path) -> str:
    """The layer unit of a source file: its top folder (a room of sweeps/), or a root module's stem."""
    rel = path.relative_to(REPO)
    return unit_of_parts(rel.parts[:-1] + (rel.stem,)) if len(rel.parts) > 1 else rel.stem


def imported_units(source: str) -> set[str]:
    """Every ``ablate.*`` unit a module's source imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = tuple(name.split("."))
            if parts[0] == "ablate" and len(parts) > 1:
                found.add(unit_of_parts(parts[1:]))
    return found


SOURCES = sorted(
    p for p in REPO.rglob("*.py") if not {".venv", "tests", "build", ".git"} & set(p.relative_to(REPO).parts)
)


def upward(own: str, source: str) -> list[str]:
    """The units ``source`` (of unit ``own``) imports that are not below it."""
    return sorted(u for u in imported_units(source) if u in LAYERS and u != own and LAYERS[u] >= LAYERS[own])


def test_every_source_file_is_in_a_layer() -> None:
    assert len(SOURCES) > 60
    outside = sorted(str(p.relative_to(REPO)) for p in SOURCES if unit(p) not in LAYERS)
    assert not outside, f"source files in no layer (add their unit to LAYERS): {outside}"
    assert {unit(p) for p in SOURCES} == set(LAYERS)


def test_sweeps_has_no_module_outside_its_rooms() -> None:
    assert [p.name for p in (REPO / "sweeps").glob("*.py")] == ["__init__.py"]
    assert {p.name for p in (REPO / "sweeps").iterdir() if p.is_dir() and p.name != "__pycache__"} == ROOMS


def test_every_import_of_ablate_names_a_unit() -> None:
    """A typo'd or removed module path (``ablate.sweeps.store``) would otherwise pass unseen."""
    unknown = {
        str(p.relative_to(REPO)): sorted(u for u in imported_units(p.read_text()) if u not in LAYERS)
        for p in SOURCES
    }
    assert not {k: v for k, v in unknown.items() if v}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_imports_point_down(path: Path) -> None:
    own = unit(path)
    bad = upward(own, path.read_text())
    assert not bad, f"{path.relative_to(REPO)} ({own}, layer {LAYERS[own]}) imports {bad}"


def test_the_check_fails_for_an_upward_import() -> None:
    """The rule itself: one upward import added inside a room is found, at the top of a module and
    inside a function (the statistics importing the ledger, the ledger importing the report)."""
    stats = REPO / "sweeps" / "stats" / "summary.py"
    ledger = REPO / "sweeps" / "ledger" / "cells.py"
    assert upward(unit(stats), stats.read_text()) == []
    probe = "\n\ndef _probe():\n    from ablate.sweeps.ledger.cells import CellStore\n"
    assert upward(unit(stats), stats.read_text() + probe) == ["sweeps.ledger"]
    top = "from ablate.sweeps.report.build import report\n"
    assert upward(unit(ledger), top + ledger.read_text()) == ["sweeps.report"]
