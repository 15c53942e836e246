"""The wheel setuptools builds from this checkout, read as an archive: built without a warning, it
holds every listed package's modules and every shipped YAML file, nothing from the development
folders, and the LICENSE in its metadata. (tests/e2e/test_wheel.py installs a wheel and runs it.)

The build calls setuptools' backend directly (what ``pip wheel --no-build-isolation`` runs, without
pip's own output) from a copy of the checkout's tracked and unignored files, so that nothing is
written into the checkout and no stale build/ folder leaks into the wheel.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from tests.helpers.paths import REPO

BUILD = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """(setuptools' output, the wheel's file names)."""
    root = tmp_path_factory.mktemp("packaging")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        if (REPO / rel).is_file():
            (root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, root / "src" / rel)
    (root / "dist").mkdir()
    # PYTHONDONTWRITEBYTECODE makes build_py warn that it skips byte-compiling: not the project's.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONDONTWRITEBYTECODE", "PYTHONPATH"}}
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(root / "dist")],
        cwd=root / "src",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (wheel,) = (root / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        return out.stdout + out.stderr, z.namelist()


def test_setuptools_builds_the_wheel_without_a_warning(built: tuple[str, list[str]]) -> None:
    output, _ = built
    warnings = [line for line in output.splitlines() if "warn" in line.lower()]
    assert not warnings, "\n".join(warnings)


def test_the_wheel_holds_every_listed_package_and_its_data(built: tuple[str, list[str]]) -> None:
    """Every module of every listed package and every file its package-data globs name (the list
    against the tree: tests/unit/test_packaging.py)."""
    _, names = built
    expected = set()
    for package in SETUPTOOLS["packages"]:
        parts = package.split(".")[1:]
        folder = REPO.joinpath(*parts)
        globs = SETUPTOOLS["package-data"].get(package, [])
        shipped = [
            f.name
            for f in folder.iterdir()
            if f.suffix == ".py" or any(fnmatch.fnmatch(f.name, g) for g in globs)
        ]
        expected |= {"/".join(("ablate", *parts, name)) for name in shipped}
    missing = sorted(expected - set(names))
    assert not missing, f"files of the tree the wheel leaves out: {missing}"
    assert any(n.startswith("ablate/experiments/configs/presets/") and n.endswith(".yaml") for n in names)


def test_the_wheel_ships_nothing_of_the_development_folders(built: tuple[str, list[str]]) -> None:
    _, names = built
    tops = {n.split("/")[0] for n in names}
    assert tops == {"ablate", "transformer_ablate-0.1.0.dist-info"}
    dev_folders = {"tests", "docs", "examples", "results", "runs", "wandb", "build", "lightning_logs"}
    dev = sorted(n for n in names if n.split("/")[1] in dev_folders)
    assert not dev, f"development files in the wheel: {dev}"


def test_the_wheel_carries_the_license(built: tuple[str, list[str]]) -> None:
    _, names = built
    assert "transformer_ablate-0.1.0.dist-info/licenses/LICENSE" in names
