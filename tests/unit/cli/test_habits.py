"""What Hydra and LightningCLI users type (issue 37), through the real command line: range() and
choice() are sweeps like a comma list, [a,b] is one list value, ~key resets a key to its schema
default, +key is refused (naming the valid keys), ++key=v sets an existing key, --key VALUE is
answered with the exact command to type, and --print_config is --print-config."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest
import yaml

from ablate.cli.habits import reset_item, schema_default
from ablate.cli.parser import build_parser, main
from ablate.errors import ConfigError
from ablate.experiments.schema.config import SECTIONS, TrainConfig
from ablate.experiments.schema.parsing import parse_overrides
from ablate.experiments.specs import quick_grid as qg
from tests.helpers.configs import TINY_YAML

# TINY_YAML with non-default values to reset: pe none (default sinusoidal), one kv head.
BASE = TINY_YAML.replace("n_heads: 2,", "n_heads: 2, pe: none, attention_options: {n_kv_heads: 1},")


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "base.yaml").write_text(BASE)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "base.yaml"


def resolved(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """The config ``ablate train ARGV --print-config`` prints (it must exit 0)."""
    assert main(["train", *argv, "--print-config"]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The message of a command that exits 2 (a ConfigError or an argparse error)."""
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    assert code == 2
    return " ".join(capsys.readouterr().err.split())


def field_default(cls: type, name: str) -> object:
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()


# --- range() and choice() are sweeps, exactly as a comma list is ----------------------------


@pytest.mark.parametrize(
    ("value", "values"),
    [
        ("range(1,4)", ["1", "2", "3"]),
        ("range(3)", ["0", "1", "2"]),
        ("range(8, 0, -4)", ["8", "4"]),
        ("choice(1,2,4)", ["1", "2", "4"]),
        ("choice(none, rope)", ["none", "rope"]),
    ],
)
def test_range_and_choice_are_swept_keys(value: str, values: list[str]) -> None:
    assert qg.split_overrides([f"model.n_heads={value}", "seed=3"]) == (["seed=3"], {"model.n_heads": values})


def test_range_and_choice_make_the_comma_lists_grid(base: Path) -> None:
    grids = [
        qg.load_sweep("base.yaml", [f"model.n_heads={v}"], seeds=2).to_dict()
        for v in ("1,2", "range(1,3)", "choice(1,2)")
    ]
    assert grids[0] == grids[1] == grids[2]
    assert set(grids[0]["variants"]) == {"n_heads-1", "n_heads-2"}
    assert grids[0]["variants"]["n_heads-2"] == {"model.n_heads": 2}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("range(1,2)", "is 1 value(s); a sweep needs two or more"),
        ("choice(1)", "is 1 value(s); a sweep needs two or more"),
        ("range(0,1,0.5)", "range takes integers"),
        ("range(1,4,0)", "range takes integers"),
        ("range(0,1000000)", "a range holds 100,000"),
        ("sort(1,2)", "sort() is Hydra's, not a sweep here"),
    ],
)
def test_a_range_or_function_that_is_no_grid_is_refused(
    base: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    err = refused(["sweep", "base.yaml", f"model.n_heads={value}", "--dry-run"], capsys)
    assert message in err and "model.n_heads" in err


def test_train_refuses_a_range_and_names_the_sweep(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "ablate sweep base.yaml model.n_heads=1,2" in refused(
        ["train", "base.yaml", "model.n_heads=range(1,3)"], capsys
    )


# --- [a,b] is one list value -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["sweep", "train"])
def test_a_list_on_a_key_of_one_value_names_the_sweep_forms(
    base: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    err = refused(
        [command, "base.yaml", "model.n_heads=[1,2]", "--dry-run" if command == "sweep" else "--no-progress"],
        capsys,
    )
    assert "model.n_heads takes one value" in err
    assert "write model.n_heads=1,2 or model.n_heads=choice(1,2)" in err
    assert "is a train config, not an experiment spec" not in err


def test_a_list_is_the_value_of_a_key_that_takes_one(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert resolved(["base.yaml", "plugins=[]"], capsys)["plugins"] == []


@pytest.mark.parametrize(
    ("key", "one"),
    [
        ("model.n_heads", True),
        ("seed", True),
        ("data.source", True),  # str or null
        ("model.norm", True),  # the older name of model.block
        ("plugins", False),
        ("model.pe_options", False),
        ("model.pe_options.base", False),  # a component's option: its type is the component's
        ("model.n_kv_heads", False),  # the older name of an option
        ("model.nope", False),  # unknown: the override's own check names it
    ],
)
def test_which_keys_take_one_value(key: str, one: bool) -> None:
    assert qg.takes_one_value(key) is one


# --- ~key resets a key to its schema default -------------------------------------------------


def test_tilde_resets_a_key_to_its_schema_default(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert resolved(["base.yaml"], capsys)["model"]["pe"] == "none"
    default = field_default(SECTIONS["model"], "pe")
    assert default != "none"
    assert resolved(["base.yaml", "~model.pe"], capsys)["model"]["pe"] == default
    # after an option, as the override parser collects it from argparse's leftovers
    assert main(["train", "base.yaml", "--no-progress", "--print-config", "~model.pe"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["model"]["pe"] == default


def test_tilde_resets_an_options_mapping_and_an_older_name(
    base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resolved(["base.yaml"], capsys)["model"]["attention_options"] == {"n_kv_heads": 1}
    for reset in ("~model.attention_options", "~model.n_kv_heads"):
        assert resolved(["base.yaml", reset], capsys)["model"]["attention_options"] == {"n_kv_heads": None}


def every_key() -> list[str]:
    keys = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]
    return [*keys, "seed", "plugins"]


@pytest.mark.parametrize("key", every_key())
def test_every_key_resets_to_the_value_its_field_defaults_to(key: str) -> None:
    section, _, name = key.partition(".")
    cls, name = (SECTIONS[section], name) if name else (TrainConfig, key)
    default = field_default(cls, name)
    item = reset_item(f"~{key}")
    assert item.partition("=")[0] == key
    parsed = parse_overrides([item])[key]
    assert parsed == (list(default) if isinstance(default, tuple) else default)
    assert schema_default(key) == default


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("~model.pe=none", "takes no value: write ~model.pe, or model.pe=none to set it"),
        (
            "~model.pe_options.base",
            "reset all of them with ~model.pe_options, or set this one with model.pe_options.base=VALUE",
        ),
        ("~model.foo", "unknown config key 'model.foo'; valid model keys: d_model, n_layers, n_heads"),
        ("~trainer.max_step", "did you mean trainer.max_steps?"),
    ],
)
def test_a_tilde_that_resets_nothing_is_refused(
    base: Path, capsys: pytest.CaptureFixture[str], item: str, message: str
) -> None:
    assert message in refused(["train", "base.yaml", item, "--print-config"], capsys)


def test_tilde_outside_the_command_line_says_what_to_give() -> None:
    with pytest.raises(ConfigError, match="here give model.pe=VALUE"):
        parse_overrides(["~model.pe"])


# --- +key adds no key; ++key=v sets an existing one ------------------------------------------


def test_plus_on_an_unknown_key_names_the_valid_keys(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["train", "base.yaml", "+model.foo=3", "--print-config"], capsys)
    assert "+ adds a key, and a config's keys are fixed" in err
    assert "unknown config key 'model.foo'; valid model keys: d_model, n_layers, n_heads" in err
    assert "model.foo=..." not in err
    assert "did you mean model.n_heads?" in refused(["train", "base.yaml", "+model.n_head=3"], capsys)


def test_plus_on_a_key_that_exists_names_the_override_to_write(
    base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "drop the '+' (model.n_heads=...)" in refused(["train", "base.yaml", "+model.n_heads=1"], capsys)
    assert "write model.n_heads=1" in refused(
        ["sweep", "base.yaml", "+model.n_heads=1", "model.pe=none,rope"], capsys
    )


def test_double_plus_sets_a_key_that_exists_and_refuses_an_unknown_one(
    base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resolved(["base.yaml", "++model.n_heads=1"], capsys)["model"]["n_heads"] == 1
    assert "valid model keys" in refused(["train", "base.yaml", "++model.foo=1"], capsys)


# --- LightningCLI: --key VALUE and --print_config --------------------------------------------


@pytest.mark.parametrize(
    ("flags", "written"),
    [
        (["--model.n_heads", "1"], "model.n_heads=1"),
        (["--model.n_heads=1"], "model.n_heads=1"),
        (["--seed", "3"], "seed=3"),
    ],
)
def test_a_dashed_key_is_answered_with_the_command_that_works(
    base: Path, capsys: pytest.CaptureFixture[str], flags: list[str], written: str
) -> None:
    err = refused(["train", "base.yaml", *flags, "--print-config"], capsys)
    assert f"write {written}: ablate train base.yaml {written} --print-config" in err
    command = shlex.split(err.rpartition(": ablate ")[2].removesuffix(")"))
    assert main(command) == 0  # the command it names runs
    key, _, value = written.partition("=")
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed[key] if key == "seed" else printed["model"]["n_heads"]) == int(value)


def test_a_dashed_key_without_a_value_and_a_password_in_the_command(
    base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(
        ["sweep", "base.yaml", "--storage", "postgresql://me:secret@db/x", "--model.n_heads"], capsys
    )
    assert "write model.n_heads=VALUE" in err and "model.n_heads=VALUE" in err.rpartition(": ablate ")[2]
    assert "secret" not in err


def test_print_config_takes_lightningclis_spelling(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "base.yaml", "--print-config"]) == 0
    dashed = capsys.readouterr().out
    assert main(["train", "base.yaml", "--print_config"]) == 0
    assert capsys.readouterr().out == dashed and "n_heads: 2" in dashed
    assert main(["sweep", "base.yaml", "model.n_heads=1,2", "--seeds", "2", "--print_config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["seeds"] == [0, 1]
    train_help = build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    assert "--print-config" in train_help and "--print_config" not in train_help  # one spelling documented


def test_print_config_where_there_is_none_names_where_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert "the resolved config is --print-config, on ablate train, sweep and search" in refused(
        ["report", "runs/x", "--print_config"], capsys
    )
