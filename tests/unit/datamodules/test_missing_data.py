"""Text data that is not there: the shipped SST-2 config in an installed package (no local folder,
no network for its hub fallback) and a data.source that names nothing. Exit 2, with the folder
that is missing, the files expected and the key to set."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ablate.cli.parser import main
from ablate.datamodules import DataError, sources
from ablate.datamodules.config import DataConfig
from ablate.experiments.specs.shipped import shipped


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(*args: object, **kw: object) -> None:
        raise ConnectionError("Couldn't reach 'stanfordnlp/sst2' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(sources.datasets, "load_dataset", unreachable)


def test_the_shipped_sst2_config_without_its_data_says_how_to_point_at_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As in an installed package: the config's ../../../shared/data/sst2 does not exist beside it,
    so its hub fallback is tried, and the hub cannot be reached."""
    config = tmp_path / "site-packages" / "ablate" / "experiments" / "configs" / "sst2.yaml"
    config.parent.mkdir(parents=True)
    shutil.copy(shipped()["sst2"].path, config)
    offline(monkeypatch)
    out = tmp_path / "out"
    argv = ["train", str(config), f"data.cache_dir={tmp_path / 'cache'}", "--out", str(out)]
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(tmp_path / "site-packages" / "shared" / "data" / "sst2") in err  # the missing folder
    assert "could not load it from the Hugging Face hub" in err
    assert "data.source=/path/to/your/copy" in err
    assert "train.tsv, dev.tsv and test.tsv" in err and "columns label and sentence" in err
    assert not out.exists()


def test_a_hub_name_of_your_own_that_fails_gets_no_local_data_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(monkeypatch)
    cfg = DataConfig(task="text", source="stanfordnlp/sst2", cache_dir=str(tmp_path / "cache"))
    with pytest.raises(DataError) as err:
        sources.read_source(cfg, str(tmp_path / "hf"))
    assert "could not load it from the Hugging Face hub" in str(err.value)
    assert "data.source=/path/to/your/copy" not in str(err.value)


def test_a_source_that_names_nothing_says_what_is_expected(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        sources.resolve(str(tmp_path / "sst2"))
    message = str(err.value)
    assert f"file or folder not found: {tmp_path / 'sst2'}" in message
    assert "train.tsv, dev.tsv, test.tsv" in message and ".parquet" in message
