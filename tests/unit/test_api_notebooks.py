"""The Python API in a notebook (api.py): the command line's W&B rule, no log lines printed into
the cells (the command line still shows them), and ``ablate.cells``, the per-cell table, with
its documented example run as it is.

A sweep here runs its worker loop in this process (tests.helpers.logs ``workers_here``): the
driver's side, where the lines came from, is the real one."""

from __future__ import annotations

import csv
import inspect
import logging
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import matplotlib
import optuna
import pytest

import ablate
from ablate.api import CELL_DTYPES
from ablate.cli import main as cli_main
from ablate.cli.commands import run_options
from ablate.cli.parser import build_parser
from ablate.datamodules import datamodule
from ablate.sweeps.drivers import grid
from ablate.sweeps.report.files import results_csv
from ablate.sweeps.stats.rows import CELL_COLUMNS, CellRow
from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.logs import unconfigured_logging, workers_here
from tests.helpers.paths import REPO
from tests.helpers.sweeps import finished_run

LINES = ("small evaluation split(s)", "cannot reach p Holm", "A new study created")


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test as a new process: no data warning given yet, optuna at its own default (INFO,
    the user's setting that a call must give back), the grid's workers in this process."""
    monkeypatch.setattr(datamodule, "_warned", set())
    monkeypatch.setattr(grid, "run_workers", workers_here)
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.INFO)
    yield
    optuna.logging.set_verbosity(level)


def tiny_spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path, seeds=1, heatmap_seeds=[0])


# ---- W&B: one rule ----------------------------------------------------------------------------


def test_the_api_logs_to_wandb_exactly_when_the_command_line_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ablate.sweep`` and ``lr_check`` log when ``ablate sweep`` / ``lr-check`` do (by default)
    and not when they do not (``use_wandb=False`` is ``--no-wandb``); ``reproduce`` the same."""
    path = tiny_spec(tmp_path)
    seen = []
    monkeypatch.setattr(grid, "sweep", lambda spec, run_dir, options: (seen.append(options), ({}, None))[1])
    spec = ablate.load_spec(path)
    ablate.sweep(spec, tmp_path / "a")
    ablate.sweep(spec, tmp_path / "b", use_wandb=False)
    api = [o.use_wandb for o in seen]
    parser = build_parser()
    cli = [
        run_options(parser.parse_args(["sweep", str(path), *flag]), tmp_path / "c")
        for flag in ([], ["--no-wandb"])
    ]
    assert api == [o.use_wandb for o in cli] and api[0] != api[1]

    seen.clear()
    ablate.lr_check(path, tmp_path / "lr", factors=(2.0,))
    ablate.lr_check(path, tmp_path / "lr", factors=(2.0,), use_wandb=False)
    assert [o.use_wandb for o in seen] == api
    defaults = {
        name: inspect.signature(getattr(ablate, name)).parameters["use_wandb"].default
        for name in ("sweep", "reproduce", "lr_check")
    }
    assert set(defaults.values()) == {api[0]}, defaults


# ---- log lines: none in a notebook, the command line shows them -------------------------------


class Kept(logging.Handler):
    """Every record a logger passes on (optuna's logger does not propagate to the root)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_an_api_sweep_prints_no_log_line_and_gives_optuna_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing configured (a notebook): the small-split and the seeds warnings and Optuna's "A new
    study created in RDB" lines reach neither stdout nor stderr; the user's optuna verbosity and
    the ``ablate`` logger's handlers are as they were."""
    spec = ablate.load_spec(tiny_spec(tmp_path))
    kept, handlers = Kept(), logging.getLogger("ablate").handlers[:]
    logging.getLogger("optuna").addHandler(kept)
    try:
        with unconfigured_logging():
            summary = ablate.sweep(spec, tmp_path / "runs" / "tiny", use_wandb=False)
    finally:
        logging.getLogger("optuna").removeHandler(kept)
    assert summary["cells"]["complete"] == summary["cells"]["total"] == len(spec.cells())
    printed = "".join(capsys.readouterr())
    assert [line for line in LINES if line in printed] == []
    assert [r.getMessage() for r in kept.records if r.levelno < logging.WARNING] == []
    assert optuna.logging.get_verbosity() == optuna.logging.INFO
    assert logging.getLogger("ablate").handlers == handlers


def test_the_command_line_still_shows_the_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same sweep as ``ablate sweep``: each warning once on stderr, as it always read."""
    path = tiny_spec(tmp_path)
    capsys.readouterr()
    with unconfigured_logging():
        assert cli_main(["sweep", str(path), "--runs", str(tmp_path / "runs"), "--no-wandb"]) == 0
    err = capsys.readouterr().err
    assert err.count("tiny: warning: small evaluation split(s): validation 32, test 32") == 1, err
    assert err.count("1 seeds per variant cannot reach p Holm <= 0.05 for no_pe") == 1, err
    assert "A new study created" not in err


def test_a_cell_then_its_sweep_warn_once_to_the_users_logging(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Once logging is configured (here pytest's), the warnings are WARNING records of ``ablate.*``
    loggers: the small split once, although ``run_trial`` and then ``sweep`` load the data (it was
    printed twice); the seeds warning too."""
    spec = ablate.load_spec(tiny_spec(tmp_path))
    ablate.run_trial(spec.cell_config("baseline", spec.seeds[0]))
    ablate.sweep(spec, tmp_path / "runs" / "tiny", use_wandb=False)
    ours = [r for r in caplog.records if r.name.startswith("ablate.") and r.levelno == logging.WARNING]
    small = [r.getMessage() for r in ours if "small evaluation split(s)" in r.getMessage()]
    assert len(small) == 1 and "validation 32, test 32 examples" in small[0]
    assert sum("cannot reach p Holm" in r.getMessage() for r in ours) == 1


# ---- ablate.cells -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_run(tmp_path_factory.mktemp("cells"), TINY_BASE, seeds=3)


def csv_rows(run: Path) -> tuple[list[dict[str, str]], list[str]]:
    with (run / "results.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader), list(reader.fieldnames or [])


def test_cells_is_results_csv_one_row_per_cell(finished: Path) -> None:
    table = ablate.cells(finished)
    rows, columns = csv_rows(finished)
    assert list(table.columns) == columns and columns[: len(CELL_COLUMNS)] == list(CELL_COLUMNS)
    assert len(table) == len(rows) == 6
    assert [(r.variant, r.seed, r.state) for r in table.itertuples()] == [
        (r["variant"], int(r["seed"]), r["state"]) for r in rows
    ]
    for metric in columns[len(CELL_COLUMNS) :]:
        assert table[metric].tolist() == [float(r[metric]) for r in rows]
    assert table["wall_s"].tolist() == [float(r["wall_s"]) for r in rows]
    assert table["n_params"].tolist() == [int(r["n_params"]) for r in rows]
    assert table["wandb_id"].isna().all()  # a sweep without W&B


def test_a_failed_cell_keeps_its_missing_values_missing(tmp_path: Path, finished: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(finished / "spec.json", run / "spec.json")
    done = CellRow(
        "baseline", 0, n_params=1234, trial=0, wall_s=1.5, wandb_id="abc", metrics={"test/acc": 0.75}
    )
    failed = CellRow("no_pe", 0, state="failed", error="RuntimeError: boom", diverged=None)
    (run / "results.csv").write_text(results_csv([done, failed]))
    table = ablate.cells(run)
    assert table["state"].tolist() == ["complete", "failed"] and table["seed"].dtype == "int64"
    assert table.loc[0, "n_params"] == 1234 and table.loc[0, "wandb_id"] == "abc"
    assert table.loc[0, "test/acc"] == 0.75 and math.isnan(table.loc[1, "test/acc"])
    assert table.loc[1, "error"] == "RuntimeError: boom"
    assert table[["n_params", "trial", "wall_s", "wandb_id", "diverged"]].iloc[1].isna().all()
    assert set(CELL_DTYPES) == set(CELL_COLUMNS)  # every cell column gets its type


def test_cells_of_a_folder_that_is_not_a_run_folder_says_what_is_missing(
    tmp_path: Path, finished: Path
) -> None:
    with pytest.raises(
        ablate.ConfigError, match=rf"{tmp_path} is neither a run folder \(no {tmp_path / 'spec.json'}\)"
    ):
        ablate.cells(tmp_path)
    (tmp_path / "spec.json").write_text((finished / "spec.json").read_text())
    with pytest.raises(ablate.ConfigError, match=rf"{tmp_path} is a run folder without results.csv"):
        ablate.cells(tmp_path)
    (tmp_path / "results.csv").write_text("variant,test/acc\nbaseline,0.5\n")
    with pytest.raises(ablate.ConfigError, match=r"results.csv is not a results.csv: no column seed, state"):
        ablate.cells(tmp_path)


def docs_example() -> str:
    """The Python block of ``ablate.cells``' docstring, which the Python API page shows."""
    return inspect.getdoc(ablate.cells).split("```python\n", 1)[1].split("```", 1)[0]


def test_the_docs_example_plots_each_seeds_difference(
    tmp_path: Path, finished: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (REPO / "docs" / "pages" / "reference" / "python-api.md").read_text()
    code = docs_example()
    assert code in page
    shutil.copytree(finished, tmp_path / "runs" / "order-api")  # where the example reads it
    monkeypatch.chdir(tmp_path)
    matplotlib.use("Agg")
    namespace: dict[str, object] = {}
    exec(compile(code, "ablate.cells (docs example)", "exec"), namespace)  # noqa: S102
    import matplotlib.pyplot as plt

    plt.close(namespace["fig"])  # type: ignore[arg-type]
    assert (tmp_path / "differences-per-seed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows, _ = csv_rows(finished)
    metric = ablate.load_summary(finished)["metric"]
    value = {(r["variant"], int(r["seed"])): float(r[metric]) for r in rows if r["state"] == "complete"}
    seeds = sorted({s for _, s in value})
    expected = [value["no_pe", s] - value["baseline", s] for s in seeds]
    differences = namespace["differences"]
    assert list(differences.columns) == ["no_pe"] and list(differences.index) == seeds  # type: ignore[attr-defined]
    assert differences["no_pe"].tolist() == pytest.approx(expected, abs=1e-12)  # type: ignore[index]
    plotted = namespace["ax"].lines[0].get_ydata()  # type: ignore[attr-defined]
    assert list(plotted) == pytest.approx(expected, abs=1e-12)
