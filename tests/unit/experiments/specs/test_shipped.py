"""Shipped configs and specs by name: ``ablate configs``, ``ablate configs copy``, and a name that
is not a file resolved to the shipped file (a file of that name always wins)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ablate.cli.parser import main
from ablate.experiments.specs.loading import load_config
from ablate.experiments.specs.shipped import CONFIGS, resolve, shipped
from ablate.experiments.specs.spec_file import load_spec
from tests.helpers.configs import TINY_YAML


def test_every_shipped_file_is_listed_with_its_kind(capsys: pytest.CaptureFixture[str]) -> None:
    items = shipped()
    assert {n for n, s in items.items() if s.kind == "config"} == {p.stem for p in CONFIGS.glob("*.yaml")}
    assert items["heads"].kind == "spec" and items["order"].kind == "config"
    assert main(["configs"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in items)


def test_a_name_resolves_to_the_shipped_file_but_a_file_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The note is a log record (the CLI prints it; an API call stays quiet)."""
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="ablate"):
        assert resolve("order", ("config",), "train config") == CONFIGS / "order.yaml"
    assert "using the shipped train config" in caplog.text
    caplog.clear()
    (tmp_path / "order").write_text(TINY_YAML)
    with caplog.at_level("WARNING", logger="ablate"):
        assert resolve("order", ("config",), "train config") == Path("order")
    assert caplog.records == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "heads"],
            "heads is a shipped experiment spec, not a train config; run it with: ablate sweep heads",
        ),
        (["sweep", "nothere", "--dry-run"], "file not found: nothere, and no shipped"),
        (["sweep", "sub/heads", "--dry-run"], "file not found: sub/heads"),
        (["configs", "copy", "nothere"], "no shipped config or spec 'nothere'; choose one of"),
    ],
)
def test_a_wrong_name_says_what_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv, message
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert list(tmp_path.iterdir()) == []


def test_a_copied_spec_loads_from_another_folder_as_the_shipped_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy holds its base config inline, so it means the same experiment anywhere."""
    monkeypatch.chdir(tmp_path)
    assert main(["configs", "copy", "remove-pe-single-head-order", "mine.yaml"]) == 0
    copied, original = (
        load_spec(tmp_path / "mine.yaml"),
        load_spec(shipped()["remove-pe-single-head-order"].path),
    )
    assert copied.identity() == original.identity()
    text = (tmp_path / "mine.yaml").read_text()
    spec_lines = shipped()["remove-pe-single-head-order"].path.read_text().splitlines()
    assert set(spec_lines) - set(text.splitlines()) == {"base: ../order.yaml"}  # the rest as written
    assert all(f"  {line}" in text for line in (CONFIGS / "order.yaml").read_text().splitlines() if line)
    assert main(["configs", "copy", "remove-pe-single-head-order", "mine.yaml"]) == 2  # kept: no --force
    assert main(["configs", "copy", "order", str(tmp_path)]) == 0  # a folder: NAME.yaml in it
    assert load_config(tmp_path / "order.yaml") == load_config(CONFIGS / "order.yaml")


def test_a_copied_config_points_its_relative_data_at_what_it_resolves_to(tmp_path: Path) -> None:
    """sst2.yaml's ../../../shared/data/sst2 is a checkout's folder: the copy names it absolutely where it
    exists, and the hub fallback where it does not (an installed package)."""
    from ablate.experiments.specs.shipped import Shipped, copy_text

    original = shipped()["sst2"]
    source = yaml.safe_load(copy_text(original))["data"]["source"]
    local = (CONFIGS / "../../../shared/data/sst2").resolve()
    if local.exists():  # an absolute path to the same folder (a symlinked ../shared resolves alike)
        assert Path(source).is_absolute() and Path(source).resolve() == local
    else:
        assert source == "stanfordnlp/sst2"
    moved = tmp_path / "pkg" / "sst2.yaml"  # the same file where the data folder is absent
    moved.parent.mkdir()
    moved.write_text(original.path.read_text())
    assert yaml.safe_load(copy_text(Shipped("sst2", "config", moved)))["data"]["source"] == "stanfordnlp/sst2"
