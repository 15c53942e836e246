"""The package as users get it: a wheel installed into a fresh virtual environment outside the repo.

The wheel is built from this checkout and installed with ``--no-deps`` into a new venv; the
dependencies come from the project's environment through a path entry (a ``.pth`` line, which adds
the folder to ``sys.path`` but runs none of its ``.pth`` hooks, so the repo's editable install of
``ablate`` stays invisible). Every command runs from an empty temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.helpers.configs import TINY_YAML
from tests.helpers.paths import REPO
from tests.helpers.readme import assert_printed, quoted_verdicts, run_numerics

pytestmark = [pytest.mark.multiprocess]


def run(
    cmd: list[str], cwd: Path, bin_first: Path | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``cmd`` in ``cwd``, offline, with ``bin_first`` (a venv's bin) first on PATH if given."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(extra_env or {})
    env["WANDB_MODE"] = "offline"
    if bin_first is not None:
        env["PATH"] = f"{bin_first}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def readme_block(marker: str, fence: str) -> str:
    """The code of the README block under ``<!-- marker -->`` (a ``fence`` code block)."""
    readme = (REPO / "README.md").read_text()
    head = f"<!-- {marker} -->\n```{fence}\n"
    assert head in readme, f"README.md lost its <!-- {marker} --> block"
    return readme.split(head, 1)[1].split("```", 1)[0]


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
        "from ablate.experiments.specs.presets import PRESETS, load_preset\n"
        "from ablate.experiments.specs.spec_file import load_spec\n"
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
    swept = run([str(installed / "ablate"), "sweep", "tiny.yaml", "--no-wandb", "--runs", "runs"], tmp_path)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert (tmp_path / "runs" / "tiny" / "summary.json").is_file()
    assert "4/4 cells complete" in swept.stdout + swept.stderr


def test_the_readme_quickstart_runs_in_an_empty_folder(installed: Path, tmp_path: Path) -> None:
    """The README's <!-- quickstart --> block, as a user types it after ``pip install`` (the wheel
    is installed already, so its leading pip line goes), with the venv's ``ablate`` on PATH."""
    lines = readme_block("quickstart", "bash").splitlines()
    while lines and lines[0].startswith("pip install"):
        lines.pop(0)
    assert not any(line.startswith("pip ") for line in lines), "the quickstart installs something else"
    (tmp_path / "quickstart.sh").write_text("\n".join(lines) + "\n")
    ran = run(["bash", "-e", "-o", "pipefail", "quickstart.sh"], tmp_path, bin_first=installed)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    summary = json.loads((tmp_path / "runs" / "quickstart" / "summary.json").read_text())
    assert summary["cells"]["complete"] == summary["cells"]["total"] == 12
    assert summary["variants"]["no_pe"]["median"] == 0.5  # no position signal: chance, as the README says
    assert summary["variants"]["no_pe"]["p_holm"] <= 0.05  # a first result that decides
    # the sweep says it on stderr
    assert_printed(quoted_verdicts("quickstart-verdict"), ran.stdout + ran.stderr, run_numerics(summary))
    assert (tmp_path / "runs" / "first-train" / "metrics.json").is_file()


def test_the_readme_python_example_runs_in_an_empty_folder(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "example.py").write_text(readme_block("python-example", "python"))
    ran = run([str(installed / "python"), "example.py"], tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    summary = json.loads((tmp_path / "runs" / "order-api" / "summary.json").read_text())
    assert summary["cells"]["complete"] == summary["cells"]["total"] == 21
    assert_printed(quoted_verdicts("python-example-verdict"), ran.stdout, run_numerics(summary))


def test_a_plugin_norm_sweeps_from_an_empty_folder(installed: Path, tmp_path: Path) -> None:
    """The shipped example plugin (examples/scalenorm.py) in an empty folder with only the installed
    package: it passes check-component, runs as a variant in a 2-worker sweep and with --launcher
    local (its workers import it by path), the study records its hash, and a changed plugin stops
    the study from resuming, naming the change."""
    import json

    import yaml

    shutil.copy(REPO / "examples" / "scalenorm.py", tmp_path / "scalenorm.py")
    base = yaml.safe_load(TINY_YAML)
    for name in ("plug", "plug-local"):
        spec = {
            "name": name,
            "plugins": ["scalenorm.py"],
            "base": base,
            "variants": {"baseline": {}, "scalenorm": {"model.norm_layer": "scalenorm"}},
            "seeds": 2,
        }
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    ablate = str(installed / "ablate")
    checked = run([ablate, "check-component", "norm", "scalenorm", "--plugins", "scalenorm.py"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "every contract holds" in checked.stderr and "FAIL" not in checked.stdout

    for name, extra in (
        ("plug", ["--workers", "2"]),
        ("plug-local", ["--launcher", "local", "--workers", "2"]),
    ):
        swept = run([ablate, "sweep", f"{name}.yaml", "--no-wandb", "--runs", "runs", *extra], tmp_path)
        assert swept.returncode == 0, swept.stdout + swept.stderr
        assert "4/4 cells complete" in swept.stdout + swept.stderr
        summary = json.loads((tmp_path / "runs" / name / "summary.json").read_text())
        (recorded,) = summary["provenance"]["plugins"]
        assert recorded["name"] == recorded["file"] == str(tmp_path / "scalenorm.py")
        assert recorded["sha256"] is not None and summary["variants"]["scalenorm"]["n"] == 2
        spec_json = json.loads((tmp_path / "runs" / name / "spec.json").read_text())
        assert spec_json["plugin_sources"] == {str(tmp_path / "scalenorm.py"): recorded["sha256"]}

    # The W&B agent's command: one cell of the spec, the plugin imported from the spec's plugins:.
    agent = run(
        [ablate, "train", "--spec", "plug.yaml", "variant=scalenorm", "seed=1", "--out", "agent"], tmp_path
    )
    assert agent.returncode == 0, agent.stdout + agent.stderr
    assert (
        yaml.safe_load((tmp_path / "agent" / "config.yaml").read_text())["model"]["norm_layer"] == "scalenorm"
    )

    # An edit of its code (one of a comment or docstring would resume: plugins.code_hash).
    (tmp_path / "scalenorm.py").write_text((tmp_path / "scalenorm.py").read_text() + "\nEDITED = True\n")
    again = run([ablate, "sweep", "plug.yaml", "--no-wandb", "--runs", "runs"], tmp_path)
    assert again.returncode == 2, again.stdout + again.stderr
    assert f"plugin_sources.{tmp_path / 'scalenorm.py'}" in " ".join(again.stderr.split())


def test_the_shipped_sst2_spec_by_name_with_the_hub_unreachable_is_one_error(
    installed: Path, tmp_path: Path
) -> None:
    """Installed, the shipped SST-2 spec has no ../shared/data beside it: its hub fallback is used,
    and with the hub unreachable the sweep exits 2 in seconds, one message, nothing written."""
    import time

    offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "XDG_CACHE_HOME": str(tmp_path / "x")}
    start = time.monotonic()
    ran = run(
        [str(installed / "ablate"), "sweep", "remove-pe-single-head-sst2", "--no-wandb"],
        tmp_path,
        extra_env=offline,
    )
    took = time.monotonic() - start
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert took < 60
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "stanfordnlp/sst2" in errors[0], ran.stderr
    assert "using the shipped experiment spec" in ran.stderr and "site-packages" in ran.stderr
    assert {p.name for p in tmp_path.iterdir()} <= {"hf", "x"}  # no run folder, no study
