"""``ablate dashboard``'s server as a WSGI app, without a server or a port
(sweeps/integrations/dashboard.py): ``/`` is the run folder's report, rebuilt from the study as
cells finish; every other path is optuna-dashboard. The cells are told in-process, as a worker
tells them, without training."""

from __future__ import annotations

import html
import json
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
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "0/4", "live": True}

    for cell in [("baseline", 0), ("baseline", 1), ("no_pe", 0)]:
        run.finish(*cell)
    status, body = get(app, "/")
    verdict = summary(run)["verdicts"]["no_pe"]
    # The report itself, the verdict first, under the bar with the link and the live status.
    assert status.startswith("200") and body.index("ablate-bar") < body.index(html.escape(verdict))
    assert "<td>no_pe</td><td>1</td>" in body and f"href='{trials_url}'" in body
    assert "live: 3/4 cells complete, 1 running" in body and STATE_PATH in body  # it polls
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "3/4", "live": True}

    # A new complete cell: the next request rebuilds the report from the study.
    run.finish("no_pe", 1)
    assert json.loads(get(app, STATE_PATH)[1]) == {"version": "4/4", "live": False}
    _, body = get(app, "/")
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
    _, app = page_of(run)
    _, first = get(app, "/")
    assert "<td>no_pe</td><td>1</td>" in first

    calls: list[Path] = []

    def locked(run_dir: Path, storage: str | None = None) -> None:
        calls.append(run_dir)
        raise optuna.exceptions.StorageInternalError("database is locked")

    monkeypatch.setattr("ablate.sweeps.report.build.rewrite_report", locked)
    # A viewer opened on a folder whose report is current does not write it again.
    _, app = page_of(run)
    assert "<td>no_pe</td><td>1</td>" in get(app, "/")[1] and calls == []

    run.finish("no_pe", 1)  # the study moved on, but its report cannot be rebuilt
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
    assert page.refresh().version == "1/4" and len(built) == 1
    run.finish("baseline", 1)
    now[0] = 4.9
    assert page.refresh().version == "1/4" and len(built) == 1  # too soon: the state read last
    now[0] = 5.0
    assert page.refresh().version == "2/4" and len(built) == 2
    now[0] = 10.0
    assert page.refresh().version == "2/4" and len(built) == 2  # nothing new: no rebuild
