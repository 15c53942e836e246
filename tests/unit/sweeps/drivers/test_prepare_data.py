"""A sweep loads every distinct data set once, before any run folder or cell exists
(sweeps/drivers/grid.py ``prepare_data``): bad data is one error with nothing written, and good data
is cached for the workers."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ablate.datamodules.datamodule import ClassificationDataModule
from ablate.errors import ConfigError
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.drivers.grid import prepare_data, sweep
from ablate.sweeps.drivers.options import RunOptions
from tests.helpers.configs import TINY_BASE


def text_spec(tmp_path: Path, column: str) -> object:
    csv = tmp_path / "reviews.csv"
    rows = [f"{'good fine nice' if i % 2 else 'bad awful poor'} {i},{i % 2}" for i in range(60)]
    csv.write_text("review,label\n" + "\n".join(rows) + "\n")
    data = {"task": "text", "source": str(csv), "text_column": column, "batch_size": 8}
    data |= {"cache_dir": str(tmp_path / "cache")}
    base = {**TINY_BASE, "data": data}
    return spec_from_dict(
        {"name": "t", "base": base, "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}, "seeds": 2}
    )


def test_bad_data_is_one_error_before_anything_is_written(tmp_path: Path) -> None:
    spec = text_spec(tmp_path, "sentence")  # the file has no such column
    run_dir = tmp_path / "runs" / "t"
    with pytest.raises(ConfigError, match=r"t: variant 'baseline': .*no text column 'sentence'"):
        sweep(spec, run_dir, RunOptions(use_wandb=False))
    assert not run_dir.exists() and not (tmp_path / "runs").exists()
    assert not any((tmp_path / "cache").glob("*text-*"))  # no cache, and no half-built one (.tmp-...)


def test_good_data_is_cached_once_for_the_workers(tmp_path: Path) -> None:
    spec = text_spec(tmp_path, "review")
    prepare_data([spec, spec])
    caches = sorted(p.name for p in (tmp_path / "cache").glob("text-*"))
    assert len(caches) == 1  # both variants and both specs share the data set
    dm = ClassificationDataModule(spec.cell_config("no_pe", 1).data)
    assert dm.cache_path.name == caches[0] and (dm.cache_path / "tokenizer.json").exists()


def ablate_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("ablate.") and r.levelno == logging.WARNING
    ]


def test_a_small_evaluation_split_is_one_warning_in_the_driver(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """60 rows in one file give validation and test 3 rows each: one warning, for both specs and
    both variants that share the data set, a log record (the command line shows it on stderr, the
    Python API does not); a synthetic set of 100 per split warns nothing."""
    spec = text_spec(tmp_path, "review")
    capsys.readouterr()
    prepare_data([spec, spec])
    warnings = ablate_warnings(caplog)
    assert len(warnings) == 1 and warnings[0].startswith(
        "t: warning: small evaluation split(s): validation 3"
    )
    assert "warning" not in capsys.readouterr().err  # logged, not printed
    caplog.clear()
    prepare_data([spec])  # the same data set again in this process (a notebook's second sweep)
    assert ablate_warnings(caplog) == []
    data = {**TINY_BASE["data"], "n_val": 100, "n_test": 100, "cache_dir": str(tmp_path / "cache")}
    big = spec_from_dict({"name": "b", "base": {**TINY_BASE, "data": data}, "variants": {"baseline": {}}})
    prepare_data([big])
    assert ablate_warnings(caplog) == []
