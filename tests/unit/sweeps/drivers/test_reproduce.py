"""``ablate reproduce``: the main job's glue, on a preset of two tiny experiments (each sweep,
then the table across tasks), and its refusal before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ablate import cli
from ablate.experiments.specs import presets
from tests.helpers.configs import TINY_BASE


def tiny_preset(root: Path, *, second_base: dict | None = None) -> Path:
    """``root/experiments``: presets/tiny.yaml running tiny-a and tiny-b (order task, lengths 7
    and 6), each baseline vs no_pe on 2 seeds, with a cpu profile like the shipped specs'."""
    experiments = root / "experiments"
    (experiments / "presets").mkdir(parents=True)
    for name, length in (("tiny-a", 7), ("tiny-b", 6)):
        data = {**TINY_BASE["data"], "min_len": length, "max_len": length}
        base = second_base if (second_base is not None and name == "tiny-b") else {**TINY_BASE, "data": data}
        spec = {
            "name": name,
            "base": base,
            "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
            "seeds": 2,
            "heatmap_seeds": [0],
            "profiles": {"cpu": {"trainer.max_steps": 3}},
        }
        (experiments / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    preset = {"description": "two tiny tasks", "experiments": ["tiny-a.yaml", "tiny-b.yaml"]}
    (experiments / "presets" / "tiny.yaml").write_text(yaml.safe_dump(preset))
    return experiments


def use_experiments(monkeypatch: pytest.MonkeyPatch, experiments: Path) -> None:
    monkeypatch.setattr(presets, "CONFIGS", experiments)
    monkeypatch.setattr(presets, "PRESETS", experiments / "presets")


def test_reproduce_checks_every_experiment_before_running_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad second spec stops the preset before the first one's sweep writes anything."""
    bad = {**TINY_BASE, "model": {**TINY_BASE["model"], "n_heads": 3}}  # d_model 16 % 3 != 0
    use_experiments(monkeypatch, tiny_preset(tmp_path, second_base=bad))
    out = tmp_path / "runs"
    args = ["reproduce", "tiny", "--profile", "cpu", "--no-wandb", "--runs", str(out)]
    assert cli.main(args) == cli.EXIT_USAGE
    assert "n_heads" in capsys.readouterr().err
    assert not out.exists()
