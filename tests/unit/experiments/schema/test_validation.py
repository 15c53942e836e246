"""The validation rules of configs and experiment specs, each tested as a rule over every field or
place it covers: numeric ranges, YAML types, paths relative to the file that names them, trainer
options this machine cannot honour, and overrides given twice."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError, Range, numeric_fields
from ablate.experiments.schema.config import SECTIONS, SEED_RANGE, TrainConfig, TrainerConfig
from ablate.experiments.schema.parsing import parse_overrides
from ablate.experiments.schema.seeds import MAX_SEEDS
from ablate.experiments.specs.loading import load_config, read_yaml
from ablate.experiments.specs.spec_file import load_spec, spec_from_dict
from ablate.lit_modules.model.config import ModelConfig, OptimConfig
from tests.helpers.configs import TINY_BASE, TINY_YAML
from tests.helpers.forked import run_forked
from tests.helpers.paths import REPO

CONFIG_CLASSES = [ModelConfig, OptimConfig, DataConfig, TrainerConfig, TrainConfig]
VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}}
RAW = {"name": "t", "base": TINY_BASE, "variants": VARIANTS}


# --- every numeric field has a range ----------------------------------------------------------


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda c: c.__name__)
def test_every_numeric_field_has_a_range(cls: type) -> None:
    ranges = getattr(cls, "RANGES", {})
    assert sorted(set(numeric_fields(cls)) - set(ranges)) == [], f"{cls.__name__} lacks a Range"
    assert set(ranges) <= {f.name for f in dataclasses.fields(cls)}, "a Range for no field"
    assert all(isinstance(r, Range) and math.isfinite(r.hi) for r in ranges.values()), "no upper bound"


def _numeric_keys() -> list:
    """(dotted key, its Range, its type) for every numeric field of a train config."""
    out = [pytest.param("seed", getattr(TrainConfig, "RANGES", {}).get("seed"), int, id="seed")]
    for section, cls in SECTIONS.items():
        hints = {f.name: f.type for f in dataclasses.fields(cls)}
        for name in numeric_fields(cls):
            kind = float if "float" in str(hints[name]) else int
            key = f"{section}.{name}"
            out.append(pytest.param(key, getattr(cls, "RANGES", {}).get(name), kind, id=key))
    return out


def _outside(r: Range, kind: type) -> list[float]:
    """Values just outside ``r`` on each side, and far outside (negative, huge)."""
    below = r.lo if r.lo_open else r.lo - (1 if kind is int else 1e-3)
    above = r.hi if r.hi_open else r.hi + (1 if kind is int else 1e-3)
    values = [below, above, -(10**12), 10**15]
    return [kind(v) for v in values]


@pytest.mark.parametrize(("key", "interval", "kind"), _numeric_keys())
def test_out_of_range_numbers_name_the_interval(key: str, interval: Range | None, kind: type) -> None:
    assert interval is not None, f"{key} has no Range"
    for value in _outside(interval, kind):
        with pytest.raises(ConfigError) as err:
            TrainConfig().override({key: value})
        message = str(err.value)
        assert f"{key}={value!r}" in message, message
        if key == "trainer.devices" and value > 1:
            assert "one device" in message and "DDP" in message
        else:
            assert f"valid: {interval}" in message, message


@pytest.mark.parametrize(("key", "interval", "kind"), _numeric_keys())
def test_inf_and_nan_are_refused(key: str, interval: Range | None, kind: type) -> None:
    for text in (".inf", "-.inf", ".nan"):
        with pytest.raises(ConfigError) as err:
            TrainConfig().override([f"{key}={text}"])
        message = str(err.value)
        assert key in message
        expected = f"valid: {interval}" if kind is float else "expected int"
        assert expected in message, message


def test_seeds_are_unsigned_32_bit() -> None:
    assert (SEED_RANGE.lo, SEED_RANGE.hi) == (0, 2**32 - 1)
    assert TrainConfig().override({"seed": 2**32 - 1}).seed == 2**32 - 1
    for seed in (-1, 2**32):
        with pytest.raises(ConfigError, match=rf"seed={seed} is out of range; valid: \[0, "):
            TrainConfig().override({"seed": seed})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seeds": 0}, "seeds=0 is out of range; valid: [1, "),
        ({"seeds": 10**9}, "seeds=1000000000 is out of range"),
        ({"seeds": [0, -1]}, "seeds[1]=-1 is out of range; valid: [0, "),
        ({"seeds": [2**32]}, "seeds[0]=4294967296 is out of range"),
        ({"seeds": [0, 1.5]}, "seeds[1]=1.5 has the wrong type; expected int"),
        ({"seeds": [True]}, "seeds[0]=True has the wrong type"),
        ({"seeds": list(range(MAX_SEEDS + 1))}, f"at most {MAX_SEEDS}"),
        ({"heatmap_seeds": [-1]}, "heatmap_seeds[0]=-1 is out of range"),
        ({"seeds": {"min": 2, "max": 10**6, "step": 1}}, "seeds.max=1000000 is out of range; valid: [1, "),
        ({"seeds": {"min": 2, "max": 4, "step": 1.5}}, "seeds.step=1.5 has the wrong type"),
        (
            {"seeds": {"min": 2, "max": 4, "step": 1, "stop": "ci_width", "width": math.nan}},
            "seeds.width=nan",
        ),
        (
            {"seeds": {"min": 2, "max": 4, "step": 1, "stop": "ci_width", "width": math.inf}},
            "seeds.width=inf",
        ),
        ({"seeds": {"min": 2, "max": 4, "step": 1, "stop": "ci_width", "width": -1}}, "seeds.width=-1"),
        ({"seed_factors": {"init": 10**6, "data_order": 2}}, "seed_factors.init=1000000 is out of range"),
        ({"seed_factors": {"init": 200, "data_order": 200}}, f"40000 seeds; valid: at most {MAX_SEEDS}"),
    ],
)
def test_spec_numbers_have_ranges(change: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        spec_from_dict({**RAW, **change})
    assert message in str(err.value)


SEARCH_BASE = {**TINY_BASE, "trainer": {**TINY_BASE["trainer"], "val_every": 1}}
LR = {"optim.lr": {"low": 1e-3, "high": 1e-2, "log": True}}


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"trials": 0}, "search.trials=0 is out of range; valid: [1, "),
        ({"trials": 10**9}, "search.trials=1000000000 is out of range"),
        ({"seed": -1}, "search.seed=-1 is out of range; valid: [0, "),
        ({"seed": 2**32}, "search.seed=4294967296 is out of range"),
        ({"reduction_factor": 1}, "search.reduction_factor=1 is out of range; valid: [2, 100]"),
        ({"n_warmup_steps": -1}, "search.n_warmup_steps=-1 is out of range"),
        ({"trials": 2.5}, "search.trials=2.5 has the wrong type; expected int"),
        ({"space": {"optim.lr": {"low": 1e-3, "high": math.inf}}}, "must be finite"),
        ({"space": {"optim.lr": {"low": math.nan, "high": 1e-2}}}, "must be finite"),
        ({"space": {"optim.eps": {"low": -1.0, "high": 1e-2}}}, "optim.eps=-1.0 is out of range"),
        ({"space": {"model.max_len": {"choices": [64, 10**9]}}}, "model.max_len=1000000000 is out of range"),
    ],
)
def test_search_numbers_have_ranges(search: dict, message: str) -> None:
    raw = {**RAW, "base": SEARCH_BASE, "search": {"space": LR, **search}}
    with pytest.raises(ConfigError) as err:
        spec_from_dict(raw)
    assert message in str(err.value)


# --- every YAML value has its type checked ----------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({1: 2}, "the experiment spec: keys must be strings, got the int key 1"),
        ({1: 2, "colour": 3}, "keys must be strings"),  # sorting mixed keys was a TypeError
        ({"overrides": [1, 2]}, "overrides must be a mapping (key: value), got list [1, 2]"),
        ({"overrides": ["model.pe=none"]}, "overrides must be a mapping (key: value), got list"),
        ({"overrides": "model.pe=none"}, "overrides must be a mapping (key: value), got str 'model.pe=none'"),
        ({"overrides": {1: 2}}, "overrides: keys must be strings, got the int key 1"),
        ({"overrides": 0}, "overrides must be a mapping (key: value), got int 0"),
        ({"variants": ["baseline", "no_pe"]}, "variants must be a mapping (key: value), got list"),
        (
            {"variants": {**VARIANTS, "x": ["model.n_heads=1"]}},
            "variant 'x' must be a mapping (key: value), got list",
        ),
        (
            {"variants": {**VARIANTS, "x": "model.n_heads=1"}},
            "variant 'x' must be a mapping (key: value), got str",
        ),
        ({"variants": {**VARIANTS, "x": 0}}, "variant 'x' must be a mapping (key: value), got int 0"),
        (
            {"variants": {**VARIANTS, 3: {"model.n_heads": 1}}},
            "variants: keys must be strings, got the int key 3",
        ),
        ({"profiles": ["cpu"]}, "profiles must be a mapping (key: value), got list ['cpu']"),
        ({"profiles": {"cpu": []}}, "profile 'cpu' must be a mapping (key: value), got list []"),
        (
            {"profiles": {"cpu": "trainer.max_steps=3"}},
            "profile 'cpu' must be a mapping (key: value), got str",
        ),
        (
            {"base": {**TINY_BASE, "optim": []}},
            "config section 'optim' must be a mapping (key: value), got list []",
        ),
        (
            {"base": {**TINY_BASE, "optim": 0}},
            "config section 'optim' must be a mapping (key: value), got int 0",
        ),
        (
            {"base": {**TINY_BASE, "optim": ""}},
            "config section 'optim' must be a mapping (key: value), got str",
        ),
        ({"base": {**TINY_BASE, "model": {1: 2}}}, "config section 'model': keys must be strings"),
        ({"base": {**TINY_BASE, 7: {}}}, "a train config: keys must be strings, got the int key 7"),
        ({"seeds": {"min": 2, 1: 3}}, "seeds: keys must be strings"),
        ({"seed_factors": [2, 2]}, "seed_factors must be a mapping (key: value), got list"),
        ({"search": {"space": {1: {"low": 1, "high": 2}}}}, "search.space: keys must be strings"),
        ({"search": []}, "search must be a mapping"),
        ({"tags": "a,b"}, "tags must be a list of strings"),
        ({"tags": [["a"]]}, "tags must be a list of strings"),
        ({"description": ["x"]}, "description must be a string, got list"),
        ({"wandb_project": 5}, "wandb_project must be a string, got int 5"),
    ],
)
def test_yaml_types_are_checked(change: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        spec_from_dict({**RAW, **change}, profile="cpu" if "profiles" in change else None)
    assert message in str(err.value)


def test_absent_and_empty_sections_are_the_defaults() -> None:
    """Absence and an empty mapping (or a key with no value) are the one way to say "defaults"."""
    for optim in ({}, None):
        assert TrainConfig.from_dict({**TINY_BASE, "optim": optim}).optim == OptimConfig()
    spec = spec_from_dict({**RAW, "variants": {"baseline": None, "no_pe": {"model.pe": "none"}}})
    assert spec.variants["baseline"] == {}


def test_override_items_must_be_strings() -> None:
    with pytest.raises(ConfigError, match="3 is not of the form key=value"):
        parse_overrides(["model.pe=none", 3])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="got str 'seed=1'"):
        parse_overrides("seed=1")  # type: ignore[arg-type]  (a string is not a list of items)


# --- an override given twice ------------------------------------------------------------------


def test_override_given_twice_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"seed is given twice \('seed=1' and ' seed =2'\)"):
        parse_overrides(["seed=1", "model.pe=none", " seed =2"], "the command line")
    with pytest.raises(ConfigError, match="model.pe is given twice"):
        spec_from_dict(RAW, overrides=["model.pe=none", "model.pe=rope"])


def test_yaml_keys_given_twice_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("name: t\nvariants:\n  baseline: {}\n  x: {model.pe: none, model.pe: rope}\n")
    with pytest.raises(ConfigError, match="duplicate key 'model.pe'"):
        read_yaml(path)
    path.write_text("{[1, 2]: 3}\n")  # an unhashable key: the loader's own message, not a TypeError
    with pytest.raises(ConfigError, match="cannot read YAML file"):
        read_yaml(path)
    with pytest.raises(ConfigError, match="is a folder, not a YAML file"):
        read_yaml(tmp_path)


# --- relative paths resolve against the file that names them ----------------------------------


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_relative_base_resolves_against_the_spec_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = {**TINY_BASE, "model": {**TINY_BASE["model"], "d_model": 16}}
    decoy = {**TINY_BASE, "model": {**TINY_BASE["model"], "d_model": 32}}
    spec = _write(tmp_path / "specs" / "spec.yaml", {**RAW, "base": "base.yaml"})
    _write(tmp_path / "specs" / "base.yaml", base)
    _write(tmp_path / "base.yaml", decoy)  # a file of the same name in the current folder
    monkeypatch.chdir(tmp_path)
    assert load_spec("specs/spec.yaml").base.model.d_model == 16
    (tmp_path / "specs" / "base.yaml").unlink()
    with pytest.raises(ConfigError, match=r"file not found: specs/base\.yaml"):
        load_spec(spec.relative_to(tmp_path))  # never falls back to ./base.yaml


TEXT = {"task": "text", "source": "data.csv", "cache_dir": "cache"}


def test_config_paths_resolve_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _write(tmp_path / "cfgs" / "c.yaml", {**TINY_BASE, "data": TEXT})
    _write(tmp_path / "cfgs" / "data.csv", "sentence,label\n")
    _write(tmp_path / "data.csv", "sentence,label\n")  # the decoy in the current folder
    monkeypatch.chdir(tmp_path)
    cfg = load_config("cfgs/c.yaml")
    assert cfg.data.source == str(tmp_path / "cfgs" / "data.csv")
    assert cfg.data.cache_dir == str(tmp_path / "cfgs" / "cache")
    # the command line's relative paths are relative to the current folder
    cfg = load_config(config, ["data.source=data.csv", "data.cache_dir=./c2"])
    assert (cfg.data.source, cfg.data.cache_dir) == (str(tmp_path / "data.csv"), str(tmp_path / "c2"))
    # a path that does not exist is still the file's (the data loader then says "not found"),
    # a hub name stays a hub name, and a written config.yaml holds absolute paths
    cfg = load_config(config, ["data.source=./missing.csv"])
    assert cfg.data.source == str(tmp_path / "missing.csv")
    cfg = load_config(config, ["data.source=stanfordnlp/sst2"])
    assert cfg.data.source == "stanfordnlp/sst2"
    again = _write(tmp_path / "elsewhere" / "config.yaml", load_config("cfgs/c.yaml").to_dict())
    assert load_config(again).data == load_config("cfgs/c.yaml").data


def test_spec_paths_resolve_against_the_file_that_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "cfgs" / "base.yaml", {**TINY_BASE, "data": TEXT})
    raw = {
        **RAW,
        "base": "../cfgs/base.yaml",
        "variants": {**VARIANTS, "other_data": {"data.source": "other.csv"}},
        "profiles": {"cpu": {"data.cache_dir": "pcache"}},
    }
    _write(tmp_path / "specs" / "spec.yaml", raw)
    monkeypatch.chdir(tmp_path)
    spec = load_spec("specs/spec.yaml", profile="cpu")
    assert spec.base.data.source == str(tmp_path / "cfgs" / "data.csv")  # the base file's folder
    assert spec.base.data.cache_dir == str(tmp_path / "specs" / "pcache")  # the spec's
    assert spec.variants["other_data"] == {"data.source": str(tmp_path / "specs" / "other.csv")}
    inline = load_spec(
        _write(tmp_path / "specs" / "inline.yaml", {**RAW, "base": {**TINY_BASE, "data": TEXT}})
    )
    assert inline.base.data.source == str(tmp_path / "specs" / "data.csv")


# --- trainer options this machine cannot honour -----------------------------------------------


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Pretend to be a machine: ``machine(cuda=..., mps=..., bf16=...)``."""

    def set_machine(*, cuda: bool = False, mps: bool = False, bf16: bool = True) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: bf16)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Tesla T4")

    return set_machine


def _check(**trainer: Any) -> None:
    TrainerConfig(**trainer).check_machine()


def test_absent_accelerators_are_refused(machine) -> None:  # noqa: ANN001
    machine()
    for accelerator, need in (
        ("gpu", "a CUDA GPU or Apple's MPS"),
        ("cuda", "a CUDA GPU"),
        ("mps", "Apple's MPS"),
    ):
        with pytest.raises(
            ConfigError, match=rf"trainer.accelerator='{accelerator}' needs {need}.*auto or cpu"
        ):
            _check(accelerator=accelerator)
    for accelerator in ("auto", "cpu"):
        _check(accelerator=accelerator)
    machine(cuda=True)
    _check(accelerator="gpu")
    _check(accelerator="cuda", precision="16-mixed")
    machine(mps=True)
    _check(accelerator="gpu")
    _check(accelerator="mps")


def test_precisions_the_device_lacks_are_refused(machine) -> None:  # noqa: ANN001
    machine()
    for accelerator in ("auto", "cpu"):  # Lightning would silently train in bf16-mixed
        with pytest.raises(ConfigError, match="trainer.precision='16-mixed' needs a GPU.*bf16-mixed"):
            _check(accelerator=accelerator, precision="16-mixed")
        for precision in ("32-true", "bf16-mixed", "bf16-true", "auto"):
            _check(accelerator=accelerator, precision=precision)
    machine(cuda=True, bf16=False)
    for precision in ("bf16-mixed", "bf16-true"):
        with pytest.raises(ConfigError, match=rf"precision='{precision}': this GPU \(Tesla T4\) has no bf16"):
            _check(precision=precision)
    _check(accelerator="cpu", precision="bf16-mixed")  # CPU autocast has bf16
    machine(cuda=True, bf16=True)
    _check(precision="bf16-mixed")


def test_several_devices_are_refused() -> None:
    with pytest.raises(ConfigError, match="trainer.devices=2: a run trains on one device.*--workers"):
        TrainConfig().override(["trainer.devices=2"])


def test_every_entry_point_checks_the_machine(machine, tmp_path: Path) -> None:  # noqa: ANN001
    """load_config, load_spec (every variant) and run_cells refuse before anything runs."""
    from ablate.experiments.runner.cells import run_cells

    machine()
    config = _write(tmp_path / "tiny.yaml", TINY_YAML)
    with pytest.raises(ConfigError, match="16-mixed"):
        load_config(config, ["trainer.precision=16-mixed"])
    raw = {**RAW, "variants": {**VARIANTS, "fp16": {"trainer.precision": "16-mixed"}}}
    spec = _write(tmp_path / "spec.yaml", raw)
    assert spec_from_dict(raw).variants["fp16"]  # a spec is data; the machine is checked on load
    with pytest.raises(ConfigError, match="16-mixed"):
        load_spec(spec)
    cfg = load_config(config).override(["trainer.accelerator=gpu", f"data.cache_dir={tmp_path / 'cache'}"])
    with pytest.raises(ConfigError, match="trainer.accelerator='gpu'"):
        run_cells(cfg, [0], [tmp_path / "out"])
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


# --- through the command line: exit 2, one message, nothing written ---------------------------


CLI_CASES = {
    "seed-given-twice": (["seed=1", "seed=2"], ["seed is given twice", "'seed=1'", "'seed=2'"]),
    "seed-negative": (["seed=-1"], ["seed=-1 is out of range; valid: [0, "]),
    "max-steps-huge": (["trainer.max_steps=1000000000"], ["trainer.max_steps=1000000000 is out of range"]),
    "devices-two": (["trainer.devices=2"], ["trainer.devices=2", "one device", "--workers"]),
    "accelerator-gpu": (["trainer.accelerator=gpu"], ["trainer.accelerator='gpu' needs", "auto or cpu"]),
    "precision-16-on-cpu": (["trainer.precision=16-mixed"], ["'16-mixed' needs a GPU", "bf16-mixed"]),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the accelerator cases assume no GPU")
@pytest.mark.parametrize("case", list(CLI_CASES), ids=list(CLI_CASES))
def test_cli_exits_2_and_writes_nothing(tmp_path: Path, case: str) -> None:
    args, expect = CLI_CASES[case]
    (tmp_path / "tiny.yaml").write_text(TINY_YAML)
    ran = run_forked(["train", "tiny.yaml", *args, "--out", "out", "--no-progress"], tmp_path)
    assert ran.returncode == 2, ran.stderr
    message = " ".join(ran.stderr.split())
    assert "Traceback" not in ran.stderr and all(part in message for part in expect), ran.stderr
    assert sorted(os.listdir(tmp_path)) == ["tiny.yaml"]


def test_shipped_configs_name_local_data_that_exists() -> None:
    for path in sorted((REPO / "experiments" / "configs").glob("*.yaml")):
        source = load_config(path).data.source
        if source and os.path.isabs(source):
            assert Path(source).exists(), f"{path.name}: data.source {source} does not exist"


def test_a_huge_integer_is_out_of_range_not_an_overflow() -> None:
    with pytest.raises(ConfigError, match="is out of range"):
        TrainConfig().override(["seed=" + "9" * 400])


def test_a_missing_local_source_falls_back_to_the_files_hub_data_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An installed package has no ../shared/data: the shipped SST-2 config's hub_fallback takes
    over, with one warning record, and the resolved config records the hub data set; a
    ``data.source=`` override replaces both, with no word of the fallback."""
    text = "data: {task: text, source: ./not-here, hub_fallback: stanfordnlp/sst2}\n"
    (tmp_path / "c.yaml").write_text(text)
    with caplog.at_level("WARNING", logger="ablate"):
        assert load_config(tmp_path / "c.yaml").data.source == "stanfordnlp/sst2"
    (warned,) = caplog.records
    assert "data.source" in warned.getMessage() and "stanfordnlp/sst2" in warned.getMessage()
    caplog.clear()
    (tmp_path / "mine").mkdir()
    with caplog.at_level("WARNING", logger="ablate"):
        assert load_config(tmp_path / "c.yaml", [f"data.source={tmp_path / 'mine'}"]).data.source == str(
            tmp_path / "mine"
        )
        spec = tmp_path / "s.yaml"
        spec.write_text("name: s\nbase: c.yaml\nvariants: {baseline: {}, b: {model.n_heads: 1}}\nseeds: 2\n")
        assert load_spec(spec, [f"data.source={tmp_path / 'mine'}"]).base.data.source == str(
            tmp_path / "mine"
        )
    assert caplog.records == []
    (tmp_path / "not-here").mkdir()  # the local data is there: it is used
    assert load_config(tmp_path / "c.yaml").data.source == str(tmp_path / "not-here")
    # A path typed on the command line that does not exist is an error, never a silent fallback.
    with pytest.raises(ConfigError, match="not found"):
        cfg = load_config(tmp_path / "c.yaml", ["data.source=./typo"])
        from ablate.datamodules.sources import resolve

        resolve(cfg.data.source)
