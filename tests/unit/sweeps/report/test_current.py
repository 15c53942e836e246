"""A finished sweep run again reuses its report (sweeps/report/current.py): the report files are
rebuilt only when what they are made from changed, decided by content (the stamp's key and each
file's SHA-256), and the W&B summary run is logged again only when its report or target changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.storage import sqlite_url
from ablate.sweeps.report import build, current
from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import finished_run

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run folder (2 variants x 2 seeds), trained once for the module."""
    return finished_run(tmp_path_factory.mktemp("current"), TINY_BASE, seeds=2)


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    """A copy of the finished run folder for one test (its study and files are changed)."""
    import shutil

    return Path(shutil.copytree(trained, tmp_path / "tiny"))


@pytest.fixture(autouse=True)
def fixed_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code's version held still: this checkout may be edited while a test runs (a test that
    changes it says so)."""
    monkeypatch.setattr(current, "code_hash", lambda: "the code")
    monkeypatch.setattr(current, "provenance", lambda: {"commit": "abc", "versions": {}})


def opened(run: Path) -> tuple[Any, Any, str]:
    spec = spec_from_dict({"name": "tiny", "base": TINY_BASE, "variants": VARIANTS, "seeds": 2})
    url = sqlite_url(run / "study.db")
    return spec, open_store(spec, url), url


def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of build.report (still run): one per rebuild."""
    calls: list[int] = []
    real = build.report

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(build, "report", counted)
    return calls


def files_on_disk(run: Path) -> dict[str, tuple[int, int, bytes]]:
    """Each report file's (inode, mtime_ns, bytes): an atomic rewrite changes the inode."""
    out = {}
    for name in current.REPORT_FILES:
        if (path := run / name).is_file():
            st = path.stat()
            out[name] = (st.st_ino, st.st_mtime_ns, path.read_bytes())
    return out


def test_a_current_report_is_kept_and_not_rewritten(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = builds(monkeypatch)
    spec, store, url = opened(run)
    first, key, rebuilt = current.current_report(spec, store, run, url)  # no stamp yet: built
    assert rebuilt and calls == [1] and (run / current.STAMP_FILE).is_file()
    stamp = json.loads((run / current.STAMP_FILE).read_text())
    assert stamp["key"] == key and {"summary.json", "report.html", "metric.png"} <= set(stamp["files"])
    before = files_on_disk(run)

    def no_rebuild(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the report of an unchanged study was rebuilt")

    monkeypatch.setattr(build, "report", no_rebuild)
    again, key2, rebuilt = current.current_report(*opened(run)[:2], run, url)  # a fresh process's view
    assert not rebuilt and key2 == key
    assert files_on_disk(run) == before  # not one file written, not even with the same bytes
    assert again == json.loads((run / "summary.json").read_text()) == json.loads(json.dumps(first))


@pytest.mark.parametrize("change", ["missing", "edited", "emptied", "no stamp", "stamp of another key"])
def test_a_report_file_that_is_not_the_stamped_one_rebuilds_it(
    run: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    spec, store, url = opened(run)
    current.current_report(spec, store, run, url)
    calls = builds(monkeypatch)
    if change == "missing":
        (run / "report.html").unlink()
    elif change == "edited":
        (run / "report.md").write_text((run / "report.md").read_text() + "\nhand edit\n")
    elif change == "emptied":
        (run / "summary.json").write_text("")
    elif change == "no stamp":
        (run / current.STAMP_FILE).unlink()
    else:
        stamp = json.loads((run / current.STAMP_FILE).read_text())
        (run / current.STAMP_FILE).write_text(json.dumps({**stamp, "key": "0" * 64}))
    _, _, rebuilt = current.current_report(spec, store, run, url)
    assert rebuilt and calls == [1]
    assert (run / "report.html").is_file() and json.loads((run / "summary.json").read_text())["cells"]
    assert current.current_report(spec, store, run, url)[2] is False  # stamped again: kept next time


def set_result(run: Path, cell: str, value: float) -> None:
    """The complete trial of ``cell`` records another test/acc (as a cell run again would)."""
    with sqlite3.connect(run / "study.db") as db:
        (trial,) = db.execute(
            "SELECT trial_id FROM trial_user_attributes WHERE key = 'cell' AND value_json = ?",
            (json.dumps(cell),),
        ).fetchall()
        db.execute(
            "UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND key = 'test/acc'",
            (json.dumps(value), trial[0]),
        )


def test_a_changed_result_spec_or_code_rebuilds_the_report(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, store, url = opened(run)
    current.current_report(spec, store, run, url)
    calls = builds(monkeypatch)

    set_result(run, "no_pe/s1", 0.96875)
    spec, store, url = opened(run)  # a new driver reads the study as it is now
    summary, _, rebuilt = current.current_report(spec, store, run, url)
    assert rebuilt and calls == [1]
    assert summary["variants"]["no_pe"]["max"] == 0.96875
    assert json.loads((run / "summary.json").read_text())["variants"]["no_pe"]["max"] == 0.96875

    margin = spec_from_dict(
        {"name": "tiny", "base": TINY_BASE, "variants": VARIANTS, "seeds": 2, "margin": 0.1}
    )
    assert current.current_report(margin, store, run, url)[2] and calls == [1, 1]  # the spec's reading

    monkeypatch.setattr(current, "code_hash", lambda: "edited code")  # the same commit, other code
    assert current.current_report(margin, store, run, url)[2] and calls == [1, 1, 1]
    assert not current.current_report(margin, store, run, url)[2] and calls == [1, 1, 1]


def test_the_wandb_summary_is_logged_once_per_report_and_target(run: Path) -> None:
    spec, store, url = opened(run)
    _, key, _ = current.current_report(spec, store, run, url)
    logged: list[int] = []
    target = {"id": "tiny-summary-x", "project": "ablate", "mode": "offline", "entity": None}
    assert current.log_summary_once(run, key, target, lambda: logged.append(1))
    assert not current.log_summary_once(run, key, target, lambda: logged.append(1))
    assert logged == [1]
    online = {**target, "mode": "online"}  # first offline, now with a login: logged there too
    assert current.log_summary_once(run, key, online, lambda: logged.append(1)) and logged == [1, 1]
    # A rebuilt report drops the record: its summary run shows the old numbers.
    (run / "report.md").write_text("edited")
    _, key, rebuilt = current.current_report(spec, store, run, url)
    assert rebuilt and "wandb" not in json.loads((run / current.STAMP_FILE).read_text())
    assert current.log_summary_once(run, key, online, lambda: logged.append(1)) and logged == [1, 1, 1]


def test_a_failed_summary_run_is_tried_again(run: Path) -> None:
    spec, store, url = opened(run)
    _, key, _ = current.current_report(spec, store, run, url)

    def fails() -> None:
        raise RuntimeError("W&B is down")

    with pytest.raises(RuntimeError):
        current.log_summary_once(run, key, {"mode": "online"}, fails)
    assert current.log_summary_once(run, key, {"mode": "online"}, lambda: None)
