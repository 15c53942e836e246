"""W&B sweeps: the generated sweep configuration, and the command line the agent runs.

No W&B server is reachable here, so the agent itself cannot run: the tests
expand the sweep's command with W&B's own expansion of ``${args_no_hyphens}``
and run it as ``wandb agent`` would, with W&B offline.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from wandb.sdk.launch.sweeps.utils import create_sweep_command_args

from ablate.cli.parser import main
from ablate.experiments.specs.spec import cell_from_args
from ablate.experiments.specs.spec_file import load_spec
from ablate.sweeps.integrations.wandb_sweep import sweep_config
from tests.helpers.configs import TINY_YAML

SEARCH = {
    "space": {
        "optim.lr": {"low": 1e-4, "high": 1e-2, "log": True},
        "optim.warmup_ratio": {"low": 0.0, "high": 0.2},
        "model.d_ff": {"low": 16, "high": 64, "log": True},
        "model.n_layers": {"low": 1, "high": 2},
        "model.pool": {"choices": ["cls", "mean"]},
    },
    "metric": "val/loss",
    "pruner": "hyperband",
    "min_resource": 2,
    "reduction_factor": 4,
}


def write_spec(tmp_path: Path, **extra: object) -> Path:
    base = yaml.safe_load(TINY_YAML)
    base["trainer"]["val_every"] = 2
    spec = {
        "name": "tiny",
        "base": base,
        "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}, "post_ln": {"model.norm": "post"}},
        "seeds": [0, 1],
        "profiles": {"cpu": {"trainer.max_steps": 3}},
        **extra,
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_grid_yaml_is_the_ablation_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_spec(tmp_path, search=SEARCH)
    assert main(["wandb-sweep", str(path), "--profile", "cpu", "optim.lr=0.002"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    spec = load_spec(path, ["optim.lr=0.002"], profile="cpu")
    expected = sweep_config(spec, str(path), method="grid", profile="cpu", overrides=["optim.lr=0.002"])
    assert printed == expected
    assert printed["method"] == "grid" and printed["name"] == "tiny"
    assert printed["metric"] == {"name": "test/acc", "goal": "maximize"}
    # Grid = variants x seeds: the search space and its pruner are not part of it.
    assert printed["parameters"] == {
        "variant": {"values": ["baseline", "no_pe", "post_ln"]},
        "seed": {"values": [0, 1]},
    }
    assert "early_terminate" not in printed
    command = printed["command"]
    assert command[:8] == ["${env}", "${interpreter}", "-P", "-m", "ablate", "train", "--spec", str(path)]
    assert command[8:] == ["--profile", "cpu", "--no-progress", "optim.lr=0.002", "${args_no_hyphens}"]


@pytest.mark.parametrize("method", ["random", "bayes"])
def test_random_and_bayes_tune_the_search_block(tmp_path: Path, method: str) -> None:
    spec = load_spec(write_spec(tmp_path, search=SEARCH))
    config = sweep_config(spec, "tiny.yaml", method=method, profile=None, overrides=[])
    assert config["method"] == method
    assert config["metric"] == {"name": "val/loss", "goal": "minimize"}  # tune on validation
    assert config["parameters"] == {
        "variant": {"values": ["baseline", "no_pe", "post_ln"]},
        "seed": {"values": [0, 1]},
        "optim.lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2},
        "optim.warmup_ratio": {"distribution": "uniform", "min": 0.0, "max": 0.2},
        "model.d_ff": {"distribution": "q_log_uniform_values", "min": 16, "max": 64, "q": 1},
        "model.n_layers": {"distribution": "int_uniform", "min": 1, "max": 2},
        "model.pool": {"values": ["cls", "mean"]},
    }
    assert config["early_terminate"] == {"type": "hyperband", "min_iter": 2, "eta": 4}
    assert yaml.safe_load(yaml.safe_dump(config, sort_keys=False)) == config


@pytest.mark.parametrize(
    ("pruner", "expected"),
    [("median", {"type": "hyperband", "min_iter": 4, "eta": 2}), ("none", None)],
)
def test_other_pruners(tmp_path: Path, pruner: str, expected: dict | None) -> None:
    search = {**SEARCH, "pruner": pruner, "n_warmup_steps": 3}
    spec = load_spec(write_spec(tmp_path, search=search))
    config = sweep_config(spec, "tiny.yaml", method="random", profile=None, overrides=[])
    assert config.get("early_terminate") == expected


def test_choices_read_back_after_the_agent_writes_them(tmp_path: Path) -> None:
    """W&B writes ``str(value)``: None and YAML-1.1 words must still arrive as themselves."""
    space = {"data.cache_dir": {"choices": [None]}, "data.text_column": {"choices": ["off", "on"]}}
    search = {"space": {**space, "optim.eps": {"choices": [1e-5]}}}
    spec = load_spec(write_spec(tmp_path, search=search))
    params = sweep_config(spec, "tiny.yaml", method="random", profile=None, overrides=[])["parameters"]
    assert params["data.cache_dir"] == {"values": ["null"]}
    assert params["data.text_column"] == {"values": ['"off"', '"on"']}
    for wire, column in zip(params["data.text_column"]["values"], ["off", "on"], strict=True):
        drawn = {"variant": "no_pe", "seed": 1, "data.cache_dir": "null", "data.text_column": wire}
        drawn["optim.eps"] = 1e-5
        argv = create_sweep_command_args({"args": {k: {"value": v} for k, v in drawn.items()}})
        assert "optim.eps=1e-05" in argv["args_no_hyphens"]  # str(1e-5): a string to YAML 1.1
        _, _, cfg = cell_from_args(spec, argv["args_no_hyphens"])
        assert (cfg.data.cache_dir, cfg.data.text_column, cfg.optim.eps) == (None, column, 1e-5)
        assert (cfg.model.pe, cfg.seed) == ("none", 1)


def test_variant_keeps_its_own_keys(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    spec = load_spec(write_spec(tmp_path))
    with caplog.at_level("WARNING", logger="ablate"):
        variant, seed, cfg = cell_from_args(spec, ["variant=no_pe", "model.pe=learned", "model.d_ff=48"])
    assert (variant, seed, cfg.model.pe, cfg.model.d_ff) == ("no_pe", 0, "none", 48)  # default: first seed
    assert "variant no_pe sets model.pe" in caplog.text  # a log record: the CLI prints it


def test_random_without_search_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wandb-sweep", str(write_spec(tmp_path)), "--method", "bayes"]) == 2
    assert "has none; use --method grid" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "variant=NAME is required with tiny; choose one of baseline, no_pe, post_ln"),
        (["variant=nope"], "no variant 'nope' in tiny; choose one of baseline, no_pe, post_ln"),
        (["variant=no_pe", "seed=x"], "seed='x' must be an integer"),
        (["variant=no_pe", "model.bogus=1"], "unknown config key 'model.bogus'"),
    ],
)
def test_train_spec_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    out = tmp_path / "out"
    assert main(["train", "--spec", str(write_spec(tmp_path)), *args, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_train_needs_config_or_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train"]) == 2
    assert "needs a train CONFIG.yaml, or --spec" in capsys.readouterr().err
    path = write_spec(tmp_path)
    assert main(["train", str(path), "--spec", str(path), "variant=no_pe"]) == 2
    assert "not both" in capsys.readouterr().err
