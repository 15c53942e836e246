"""The package as users get it: a wheel installed into a fresh virtual environment outside the repo.

The wheel is built from this checkout and installed with ``--no-deps`` into a new venv; the
dependencies come from the project's environment through a path entry (a ``.pth`` line, which adds
the folder to ``sys.path`` but runs none of its ``.pth`` hooks, so the repo's editable install of
``ablate`` stays invisible). Every command runs from an empty temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY_YAML

pytestmark = [pytest.mark.slow, pytest.mark.multiprocess]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["WANDB_MODE"] = "offline"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv with the wheel of this checkout installed."""
    root = tmp_path_factory.mktemp("wheel")
    # Build from a copy of the checkout (tracked and unignored files): an in-tree build would write
    # build/ into the checkout.
    tracked = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO).stdout.split(
        "\0"
    )
    for rel in filter(None, tracked):
        if (REPO / rel).is_file():
            (root / "ablate-src" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, root / "ablate-src" / rel)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    build = run([*pip_wheel, "-w", "dist", "./ablate-src"], root)
    assert build.returncode == 0, build.stderr
    (wheel,) = (root / "dist").glob("*.whl")
    venv.create(root / "env", with_pip=True)
    bin_dir = root / "env" / "bin"
    install = run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], root
    )
    assert install.returncode == 0, install.stderr
    purelib = run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root
    )
    Path(purelib.stdout.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return bin_dir


def test_the_wheel_installs_one_import_name(installed: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.metadata as m, ablate; "
        "tops = {p.parts[0] for p in m.files('transformer-ablate') if p.parts[0] != '..'}; "
        "print(sorted(tops)); print(ablate.__file__)"
    )
    out = run([str(installed / "python"), "-c", code], tmp_path)
    assert out.returncode == 0, out.stderr
    tops, where = out.stdout.splitlines()
    assert tops == "['ablate', 'transformer_ablate-0.1.0.dist-info']"
    assert str(REPO) not in where and "site-packages" in where  # the installed copy, not the checkout


def test_installed_ablate_lists_presets_and_runs_a_sweep(installed: Path, tmp_path: Path) -> None:
    listed = run([str(installed / "ablate"), "reproduce", "--list"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    for preset in ("remove-pe-single-head", "heads", "pe-type", "norm"):
        assert preset in listed.stdout
    # Every preset's experiments resolve inside the installed package (no repository files needed).
    code = (
        "from ablate.cli.commands import PRESETS, load_preset\n"
        "from ablate.experiments.spec import load_spec\n"
        "for p in sorted(PRESETS.glob('*.yaml')):\n"
        "    for rel in load_preset(p.stem)['experiments']:\n"
        "        load_spec(PRESETS.parent / rel, profile='cpu')\n"
        "print(PRESETS)\n"
    )
    specs = run([str(installed / "python"), "-c", code], tmp_path)
    assert specs.returncode == 0, specs.stderr
    assert "site-packages" in specs.stdout
    (tmp_path / "tiny.yaml").write_text(
        "name: tiny\nbase: base.yaml\nvariants: {baseline: {}, no_pe: {model.pe: none}}\nseeds: 2\n"
    )
    (tmp_path / "base.yaml").write_text(TINY_YAML)
    swept = run([str(installed / "ablate"), "sweep", "tiny.yaml", "--no-wandb", "--out", "runs"], tmp_path)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert (tmp_path / "runs" / "tiny" / "summary.json").is_file()
    assert "4/4 cells complete" in swept.stdout + swept.stderr
