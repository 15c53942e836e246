"""The shipped configs, presets and README stay in step with the code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ablate.cli.commands import PRESETS, load_preset
from ablate.experiments.config import SECTIONS
from ablate.experiments.loading import load_config
from ablate.experiments.spec import load_spec

REPO = Path(__file__).resolve().parents[1]


def test_readme_lists_every_config_key() -> None:
    readme = (REPO / "README.md").read_text()
    keys = [f"{name}.{f.name}" for name, cls in SECTIONS.items() for f in dataclasses.fields(cls)]
    missing = [k for k in keys if f"`{k}`" not in readme]
    assert not missing, f"README config reference lacks {missing}"


@pytest.mark.parametrize("path", sorted((REPO / "experiments").glob("*.yaml")), ids=lambda p: p.name)
def test_example_configs_load(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.trainer.max_steps >= 100


@pytest.mark.parametrize("name", sorted(p.stem for p in PRESETS.glob("*.yaml")))
@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_presets_validate(name: str, profile: str) -> None:
    preset = load_preset(name)
    assert preset["description"]
    for rel in preset["experiments"]:
        spec = load_spec(REPO / "experiments" / rel, profile=profile)
        assert len(spec.seeds) >= 5 and spec.baseline == "baseline"
        # Single-head vs multi-head keeps d_model fixed.
        widths = {spec.cell_config(v, 0).model.d_model for v in spec.variants}
        assert len(widths) == 1


def test_remove_pe_single_head_covers_three_data_sets() -> None:
    specs = [
        load_spec(REPO / "experiments" / p, profile="cpu")
        for p in load_preset("remove-pe-single-head")["experiments"]
    ]
    assert [s.base.data.task for s in specs] == ["order", "lookup", "text"]
    for s in specs:
        assert s.variants == {
            "baseline": {},
            "no_pe": {"model.pe": "none"},
            "single_head": {"model.n_heads": 1},
        }


@pytest.mark.slow
def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's Python API example, run as it is (from a folder where its relative paths hold)."""
    import ablate

    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- python-example -->\n```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "experiments").symlink_to(REPO / "experiments")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md (python-example)", "exec"), namespace)  # noqa: S102
    summary = ablate.load_summary(tmp_path / "runs" / "order-api")
    assert set(summary["variants"]) == {"baseline", "no_pe", "single_head"}
    assert summary["cells"]["complete"] == summary["cells"]["total"] == 15
    assert 0.0 <= namespace["result"].metrics["test/acc"] <= 1.0  # type: ignore[attr-defined]
    with pytest.raises(ablate.ConfigError, match="summary.json not found"):
        ablate.load_summary(tmp_path)


def test_import_ablate_is_cheap_and_exports_the_api() -> None:
    import subprocess
    import sys

    code = "import sys, ablate; print('torch' in sys.modules); print(sorted(ablate.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lazy, names = out.splitlines()
    assert lazy == "False"  # nothing heavy on `import ablate`
    assert "sweep" in names and "run_trial" in names and "load_summary" in names
