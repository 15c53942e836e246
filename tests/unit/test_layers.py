"""Imports go one way, from the model up to the command line:

    errors | trees < files
      < lit_modules.model < lit_modules.systems < lit_modules.components   (datamodules beside)
      < experiments.schema < experiments.specs < experiments.runner | components | testing
      < sweeps.stats < sweeps.ledger < sweeps.report < sweeps.integrations < sweeps.drivers
      < api < cli | ablate/__init__.py < __main__ | benchmarks | docs | examples

A unit is a room of a folder that has rooms (``lit_modules/model/``, ``sweeps/ledger/``, ...), or
a top folder or root module. A unit may import its own modules and any unit of a lower layer,
never one above it or beside it, so the model never depends on orchestration, the statistics
never on storage. Inside a unit the modules form no cycle. Every dependency is one the reader
can see: no relative imports, and no ``ablate.`` module path handed to importlib as a string.
Imports under ``if TYPE_CHECKING:`` are annotations, not dependencies: they count for the
direction of the layers, not for cycles (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

LAYERS = {
    "errors": 0,
    "trees": 0,  # flatten: nested mappings as dotted keys (imports nothing of ablate)
    "files": 1,  # atomic files, JSON and YAML writing (imports errors): used from the model up to the CLI
    "lit_modules": 2,  # lit_modules/__init__.py: a docstring
    "lit_modules.model": 2,
    "datamodules": 2,
    "lit_modules.systems": 3,
    "lit_modules.components": 4,
    "experiments": 5,  # experiments/__init__.py: a docstring
    "experiments.schema": 5,
    "experiments.specs": 6,
    "experiments.runner": 7,
    "components": 7,  # ablate.components: the registries' public face (lit_modules)
    "testing": 7,  # ablate.testing: the conformance kit for pytest (lit_modules)
    "sweeps": 8,  # sweeps/__init__.py: a docstring, no imports
    "sweeps.stats": 8,
    "sweeps.ledger": 9,
    "sweeps.report": 10,
    "sweeps.integrations": 11,
    "sweeps.drivers": 12,
    "api": 13,
    "__init__": 14,  # ablate/__init__.py re-exports the API lazily
    "cli": 14,
    "__main__": 15,
    "benchmarks": 15,
    "docs": 15,
    "examples": 15,
}
# The folders that have rooms, and their rooms (a room is a subpackage, a unit of its own).
ROOMS = {
    "lit_modules": {"model", "systems", "components"},
    "experiments": {"schema", "specs", "runner"},
    "sweeps": {"stats", "ledger", "report", "integrations", "drivers"},
}
DATA_FOLDERS = {"experiments": {"configs"}}  # folders of YAML beside the rooms, no code
IMPORTERS = {"import_module", "__import__", "run_module", "find_spec"}


def unit_of_parts(parts: tuple[str, ...]) -> str:
    """The unit of a module path inside the package (``("sweeps", "drivers", "grid")`` -> sweeps.drivers)."""
    if parts[0] in ROOMS and len(parts) > 1 and parts[1] in ROOMS[parts[0]]:
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def module_parts(path: Path) -> tuple[str, ...]:
    rel = path.relative_to(REPO).with_suffix("")
    return rel.parts[:-1] if rel.name == "__init__" and len(rel.parts) > 1 else rel.parts


def unit(path: Path) -> str:
    """The layer unit of a source file: its top folder (a room of a roomed folder), or a root module."""
    return unit_of_parts(module_parts(path))


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def imported_modules(source: str) -> set[tuple[str, ...]]:
    """Every ``ablate.*`` module path a source imports, at the top or inside a function (as parts
    after ``ablate``; ``from ablate.x import y`` gives both ``x`` and ``x.y``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = tuple(name.split("."))
            if parts[0] == "ablate" and len(parts) > 1:
                found.add(parts[1:])
    return found


def imported_units(source: str) -> set[str]:
    return {unit_of_parts(parts) for parts in imported_modules(source)}


def relative_imports(source: str) -> list[str]:
    return [
        f"line {n.lineno}: from {'.' * n.level}{n.module or ''} import ..."
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.ImportFrom) and n.level > 0
    ]


def module_strings(source: str) -> list[str]:
    """``ablate.`` module paths handed to an importer as a string (``importlib.import_module(
    "ablate.x")``, or a constant of such strings that the module passes to one)."""
    tree = ast.parse(source)
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) in IMPORTERS
    ]
    if not calls:
        return []
    return sorted(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("ablate.")
    )


SOURCES = sorted(
    p
    for p in REPO.rglob("*.py")
    if not {".venv", "tests", "build", ".git", "runs", "wandb"} & set(p.relative_to(REPO).parts)
)
MODULES = {module_parts(p): p for p in SOURCES}


def upward(own: str, source: str) -> list[str]:
    """The units ``source`` (of unit ``own``) imports that are not below it."""
    return sorted(u for u in imported_units(source) if u in LAYERS and u != own and LAYERS[u] >= LAYERS[own])


def runtime_imports(source: str, modules: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """The modules among ``modules`` that ``source`` imports when it runs (not under
    ``TYPE_CHECKING``): ``from ablate.x import m`` is the module x.m where m is one, else x."""
    tree = ast.parse(source)
    skip = _type_checking_nodes(tree)
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = tuple(node.module.split("."))[1:]
            found |= {base + (a.name,) if base + (a.name,) in modules else base for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {tuple(a.name.split("."))[1:] for a in node.names}
    return found & modules


def cycles(sources: dict[tuple[str, ...], str]) -> list[list[str]]:
    """The import cycles among ``sources`` (module parts -> source), each unit's modules alone:
    the strongly connected components of more than one module."""
    graph = {
        mod: {
            dep
            for dep in runtime_imports(src, set(sources))
            if dep != mod and unit_of_parts(dep) == unit_of_parts(mod)
        }
        for mod, src in sources.items()
    }
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    found: list[list[str]] = []

    def visit(v: tuple[str, ...]) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(".".join(w))
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_every_source_file_is_in_a_layer() -> None:
    assert len(SOURCES) > 60
    outside = sorted(str(p.relative_to(REPO)) for p in SOURCES if unit(p) not in LAYERS)
    assert not outside, f"source files in no layer (add their unit to LAYERS): {outside}"
    assert {unit(p) for p in SOURCES} == set(LAYERS)


@pytest.mark.parametrize("folder", sorted(ROOMS))
def test_a_folder_with_rooms_has_no_module_outside_them(folder: str) -> None:
    assert [p.name for p in (REPO / folder).glob("*.py")] == ["__init__.py"]
    subfolders = {p.name for p in (REPO / folder).iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert subfolders == ROOMS[folder] | DATA_FOLDERS.get(folder, set())
    for data in DATA_FOLDERS.get(folder, ()):
        assert not list((REPO / folder / data).rglob("*.py")), f"{folder}/{data} holds data, not code"


def test_every_import_of_ablate_names_a_unit() -> None:
    """A typo'd or removed module path (``ablate.sweeps.store``) would otherwise pass unseen."""
    unknown = {
        str(p.relative_to(REPO)): sorted(u for u in imported_units(p.read_text()) if u not in LAYERS)
        for p in SOURCES
    }
    assert not {k: v for k, v in unknown.items() if v}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_imports_point_down_and_can_be_seen(path: Path) -> None:
    own, source = unit(path), path.read_text()
    assert not (bad := upward(own, source)), (
        f"{path.relative_to(REPO)} ({own}, layer {LAYERS[own]}) imports {bad}"
    )
    assert not (rel := relative_imports(source)), f"{path.relative_to(REPO)}: relative imports {rel}"
    assert not (strings := module_strings(source)), f"{path.relative_to(REPO)} imports by string: {strings}"


def test_no_unit_has_an_import_cycle() -> None:
    assert cycles({mod: p.read_text() for mod, p in MODULES.items()}) == []


def test_the_checks_fail_for_an_upward_import() -> None:
    """The rule itself: one upward import added inside a room is found, at the top of a module and
    inside a function (the statistics importing the ledger, the ledger importing the report)."""
    stats = REPO / "sweeps" / "stats" / "summary.py"
    ledger = REPO / "sweeps" / "ledger" / "cells.py"
    assert upward(unit(stats), stats.read_text()) == []
    probe = "\n\ndef _probe():\n    from ablate.sweeps.ledger.cells import CellStore\n"
    assert upward(unit(stats), stats.read_text() + probe) == ["sweeps.ledger"]
    top = "from ablate.sweeps.report.build import report\n"
    assert upward(unit(ledger), top + ledger.read_text()) == ["sweeps.report"]
    model = REPO / "lit_modules" / "model" / "encoder.py"
    assert upward(unit(model), "from ablate.lit_modules.systems.classifier import LitClassifier\n") == [
        "lit_modules.systems"
    ]


def test_the_checks_fail_for_a_relative_import_and_an_importlib_string() -> None:
    assert relative_imports("from .cells import CellStore\nfrom .. import errors\n") == [
        "line 1: from .cells import ...",
        "line 2: from .. import ...",
    ]
    direct = 'import importlib\nmod = importlib.import_module("ablate.sweeps.ledger.cells")\n'
    assert module_strings(direct) == ["ablate.sweeps.ledger.cells"]
    table = 'from importlib import import_module\nMODS = ("ablate.x.a", "ablate.x.b")\n[import_module(m) for m in MODS]\n'
    assert module_strings(table) == ["ablate.x.a", "ablate.x.b"]
    # A user's module name passed to importlib, and a string that names no importer, are fine.
    assert (
        module_strings("import importlib\ndef load(entry):\n    return importlib.import_module(entry)\n")
        == []
    )
    assert module_strings('HELP = "ablate.sweeps.drivers.worker"\n') == []


def test_the_checks_fail_for_a_cycle_inside_a_room() -> None:
    room = {
        ("sweeps", "ledger", "a"): "from ablate.sweeps.ledger.b import f\n",
        ("sweeps", "ledger", "b"): "def f():\n    from ablate.sweeps.ledger import a\n",
        ("sweeps", "ledger", "c"): "from ablate.sweeps.ledger.a import f\n",
    }
    assert cycles(room) == [["sweeps.ledger.a", "sweeps.ledger.b"]]
    typing_only = dict(room)
    typing_only[("sweeps", "ledger", "b")] = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ablate.sweeps.ledger import a\n"
    )
    assert cycles(typing_only) == []
