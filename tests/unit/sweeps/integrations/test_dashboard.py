"""``ablate dashboard``'s server as a WSGI app, without a server or a port
(sweeps/integrations/dashboard.py): ``/`` is the run folder's report, rebuilt from the study as
cells finish, in a thread while requests get the stored report; every other path is
optuna-dashboard. The cells are told in-process, as a worker
tells them, without training."""

from __future__ import annotations

import html
import json
import threading
import wsgiref.util
from pathlib import Path
from typing import Any

import optuna
import pytest

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json
from ablate.sweeps.integrations.dashboard import STATE_PATH, ReviewPage, make_app, open_review
from ablate.sweeps.ledger.cells import CellStore, open_store
from ablate.sweeps.ledger.storage import sqlite_url
from ablate.sweeps.ledger.study_views import result_attrs, set_attrs
from tests.helpers.configs import TINY_BASE

VALUES = {("baseline", 0): 0.9, ("baseline", 1): 0.95, ("no_pe", 0): 0.5, ("no_pe", 1): 0.55}


class Run:
    """A 2 x 2 sweep's run folder whose cells are all claimed (running) and told one by one."""

    def __init__(self, tmp_path: Path) -> None:
        self.spec = spec_from_dict(
            {
                "name": "tiny",
                "base": TINY_BASE,
                "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
                "seeds": 2,
            }
        )
        self.run_dir = tmp_path / "tiny"
        self.run_dir.mkdir()
        write_json(self.run_dir / "spec.json", self.spec.to_dict())
        self.store: CellStore = open_store(self.spec, sqlite_url(self.run_dir / "study.db"), create=True)
        self.store.ensure_cells()
        self.trials: dict[tuple[str, int], optuna.Trial] = {}
        while (trial := self.store.claim()) is not None:
            self.trials[trial.params["variant"], trial.params["seed"]] = trial

    def finish(self, variant: str, seed: int) -> None:
        value = VALUES[variant, seed]
        trial = self.trials.pop((variant, seed))
        set_attrs(
            trial, result_attrs({"test/acc": value}, self.spec.variants[variant], diverged=False, wall_s=1)
        )
        self.store.study.tell(trial, value)


def get(app: Any, path: str, method: str = "GET") -> tuple[str, str]:
    """``path`` from the app in this process: its status and body, as the app answers at once."""
    environ: dict[str, Any] = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ.update(PATH_INFO=path, REQUEST_METHOD=method)
    status: list[str] = []
    body = b"".join(app(environ, lambda s, headers, exc_info=None: status.append(s)))
    return status[0], body.decode()


def page_of(run: Run) -> tuple[ReviewPage, Any]:
    page = open_review(run.run_dir)
    page.check_every_s = 0  # every request looks at the study
    return page, make_app(page)


def get_rebuilt(page: ReviewPage, app: Any, path: str = "/") -> tuple[str, str]:
    """``path`` once the rebuild that the first request started (if one) is done."""
    get(app, path)
    assert page.wait_rebuilt(120)
    return get(app, path)


def summary(run: Run) -> dict[str, Any]:
    return json.loads((run.run_dir / "summary.json").read_text())


def test_review_page_follows_the_study_and_dashboard_is_one_click_away(tmp_path: Path) -> None:
    run = Run(tmp_path)
    page, app = page_of(run)
    trials_url = f"/dashboard/studies/{page.study_id}/trials"

    # Before any cell finished: no report, the page says so and links to the trials.
    status, body = get(app, "/")
    assert status.startswith("200") and "No report yet: no cell has finished yet" in body
    assert f"href='{trials_url}'" in body and not (run.run_dir / "report.html").exists()
    assert f"href='/dashboard/studies/{page.study_id}/smartSelection'>table</a>" in body
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "0/4", "live": True, "refreshing": False}

    for cell in [("baseline", 0), ("baseline", 1), ("no_pe", 0)]:
        run.finish(*cell)
    status, body = get_rebuilt(page, app)
    verdict = summary(run)["verdicts"]["no_pe"]
    # The report itself, the verdict first, under the bar with the link and the live status.
    assert status.startswith("200") and body.index("ablate-bar") < body.index(html.escape(verdict))
    assert "<td>no_pe</td><td>1</td>" in body and f"href='{trials_url}'" in body
    assert "live: 3/4 cells complete, 1 running" in body and STATE_PATH in body  # it polls
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "3/4", "live": True, "refreshing": False}

    # A new complete cell: the next request starts a rebuild of the report from the study.
    run.finish("no_pe", 1)
    assert json.loads(get(app, STATE_PATH)[1])["version"] == "4/4"
    _, body = get_rebuilt(page, app)
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "4/4", "live": False, "refreshing": False}
    assert "<td>no_pe</td><td>2</td>" in body and "<td>no_pe</td><td>1</td>" not in body
    assert summary(run)["verdicts"]["no_pe"] != verdict  # one seed more: another sentence
    assert html.escape(summary(run)["verdicts"]["no_pe"]) in body
    assert "finished: the report of" in body and STATE_PATH not in body  # no more polling

    # Every other path is optuna-dashboard: its UI under /dashboard/, its API under /api/.
    status, meta = get(app, "/api/meta")
    assert status.startswith("200") and json.loads(meta)["artifact_is_available"] is True
    status, ui = get(app, "/dashboard/")
    assert status.startswith("200") and "Optuna Dashboard" in ui
    studies = json.loads(get(app, "/api/studies")[1])["study_summaries"]
    assert [s["study_id"] for s in studies if s["study_name"] == "tiny"] == [page.study_id]
    assert get(app, "/", method="POST")[0].startswith("405")


def test_a_failed_rebuild_keeps_the_last_report_and_a_current_one_is_not_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run(tmp_path)
    for cell in [("baseline", 0), ("no_pe", 0)]:
        run.finish(*cell)
    page, app = page_of(run)
    _, first = get_rebuilt(page, app)
    assert "<td>no_pe</td><td>1</td>" in first

    calls: list[Path] = []

    def locked(run_dir: Path, storage: str | None = None) -> None:
        calls.append(run_dir)
        raise optuna.exceptions.StorageInternalError("database is locked")

    monkeypatch.setattr("ablate.sweeps.report.build.rewrite_report", locked)
    # A viewer opened on a folder whose report is current does not write it again.
    page, app = page_of(run)
    assert "<td>no_pe</td><td>1</td>" in get(app, "/")[1] and not page.refreshing and calls == []

    run.finish("no_pe", 1)  # the study moved on, but its report cannot be rebuilt
    get(app, "/")
    assert page.wait_rebuilt(60)
    for _ in range(2):
        status, body = get(app, "/")
        assert status.startswith("200") and "<td>no_pe</td><td>1</td>" in body
        assert "cannot rebuild the report (database is locked): showing the last report written" in body
    assert len(calls) == 1  # the same study state is not tried again at every request


def test_a_page_looks_at_the_study_at_most_every_check_every_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run(tmp_path)
    run.finish("baseline", 0)
    built: list[Path] = []
    monkeypatch.setattr(
        "ablate.sweeps.report.build.rewrite_report", lambda run_dir, url: built.append(run_dir)
    )
    now = [0.0]
    page = ReviewPage(run.run_dir, "tiny", run.store.storage, check_every_s=5.0, clock=lambda: now[0])
    assert page.refresh().version == "1/4" and page.wait_rebuilt(60) and len(built) == 1
    run.finish("baseline", 1)
    now[0] = 4.9
    assert page.refresh().version == "1/4" and not page.refreshing  # too soon: the state read last
    now[0] = 5.0
    assert page.refresh().version == "2/4" and page.wait_rebuilt(60) and len(built) == 2
    now[0] = 10.0
    assert page.refresh().version == "2/4" and not page.refreshing and len(built) == 2  # nothing new


class Held:
    """``rewrite_report`` that waits for ``release`` before it writes (the real one), counted."""

    def __init__(self, fail: Exception | None = None) -> None:
        from ablate.sweeps.report.build import rewrite_report

        self.real, self.fail = rewrite_report, fail
        self.started, self.release, self.calls = threading.Event(), threading.Event(), 0

    def __call__(self, run_dir: Path, storage: str | None = None) -> dict[str, Any]:
        self.calls += 1
        self.started.set()
        assert self.release.wait(60), "the test never let the rebuild go"
        if self.fail is not None:
            raise self.fail
        return self.real(run_dir, storage)


def test_the_first_page_is_the_stored_report_while_the_rebuild_runs_then_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run(tmp_path)
    for cell in [("baseline", 0), ("baseline", 1), ("no_pe", 0)]:
        run.finish(*cell)
    page, app = page_of(run)
    get_rebuilt(page, app)  # the report of 3/4 cells, on disk
    run.finish("no_pe", 1)  # the study moved on: a viewer opened now finds a stale report

    held = Held()
    monkeypatch.setattr("ablate.sweeps.report.build.rewrite_report", held)
    page, app = page_of(run)
    status, body = get(app, "/")  # answered while the rebuild waits for `release`
    assert held.started.wait(10) and page.refreshing and not held.release.is_set()
    assert status.startswith("200") and "<td>no_pe</td><td>1</td>" in body  # the stored report
    assert "showing the stored report; it is being rebuilt from the study" in body
    assert "s.refreshing" in body and STATE_PATH in body  # it reloads itself when the rebuild is done
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "4/4", "live": False, "refreshing": True}
    assert "<td>no_pe</td><td>1</td>" in get(app, "/")[1] and held.calls == 1  # one rebuild at a time

    held.release.set()
    assert page.wait_rebuilt(120)
    _, body = get(app, "/")
    assert "<td>no_pe</td><td>2</td>" in body and "<td>no_pe</td><td>1</td>" not in body
    assert "being rebuilt" not in body and STATE_PATH not in body  # finished: no more polling
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "4/4", "live": False, "refreshing": False}
    assert held.calls == 1


def test_without_a_report_the_page_says_it_is_being_built_and_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run(tmp_path)
    run.finish("baseline", 0)
    held = Held()
    monkeypatch.setattr("ablate.sweeps.report.build.rewrite_report", held)
    page, app = page_of(run)
    status, body = get(app, "/")
    assert held.started.wait(10) and page.refreshing
    assert status.startswith("200") and "Building the report&hellip;" in body
    assert "(1 of 4 cells complete)" in body and "reloads when it is ready" in body
    assert "s.refreshing" in body and "http-equiv='refresh'" in body  # with or without scripts
    held.release.set()
    assert page.wait_rebuilt(120)
    _, body = get(app, "/")
    assert "Building the report" not in body and "<td>baseline</td><td>1</td>" in body


def test_a_failed_background_rebuild_is_logged_and_on_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Run(tmp_path)
    run.finish("baseline", 0)
    held = Held(fail=RuntimeError("a bug in the report"))
    held.release.set()
    monkeypatch.setattr("ablate.sweeps.report.build.rewrite_report", held)
    page, app = page_of(run)
    get(app, "/")
    assert page.wait_rebuilt(60)
    err = capsys.readouterr().err
    assert "ablate dashboard: cannot rebuild the report (a bug in the report)" in err
    assert "Traceback" in err and "RuntimeError" in err  # not a known failure: where it happened
    status, body = get(app, "/")
    assert (
        status.startswith("200") and "No report yet: cannot rebuild the report (a bug in the report)" in body
    )
    assert not page.refreshing and held.calls == 1  # the same study state is not tried again
