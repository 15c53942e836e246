"""``ablate completion``: shipped names for CONFIG/SPEC/NAME and dotted keys (then their values)
for the overrides, in a real bash (and zsh where installed); ``ablate configs copy``: a spec's
copy works wherever it is moved; the SST-2 entries tell a pip user how to point at their data."""

from __future__ import annotations

import dataclasses
import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ablate.cli.completion import FILES, config_keys
from ablate.cli.parser import completion_script, main
from ablate.errors import choices
from ablate.experiments.schema.config import SECTIONS
from ablate.experiments.specs.presets import preset_names
from ablate.experiments.specs.shipped import CONFIGS, shipped
from ablate.experiments.specs.spec_file import load_spec
from ablate.lit_modules.model import registry

# Each line: the words of a command line, the last being completed; prints what bash offers.
BASH_CASES = {
    "train": ["ablate", "train", ""],
    "sweep": ["ablate", "sweep", "he"],
    "key": ["ablate", "train", "order", "model.n_h"],
    "second key": ["ablate", "train", "order", "seed", "=", "1", "trainer.max_s"],
    "value": ["ablate", "train", "order", "model.pe", "=", ""],
    "list value": ["ablate", "sweep", "order", "model.pe", "=", "sinusoidal,n"],
    "unsplit value": ["ablate", "sweep", "order", "model.attn_impl=e"],
    "reproduce": ["ablate", "reproduce", ""],
    "copy": ["ablate", "configs", "copy", "remove-pe-single-head-o"],
}


@pytest.fixture(scope="module")
def bash_offers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    folder = tmp_path_factory.mktemp("completion")
    (folder / "ablate.bash").write_text(completion_script("bash"))
    calls = "".join(
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
        'COMPREPLY=(); _shtab_ablate_nospace; echo "${COMPREPLY[*]}"\n'
        for words in BASH_CASES.values()
    )
    ran = subprocess.run(
        ["bash", "-c", f"source ablate.bash\n{calls}"], cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    return {name: line.split() for name, line in zip(BASH_CASES, ran.stdout.splitlines(), strict=True)}


def names(kind: str) -> set[str]:
    return {n for n, s in shipped().items() if s.kind == kind}


def test_bash_completes_the_shipped_names_of_each_argument(bash_offers: dict[str, list[str]]) -> None:
    assert {p.stem for p in CONFIGS.glob("*.yaml")} == set(
        bash_offers["train"]
    )  # no spec: train takes configs
    assert bash_offers["sweep"] == ["heads"]
    assert bash_offers["reproduce"] == preset_names()
    assert bash_offers["copy"] == ["remove-pe-single-head-order"]


def test_bash_completes_dotted_keys_and_their_values(bash_offers: dict[str, list[str]]) -> None:
    assert bash_offers["key"] == ["model.n_heads="]
    assert bash_offers["second key"] == ["trainer.max_steps="]  # after CONFIG and a first override
    assert bash_offers["value"] == registry.names("positional")
    assert bash_offers["list value"] == ["sinusoidal,none"]
    assert bash_offers["unsplit value"] == ["model.attn_impl=eager"]


def test_the_keys_are_the_schemas_with_the_values_of_fixed_ones() -> None:
    keys = config_keys()
    schema = {f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)}
    assert schema | {"seed", "plugins"} <= set(keys)
    assert "model.pe_options.base" in keys  # a component's option (rope's base)
    assert keys["trainer.precision"] == choices(SECTIONS["trainer"], "precision")
    assert keys["model.norm_layer"] == tuple(registry.names("norm"))
    assert keys["model.scale_embeddings"] == ("true", "false")
    assert keys["data.source"] == keys["plugins"] == FILES
    assert keys["model.d_model"] == ()


def typed(shell: list[str], setup: str, keys: str, folder: Path, shows: str) -> str:
    """What an interactive ``shell`` shows after ``setup``, then ``keys`` (a tab press in them):
    read until it ends with ``shows``, or for 10 s."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the shell, in the folder, on the pseudo-terminal
        os.chdir(folder)
        os.execvpe(shell[0], shell, {**os.environ, "TERM": "dumb", "PS1": "$ "})

    def read(until: str, ends: bool = False) -> str:
        out, end = "", time.monotonic() + 10
        while time.monotonic() < end and not (out.endswith(until) if ends else until in out):
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536).decode(errors="replace")
                except OSError:
                    break
        return out

    try:
        os.write(fd, f"{setup}; echo RE''ADY\n".encode())  # the echoed line does not say READY
        read("READY")
        os.write(fd, keys.encode())
        return read(shows, ends=True)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def test_a_real_bash_completes_a_key_without_a_space_then_its_value(tmp_path: Path) -> None:
    (tmp_path / "ablate.bash").write_text(completion_script("bash"))
    bash, setup = ["bash", "--norc", "--noprofile", "-i"], "source ablate.bash"
    for keys, shows in [
        ("ablate train order model.n_hea\t", "model.n_heads="),  # no space after "="
        ("ablate train order model.pe=si\t", "model.pe=sinusoidal "),
    ]:
        assert typed(bash, setup, keys, tmp_path, shows).endswith(shows)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_a_real_zsh_completes_names_keys_and_values(tmp_path: Path) -> None:
    (tmp_path / "_ablate").write_text(completion_script("zsh"))
    zsh, setup = ["zsh", "-f", "-i"], f"fpath=({tmp_path} $fpath); autoload -U compinit; compinit -u -D"
    for keys, shows in [
        ("ablate sweep he\t", "ablate sweep heads "),
        ("ablate train order seed=1 model.n_hea\t", "model.n_heads="),  # a second override too
        ("ablate train order model.pe=si\t", "model.pe=sinusoidal "),
    ]:
        assert typed(zsh, setup, keys, tmp_path, shows).endswith(shows)


@pytest.mark.parametrize("name", ["heads", "block-sst2"])
def test_a_copied_spec_moved_to_another_folder_is_the_shipped_spec(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its base config is written inline: the one file means the same experiment wherever it goes."""
    monkeypatch.chdir(tmp_path)
    assert main(["configs", "copy", name]) == 0
    assert "inline" in capsys.readouterr().err
    moved = tmp_path / "elsewhere" / "mine.yaml"
    moved.parent.mkdir()
    (tmp_path / f"{name}.yaml").rename(moved)
    assert str(CONFIGS) not in moved.read_text() and list(tmp_path.iterdir()) == [moved.parent]
    original = load_spec(shipped()[name].path)
    assert load_spec(moved).to_dict() == original.to_dict()
    assert load_spec(moved).identity() == original.identity()
    assert main(["sweep", str(moved), "--dry-run"]) == 0
    assert "# " in moved.read_text().split("base:")[1].split("variants:")[0]  # the base's comments kept


def test_the_sst2_entries_say_how_to_point_at_your_data(capsys: pytest.CaptureFixture[str]) -> None:
    on_sst2 = [s for s in shipped().values() if s.name == "sst2" or s.base() == "sst2.yaml"]
    assert len(on_sst2) >= 5
    for item in on_sst2:
        text = item.path.read_text()
        assert "data.source=/your/sst2" in text and "train.tsv" in text and "label, sentence" in text
        assert "shared/data" not in item.description(), item.name
    assert "data.source=/your/sst2" in shipped()["sst2"].description()
    assert main(["configs"]) == 0
    assert "../shared/data/sst2 beside" not in capsys.readouterr().out
