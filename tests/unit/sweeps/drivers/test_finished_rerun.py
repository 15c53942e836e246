"""``ablate sweep`` run again on a finished run folder does only what it must (sweeps/drivers/grid.py):
no worker starts, the data is not prepared, the stored report is printed instead of rebuilt
(sweeps/report/current.py), and a changed spec is refused as always; a run with cells left runs
them and rebuilds its report."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ablate.errors import ConfigError
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.drivers import grid
from ablate.sweeps.drivers.options import RunOptions
from ablate.sweeps.report import build, current
from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import finished_run

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}}
OPTIONS = RunOptions(use_wandb=False)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_run(tmp_path_factory.mktemp("rerun"), TINY_BASE, seeds=2)


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(trained, tmp_path / "tiny"))


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """What the driver did: the specs it prepared data for, the workers it started, the report
    builds, and its console lines; the code's version held still (this checkout may be edited)."""
    log: dict[str, list[Any]] = {"data": [], "workers": [], "builds": []}
    monkeypatch.setattr(grid, "prepare_data", lambda specs: log["data"].append([s.name for s in specs]))
    monkeypatch.setattr(grid, "run_workers", lambda *a, **kw: log["workers"].append(kw["workers"]))
    real = build.report
    monkeypatch.setattr(build, "report", lambda *a, **kw: (log["builds"].append(1), real(*a, **kw))[1])
    out = io.StringIO()
    monkeypatch.setattr(grid, "console", Console(file=out, soft_wrap=True))
    log["out"] = [out]
    monkeypatch.setattr(current, "code_hash", lambda: "the code")
    monkeypatch.setattr(current, "provenance", lambda: {"commit": "abc", "versions": {}})
    return log


def tiny(seeds: int = 2, **extra: Any) -> Any:
    return spec_from_dict({"name": "tiny", "base": TINY_BASE, "variants": VARIANTS, "seeds": seeds, **extra})


def test_a_finished_rerun_starts_nothing_and_keeps_the_report(run: Path, seen: dict[str, list[Any]]) -> None:
    summary, outcome = grid.sweep(tiny(), run, OPTIONS)  # the first rerun stamps the report
    assert outcome.ok and seen["builds"] == [1] and seen["data"] == [[]] and seen["workers"] == []
    stamped = {n: (run / n).stat().st_ino for n in current.REPORT_FILES if (run / n).is_file()}

    again, outcome = grid.sweep(tiny(), run, OPTIONS)
    assert outcome.ok and (outcome.complete, outcome.total) == (4, 4)
    assert seen["builds"] == [1], "the report of an unchanged finished study was rebuilt"
    assert seen["data"] == [[], []] and seen["workers"] == []  # no data prepared, no worker
    assert {n: (run / n).stat().st_ino for n in stamped} == stamped  # no report file rewritten
    assert again == json.loads((run / "summary.json").read_text()) == json.loads(json.dumps(summary))
    printed = seen["out"][0].getvalue()
    assert printed.count("tiny: 4/4 done, 0 running; none left to run") == 2
    assert printed.count("tiny: the report is up to date with the study; kept") == 1


def test_a_missing_report_file_is_rebuilt_on_a_rerun(run: Path, seen: dict[str, list[Any]]) -> None:
    grid.sweep(tiny(), run, OPTIONS)
    (run / "report.html").unlink()
    grid.sweep(tiny(), run, OPTIONS)
    assert seen["builds"] == [1, 1] and (run / "report.html").is_file() and seen["workers"] == []


def test_a_changed_spec_is_refused_as_before(run: Path, seen: dict[str, list[Any]]) -> None:
    """Every cell is complete under the old spec; the study's checks still refuse the new one."""
    changed = spec_from_dict(
        {"name": "tiny", "base": TINY_BASE, "variants": VARIANTS, "seeds": 2},
        overrides=["trainer.max_steps=5"],
    )
    with pytest.raises(ConfigError, match="max_steps"):
        grid.sweep(changed, run, OPTIONS)
    assert seen["builds"] == [] and seen["workers"] == []


def test_a_run_with_cells_left_prepares_data_runs_workers_and_rebuilds(
    run: Path, seen: dict[str, list[Any]]
) -> None:
    grid.sweep(tiny(), run, OPTIONS)
    summary, outcome = grid.sweep(tiny(seeds=3), run, OPTIONS)  # a seed more: 2 cells to run
    assert seen["data"] == [[], ["tiny"]] and seen["workers"] == [1]  # 1 worker (OPTIONS.workers)
    assert seen["builds"] == [1, 1] and not outcome.ok and summary["cells"]["total"] == 6


def test_the_command_line_prints_the_same_report_and_exit_code_when_it_keeps_it(
    run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ablate sweep SPEC`` on the finished run: rebuilt (no stamp yet), then kept; the terminal
    shows the same verdicts and table, and the exit code is the same."""
    import yaml

    from ablate.cli import main

    monkeypatch.setattr(current, "code_hash", lambda: "the code")
    monkeypatch.setattr(current, "provenance", lambda: {"commit": "abc", "versions": {}})
    spec_file = run.parent / "tiny.yaml"
    spec_file.write_text(
        yaml.safe_dump({"name": "tiny", "base": TINY_BASE, "variants": VARIANTS, "seeds": 2})
    )
    argv = ["sweep", str(spec_file), "--runs", str(run.parent), "--no-wandb"]
    capsys.readouterr()
    codes, outputs = [], []
    for _ in range(2):
        codes.append(main(argv))
        out, err = capsys.readouterr()
        outputs.append((out, [line for line in err.splitlines() if "report is up to date" not in line]))
    assert codes == [0, 0]
    assert "report is up to date" in err and outputs[0] == outputs[1]
    assert "no_pe: " in err and "tiny: test/acc over seeds" in outputs[0][0] and str(run) in outputs[0][0]
