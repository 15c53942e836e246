"""A component whose ``__init__`` raises (experiments/runner/building.py), or whose ``check(cfg)``
raises something else than a ConfigError (registry.check_config): one line naming it (kind, config
key, name, class and file), where it raised and the error, exit 2 in ``ablate train`` (for one seed
and for a seed-parallel stack) and ``ablate sweep``; an error outside every component's code stays
as it is."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ablate.cli.parser import main
from ablate.errors import ConfigError
from ablate.experiments.runner.building import build_model
from ablate.experiments.schema.config import TrainConfig
from ablate.lit_modules.model.kinds import TABLES
from ablate.lit_modules.systems.classifier import LitClassifier
from tests.helpers.configs import TINY_YAML

PLUGIN = """
from torch import nn
from ablate import components

@components.register("norm", "{name}")
class Fragile(nn.LayerNorm):
    def __init__(self, cfg):
        super().__init__(cfg.d_model)
        raise RuntimeError("the shared disk is read-only")


@components.register("norm", "{name}_picky")
class Picky(nn.LayerNorm):
    @classmethod
    def check(cls, cfg):
        if cfg.d_model % 32:
            raise ValueError(f"d_model must be a multiple of 32, got {{cfg.d_model}}")

    def __init__(self, cfg):
        super().__init__(cfg.d_model)
"""
_names = (f"fragile_norm_{i}" for i in itertools.count())  # the registry is global: one per test


@pytest.fixture(autouse=True)
def unregistered() -> Iterator[None]:
    """Each test's norm leaves the registry after it: later tests list the registered norms."""
    yield
    for name in [n for n in TABLES["norm"] if n.startswith("fragile_norm_")]:
        del TABLES["norm"][name]


def fragile(tmp_path: Path) -> tuple[Path, dict]:
    """The plugin ``tmp_path/fragile.py`` and a tiny train config whose norm is its component."""
    name = next(_names)
    plugin = tmp_path / "fragile.py"
    plugin.write_text(PLUGIN.format(name=name))
    raw = yaml.safe_load(TINY_YAML)
    raw["model"]["norm_layer"] = name
    return plugin, {**raw, "plugins": [str(plugin)]}


@pytest.mark.parametrize("seed_parallel", [1, 2])
def test_ablate_train_names_the_component_whose_init_raised_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed_parallel: int
) -> None:
    plugin, raw = fragile(tmp_path)
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(raw))
    args = ["train", str(tmp_path / "train.yaml"), f"trainer.seed_parallel={seed_parallel}"]
    assert main([*args, "--out", str(tmp_path / "out"), "--no-checkpoint"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert (
        f"the norm component model.norm_layer={raw['model']['norm_layer']!r} (class Fragile of {plugin})"
        in line
    )
    assert "failed to build: RuntimeError: the shared disk is read-only" in line
    assert f"(raised at {plugin}:9)" in line
    assert not (tmp_path / "out").exists()


def test_an_error_outside_the_components_is_raised_as_it_is(tmp_path: Path) -> None:
    _, raw = fragile(tmp_path)
    cfg = TrainConfig.from_dict(raw)
    with pytest.raises(ZeroDivisionError):
        build_model(cfg.model, lambda: 1 / 0)
    with pytest.raises(ConfigError, match="the norm component .* failed to build: RuntimeError"):
        build_model(
            cfg.model,
            lambda: LitClassifier(cfg.model, cfg.optim, vocab_size=8, n_classes=2, max_steps=1, seed=0),
        )


def test_a_check_that_raises_a_value_error_is_one_line_exit_2_in_train_and_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin, raw = fragile(tmp_path)
    picky = raw["model"]["norm_layer"] + "_picky"
    raw["model"]["norm_layer"] = picky
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(raw))
    spec = {
        "name": "picky",
        "base": {k: v for k, v in raw.items() if k not in ("plugins", "seed")},
        "plugins": [str(plugin)],
        "variants": {"baseline": {}, "wide": {"model.d_model": 32}},
        "seeds": 2,
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    commands = [
        ["train", str(tmp_path / "train.yaml"), "--out", str(tmp_path / "out"), "--no-checkpoint"],
        ["sweep", str(tmp_path / "spec.yaml"), "--runs", str(tmp_path / "runs"), "--no-wandb"],
    ]
    for args in commands:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert "Traceback" not in err
        (line,) = [x for x in err.splitlines() if x.startswith("error:")]
        assert f"the norm component model.norm_layer={picky!r} (class Picky of {plugin})" in line
        assert "rejected the config: ValueError: d_model must be a multiple of 32, got 16" in line
        assert f"(raised at {plugin}:17)" in line
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "runs").exists()
