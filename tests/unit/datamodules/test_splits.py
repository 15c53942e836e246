"""Splits you can see (datamodules/splits.py): each split's size and how it was made, recorded
with the cached data, and one warning when a validation or test split is too small to tell
variants apart or that shares its examples with another split."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from ablate.datamodules import ClassificationDataModule, datamodule, text
from ablate.datamodules.config import DataConfig
from ablate.datamodules.splits import (
    MAX_OVERLAP,
    MIN_EVAL_EXAMPLES,
    describe,
    overlap_warning,
    overlaps,
    small_splits_warning,
    split_record,
)


def csv_file(path: Path, n: int, first: int = 0) -> Path:
    """``n`` rows numbered from ``first``: files with other ``first``s share no text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = range(first, first + n)
    path.write_text("sentence,label\n" + "".join(f"w{i} film number {i},{i % 2}\n" for i in rows))
    return path


def text_dm(tmp_path: Path, source: Path, **kw: object) -> ClassificationDataModule:
    cfg = DataConfig(task="text", source=str(source), cache_dir=str(tmp_path / "cache"), **kw)
    dm = ClassificationDataModule(cfg)
    dm.setup()
    return dm


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datamodule, "_warned", set())  # the warning is once per process


def data_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The data module's warnings logged since the last call (what the command line shows on
    stderr, a worker in its log)."""
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == datamodule.log.name and r.levelno == logging.WARNING
    ]
    caplog.clear()
    return lines


def test_a_single_file_records_how_validation_and_test_were_drawn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = csv_file(tmp_path / "one.csv", 300)
    dm = text_dm(tmp_path, source, seed=7)
    record = dm.split_record
    assert {k: v["n"] for k, v in record.items()} == {"train": 270, "validation": 15, "test": 15}
    assert {k: len(v) for k, v in dm.splits.items()} == {k: v["n"] for k, v in record.items()}
    val, test = record["validation"]["source"], record["test"]["source"]
    for made in (val, test):
        assert made.startswith(f"5% of {source} (15 of its 300 rows)")
        assert "data.seed=7" in made and "not stratified" in made
    assert "disjoint from validation" in test and "disjoint" not in val
    assert record["train"]["source"] == f"{source}, less the validation and test rows drawn from it"
    # What the record (and the docs) say is what happens: a permutation of the rows seeded by
    # data.seed; validation its first 15, test the next 15, each in file order (line = row + 2).
    perm = np.random.default_rng(7).permutation(300)
    with text.quiet_datasets():
        raw = text.load_splits(dm.cfg, str(tmp_path / "hf")).raw
    assert raw["validation"].lines == sorted(int(i) + 2 for i in perm[:15])
    assert raw["test"].lines == sorted(int(i) + 2 for i in perm[15:30])
    assert [len(r) for r in raw.values()] == [v["n"] for v in record.values()]
    err = data_warnings(caplog)
    assert len(err) == 1 and err[0].startswith("warning: small evaluation split(s): validation 15, test 15")
    assert "6.7 points" in err[0]
    # The record is kept with the cache; a second data module in the process warns no more.
    again = text_dm(tmp_path, source, seed=7, batch_size=3)
    assert again.split_record == record == again.read_split_record()
    assert data_warnings(caplog) == []


def test_a_folder_names_its_files_and_large_splits_warn_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "d"
    files = {
        name: csv_file(folder / f"{name}.csv", n, first)
        for name, n, first in (("train", 50, 0), ("dev", 120, 1000), ("test", 130, 2000))
    }
    dm = text_dm(tmp_path, folder)
    assert dm.split_record == {
        "train": {"n": 50, "source": str(files["train"].resolve()), "majority": 0.5},
        "validation": {"n": 120, "source": str(files["dev"].resolve()), "majority": 0.5},
        "test": {"n": 130, "source": str(files["test"].resolve()), "majority": 0.5},
    }
    assert data_warnings(caplog) == []  # a small train split is not an evaluation split


def test_a_folder_without_validation_draws_it_from_train(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    csv_file(folder / "train.csv", 200)
    csv_file(folder / "test.csv", 120)
    record = text_dm(tmp_path, folder, val_fraction=0.1).split_record
    assert {k: v["n"] for k, v in record.items()} == {"train": 180, "validation": 20, "test": 120}
    assert record["validation"]["source"].startswith(
        f"10% of {(folder / 'train.csv').resolve()} (20 of its 200"
    )
    assert record["train"]["source"].endswith("less the validation rows drawn from it")


def test_a_synthetic_task_records_its_generated_splits(tmp_path: Path) -> None:
    cfg = DataConfig(
        task="order", n_train=64, n_val=200, n_test=150, long_test_factor=2, cache_dir=str(tmp_path)
    )
    dm = ClassificationDataModule(cfg)
    dm.setup()
    record = dm.split_record
    assert {k: v["n"] for k, v in record.items()} == {
        "train": 64,
        "validation": 200,
        "test": 150,
        "test_long": 150,
    }
    assert record["test"]["source"] == "generated by the order task from data.seed=0 (a stream per split)"
    assert record["test_long"]["source"].endswith("lengths x2")
    assert all(0.5 <= s["majority"] < 0.6 for s in record.values())  # the order task's two classes


def test_the_majority_rate_is_the_share_of_the_most_common_label() -> None:
    record = split_record({"test": [2, 0, 2, 1, 2], "validation": []}, {})
    assert record["test"] == {"n": 5, "source": "not recorded", "majority": 0.6}
    assert record["validation"]["majority"] is None


def test_the_warning_names_each_small_evaluation_split() -> None:
    record = split_record(
        {"train": [0] * 20, "validation": [0, 1] * 7 + [1], "test": [1] * MIN_EVAL_EXAMPLES},
        {"train": "file"},
    )
    warning = small_splits_warning(record)
    assert warning is not None and "validation 15 examples" in warning and "test" not in warning.split("(")[0]
    assert f"fewer than {MIN_EVAL_EXAMPLES}" in warning and "6.7 points" in warning
    assert (
        small_splits_warning(split_record({"train": [0] * 5, "validation": [0] * 100, "test": [1] * 400}, {}))
        is None
    )
    assert describe(record).startswith("train 20 (file); validation 15 (not recorded)")


# --- splits that share examples ---------------------------------------------------------------


def overlap_lines(warnings: list[str]) -> list[str]:
    return [line for line in warnings if line.startswith("warning: overlapping splits")]


@pytest.mark.parametrize("flip", [False, True], ids=["same-file", "same-texts-flipped-labels"])
def test_a_test_file_that_is_the_train_file_warns_and_trains(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, flip: bool
) -> None:
    """One warning line naming both splits, the count and the share; the data still load. A text
    counts whatever its label: the same sentences with every label flipped are the same leak."""
    folder = tmp_path / "d"
    csv_file(folder / "train.csv", 150)
    csv_file(folder / "dev.csv", 120, first=1000)
    test = csv_file(folder / "test.csv", 150)
    if flip:
        test.write_text(
            test.read_text().replace(",0\n", ",x\n").replace(",1\n", ",0\n").replace(",x\n", ",1\n")
        )
    dm = text_dm(tmp_path, folder)
    assert len(dm.splits["test"]) == 150
    lines = overlap_lines(data_warnings(caplog))
    assert len(lines) == 1, lines
    assert "test shares 150 of its 150 examples (100.0%) with train" in lines[0]
    assert "validation" not in lines[0] and "more than 1% is warned" in lines[0]
    assert dm.read_warnings() == [lines[0].removeprefix("warning: ")]
    text_dm(tmp_path, folder, batch_size=3)  # once per process, like the small-split warning
    assert overlap_lines(data_warnings(caplog)) == []


def test_an_overlap_counts_the_evaluated_split_and_warns_above_the_threshold() -> None:
    """Each evaluated split against the splits before it; duplicates within it each count; 1 % of
    the evaluated split is allowed (SST-2 shares 0.05 %), more is warned."""
    train = [f"t{i}" for i in range(1000)]
    found = overlaps(
        {
            "train": train,
            "validation": ["t1", "t1", "v"] + [f"v{i}" for i in range(97)],
            "test": ["t5"] + [f"s{i}" for i in range(99)] + ["v"],
        }
    )
    assert found == [
        {"split": "validation", "other": "train", "shared": 2, "n": 100},
        {"split": "test", "other": "train", "shared": 1, "n": 101},
        {"split": "test", "other": "validation", "shared": 1, "n": 101},
    ]
    warning = overlap_warning(found)
    assert warning is not None and warning.startswith(
        "overlapping splits: validation shares 2 of its 100 examples (2.0%) with train (same text;"
    )
    assert "test shares" not in warning  # 1 of 101 is under MAX_OVERLAP
    at_limit = [{"split": "test", "other": "train", "shared": round(MAX_OVERLAP * 300), "n": 300}]
    assert overlap_warning(at_limit) is None and overlap_warning([]) is None


def test_a_synthetic_task_counts_no_overlap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Generated splits share short sequences by design (one distribution): no warning."""
    sizes = {"n_train": 200, "n_val": 100, "n_test": 100, "min_len": 2, "max_len": 3, "n_symbols": 1}
    dm = ClassificationDataModule(DataConfig(task="order", cache_dir=str(tmp_path), **sizes))
    dm.setup()
    assert dm.read_warnings() == [] and overlap_lines(data_warnings(caplog)) == []
