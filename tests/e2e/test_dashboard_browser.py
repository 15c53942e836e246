"""``ablate dashboard``'s server on a real socket (sweeps/integrations/dashboard.py): the first page
of a run folder whose report is stale is the stored report, answered while the rebuild runs in the
background, then the new report; and in headless Chromium the review bar's links to
optuna-dashboard (0.21) render the study's trial list and trial table (a Chromium test is skipped
where none is installed: ``apt-get install -y chromium``). The cells are told in-process, as a
worker tells them, without training."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ablate.sweeps.integrations import http_server
from ablate.sweeps.integrations.dashboard import ReviewPage, make_app, open_review
from tests.unit.sweeps.integrations.test_dashboard import VALUES, Held, Run

pytestmark = pytest.mark.server

BROWSER = next(
    (
        b
        for b in ("chromium", "chromium-browser", "chromium-headless-shell", "google-chrome")
        if shutil.which(b)
    ),
    None,
)


@contextmanager
def serving(page: ReviewPage) -> Iterator[str]:
    """The review server of ``page`` on a free port, its base URL while it runs."""
    server = http_server.threaded_server("127.0.0.1", 0, make_app(page))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def fetch(url: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        assert resp.status == 200, url
        return resp.read().decode()


def test_the_first_page_is_the_stored_report_then_the_rebuilt_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run(tmp_path)
    for cell in [("baseline", 0), ("baseline", 1), ("no_pe", 0)]:
        run.finish(*cell)
    first = open_review(run.run_dir)
    first.refresh()
    assert first.wait_rebuilt(120)  # the report of 3 of 4 cells, on disk
    run.finish("no_pe", 1)  # the study moved on since

    held = Held()  # the rebuild waits until the first page has been answered
    monkeypatch.setattr("ablate.sweeps.report.build.rewrite_report", held)
    page = open_review(run.run_dir)
    page.refresh()  # as `serve` does before it answers
    assert held.started.wait(10) and page.refreshing
    with serving(page) as base:
        started = time.monotonic()
        body = fetch(f"{base}/", timeout=5)
        assert time.monotonic() - started < 5 and not held.release.is_set()
        assert "<td>no_pe</td><td>1</td>" in body and "it is being rebuilt from the study" in body
        held.release.set()
        assert page.wait_rebuilt(120)
        body = fetch(f"{base}/")
        assert "<td>no_pe</td><td>2</td>" in body and "being rebuilt" not in body


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[str, ReviewPage]]:
    """The review server of a finished 2 x 2 sweep (its report written), on a free port."""
    run = Run(tmp_path)
    for cell in VALUES:
        run.finish(*cell)
    page = open_review(run.run_dir)
    page.refresh()
    assert page.wait_rebuilt(120)
    with serving(page) as base:
        yield base, page


def dom(url: str, tmp_path: Path, name: str) -> str:
    """``url``'s DOM in headless Chromium once its scripts have run and fetched (virtual time: the
    page's API requests are answered within it), with a screenshot ``name``.png beside it."""
    flags = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    flags += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    flags += ["--window-size=1400,1000", "--virtual-time-budget=10000"]
    for what in (f"--screenshot={tmp_path / name}.png", "--dump-dom"):
        profile = tmp_path / f"profile-{name}-{what[2:6]}"
        proc = subprocess.run(
            [*flags, f"--user-data-dir={profile}", what, url], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / f"{name}.png").stat().st_size > 0
    return proc.stdout


@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install -y chromium)")
def test_the_bars_links_render_the_trial_list_and_table_in_headless_chromium(
    dashboard: tuple[str, ReviewPage], tmp_path: Path
) -> None:
    base, page = dashboard
    review = fetch(f"{base}/")
    links = re.findall(r"<a href='(/dashboard/[^']*)'>", review)
    trials, table = f"/dashboard/studies/{page.study_id}/trials", page.table_url
    assert links[:2] == [trials, table], links

    # The trial list: one entry per cell attempt, the Best Trial badge the docs warn about.
    listed = dom(base + trials, tmp_path, "trials")
    assert sorted(re.findall(r">Trial (\d+)<", listed)) == ["0", "1", "2", "3"], listed[-3000:]
    assert "Best Trial" in listed and "variant baseline" in listed

    # The trial table (below Smart Selection's plots): a row per trial with its variant and value.
    tabled = dom(base + table, tmp_path, "table")
    rows = re.findall(r"<tr[ >].*?</tr>", tabled, flags=re.S)
    body = [r for r in rows if ">Complete<" in r]
    assert len(body) == len(VALUES), rows
    assert all(any(f">{variant}<" in r for r in body) for variant in ("baseline", "no_pe"))
    assert all(any(f">{value}<" in r for r in body) for value in VALUES.values())

    # 0.21's own `trialTable` route draws no page: the reason the bar links Smart Selection.
    blank = dom(f"{base}/dashboard/studies/{page.study_id}/trialTable", tmp_path, "trialTable")
    assert ">Trial 0<" not in blank and "<tr" not in blank
