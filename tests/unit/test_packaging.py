"""Packaging: pyproject.toml's hand-written package list and package data against the tree, the pins
of constraints.txt against the dependencies, the license file.

The repository root is the package ``ablate`` (``package-dir = {"ablate" = "."}``), which
setuptools' discovery cannot map (``packages.find`` names packages relative to ``where``, without
the ``ablate.`` prefix), so ``[tool.setuptools] packages`` lists them by hand. A folder missing
from that list, or a YAML file no package-data glob matches, is left out of the wheel without a
word from setuptools: these tests are the word. The built wheel itself is read by
tests/e2e/test_packaging_wheel.py.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
# Root folders that hold no shipped code or data; .gitignore's folders (runs/, build/, wandb/, ...)
# and hidden ones (.venv, .git, ...) are skipped too, at any depth.
DEV_ROOTS = frozenset({"tests", "docs", "examples", "results"})
DATA = ("*.yaml", "*.yml")


def ignored_folders() -> set[str]:
    """The plain folder names .gitignore ignores (``runs/``, ``build/``, ...)."""
    lines = (line.strip() for line in (REPO / ".gitignore").read_text().splitlines())
    return {line.strip("/") for line in lines if line.endswith("/") and not re.search(r"[*?\[!#]", line)}


def matches(name: str, globs: list[str] | tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(name, g) for g in globs)


def is_data(name: str) -> bool:
    return matches(name, DATA)


def package_folders() -> dict[str, Path]:
    """Package name -> folder, for every folder of the tree that holds package code (an
    ``__init__.py``) or shipped data (YAML)."""
    skip = ignored_folders() | {"__pycache__"}
    found = {}
    for top, dirs, files in os.walk(REPO):
        here = Path(top)
        dirs[:] = [
            d
            for d in dirs
            if not (d.startswith(".") or d in skip or d.endswith(".egg-info"))
            and not (here == REPO and d in DEV_ROOTS)
        ]
        if "__init__.py" in files or any(is_data(f) for f in files):
            found[".".join(("ablate", *here.relative_to(REPO).parts))] = here
    return found


def test_the_package_list_is_the_folders_that_hold_code_or_data() -> None:
    assert SETUPTOOLS["package-dir"] == {"ablate": "."}
    listed = SETUPTOOLS["packages"]
    assert len(listed) == len(set(listed)), "a package is listed twice"
    found = package_folders()
    missing = sorted(set(found) - set(listed))
    stale = sorted(set(listed) - set(found))
    assert not missing, f"folders with code or YAML that pyproject.toml's packages leave out: {missing}"
    assert not stale, f"pyproject.toml lists packages with no folder of code or YAML: {stale}"


def test_the_package_data_globs_match_every_shipped_yaml() -> None:
    data = SETUPTOOLS["package-data"]
    folders = package_folders()
    unlisted = sorted(set(data) - set(SETUPTOOLS["packages"]))
    assert not unlisted, f"package-data names packages that pyproject.toml does not list: {unlisted}"
    unmatched, unused = [], []
    for package, folder in folders.items():
        globs = [*data.get("", []), *data.get(package, [])]
        files = sorted(f.name for f in folder.iterdir() if f.is_file())
        unmatched += [
            f"{folder.relative_to(REPO)}/{f}" for f in files if is_data(f) and not matches(f, globs)
        ]
        unused += [
            f"{package}: {g}" for g in data.get(package, []) if not any(matches(f, [g]) for f in files)
        ]
    assert not unmatched, f"YAML files that no package-data glob ships: {unmatched}"
    assert not unused, f"package-data globs that match no file: {unused}"
    configs = [p for p in (REPO / "experiments" / "configs").rglob("*") if is_data(p.name)]
    assert configs, "experiments/configs/ holds no YAML: the check above checked nothing"


def pins() -> dict[str, str]:
    """constraints.txt as {canonical name: version}; every line that is not a comment is ``name==version``."""
    out = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][\w.-]*)==([\w.+!-]+)", line.strip())
        assert match, f"constraints.txt: {line!r} is not an exact pin (name==version)"
        out[canonicalize_name(match[1])] = match[2]
    return out


def test_constraints_pin_every_dependency_inside_its_range() -> None:
    """A dependency added to pyproject.toml without regenerating constraints.txt, or a range that
    no longer admits its pin, fails here (constraints.txt says how to regenerate it)."""
    pinned = pins()
    project = PYPROJECT["project"]
    wrong = []
    for text in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        req = Requirement(text)
        version = pinned.get(canonicalize_name(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            wrong.append(f"{req} (pinned: {version})")
    assert not wrong, f"constraints.txt does not pin these inside pyproject.toml's ranges: {wrong}"


def test_bootstraps_default_torch_is_the_pinned_one() -> None:
    """bootstrap.sh installs ``torch==X`` first and alone (also with no constraints file): the same X."""
    default = re.search(r"TORCH_SPEC:-torch==([\w.+]+)\}", (REPO / "bootstrap.sh").read_text())
    assert default, "bootstrap.sh lost its default TORCH_SPEC"
    assert pins()["torch"] == default[1]


def test_the_license_file_is_the_declared_license() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 The ablate developers" in text
