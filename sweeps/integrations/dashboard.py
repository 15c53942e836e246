"""``ablate dashboard``: review a sweep locally, no cloud needed.

One server, two views. ``/`` is the review page: the run folder's report.html (the verdicts,
the per-variant table, the per-seed plot, the paired per-seed differences, each variant's
parameters and wall time, the validation curves), rebuilt from the study while a sweep runs
(in a thread: a request is answered from the report already written, and the new one replaces
it when it is done), under a bar that links to the study's trial list and trial table. Every
other path is optuna-dashboard, whose UI lives at ``/dashboard/`` and its API at ``/api/`` (its
bundle asks for absolute paths, so it is not moved under a prefix; the wrapper takes only ``/``
and ``/review/state`` from it).

The dashboard reads the run folder's study: the objective named by the spec's metric,
report.md (after a paragraph saying the study is an ablation grid) as the study note,
report.html and metric.png as study artifacts, and one trial per cell attempt (params
``variant``/``seed``; scalar user attributes: each metric, ``diverged``, ``wall_s``,
``n_params``, ``curve`` (compact JSON), ``override.<key>``; artifacts: ``config.yaml`` and the
heatmap seeds' heatmaps), all written through sweeps/ledger/study_views.py into the run folder's
``artifacts/`` store.
"""

from __future__ import annotations

import errno
import html
import json
import math
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optuna.artifacts import FileSystemArtifactStore
from optuna.storages import BaseStorage
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.sweeps.integrations.http_server import WSGIApp, threaded_server
from ablate.sweeps.ledger.run_folder import read_json_object, read_summary, study_storage
from ablate.sweeps.ledger.storage import one_line

# A requested page looks at the study at most this often; a live page asks whether it changed
# every POLL_MS and reloads when it did.
CHECK_EVERY_S = 3.0
POLL_MS = 5000
REFRESH_POLL_MS = 1500  # while the report is being rebuilt
STATE_PATH = "/review/state"
# The bar over the report, and the report's first screen in the order of the question: the
# verdicts, the status and warnings, the per-variant table, the per-seed plot, the paired
# per-seed differences and what each variant cost; then the design lines, the notes and the rest
# (the validation curves first; report.html itself is not changed). A selector that no longer
# matches leaves the report in its own order (its classes: sweeps/report/files.py ``_html``).
BAR_CSS = """body{display:flex;flex-direction:column;align-items:flex-start}
#ablate-bar{order:-1;align-self:stretch;position:sticky;top:0;z-index:9;margin:-2rem -2rem 1rem;
padding:8px 2rem;background:#eef3f8;border-bottom:1px solid #c8d3df;font-size:14px;display:flex;
gap:1.5em;align-items:baseline;flex-wrap:wrap}#ablate-bar .go{margin-left:auto}
#ablate-bar .why{color:#555;font-size:12px}#ablate-bar .refresh{color:#7a4d00}
#ablate-bar .err{color:#b00020;font-weight:600}body>h1:first-of-type{margin:0 0 .3em}
body>p{margin:.5em 0}body>ul.small:first-of-type,body>table:first-of-type~*{order:2}
body>div.plots{order:1}body>div.plots~*{order:3}body>div.cost{order:1}"""


def check_port_free(host: str, port: int) -> None:
    """Fail with a usable message before the server starts.

    bottle's server would otherwise die with a bare ``OSError`` traceback. The
    probe sets SO_REUSEADDR like the server does, so a port in TIME_WAIT after a
    previous dashboard counts as free.
    """
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be in 1..65535, got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except socket.gaierror as err:
            raise ConfigError(f"--host {host!r} cannot be resolved: {err.strerror}") from None
        except OSError as err:
            if err.errno in (errno.EADDRINUSE, errno.EACCES):
                raise ConfigError(f"port {port} is in use; pass --port (another free port)") from None
            raise ConfigError(f"cannot listen on {host}:{port}: {err.strerror}") from None


def artifact_store(run_dir: Path) -> FileSystemArtifactStore:
    """The run folder's artifact store; before any cell wrote one it is empty, and the heatmaps and
    configs that workers put there later show up without a restart."""
    return FileSystemArtifactStore(str(run_dir / "artifacts"))


def study_names(storage: BaseStorage) -> list[str]:
    """All studies in the storage: the sweep's, any ``<name>.search.<variant>``, a transient ``::lock``."""
    return sorted(s.study_name for s in storage.get_all_studies())


def open_run_storage(run_dir: Path, storage: str | None = None) -> tuple[str, BaseStorage]:
    """The experiment's name and its storage, resolved as ``ablate report`` does.

    Unlike ``open_run`` this neither creates the study nor checks the spec's
    identity: a viewer should show any study the suite wrote, also one from an
    older version of the spec format, without changing it by opening it.
    """
    name = read_json_object(run_dir / "spec.json", "a sweep run folder", {"name": (str,)})["name"]
    # A search run folder (`ablate search`) holds only `<name>.search.<variant>` studies.
    return name, study_storage(run_dir, name, storage, search_too=True)


# ---- the review page --------------------------------------------------------------------


@dataclass(frozen=True)
class StudyState:
    """What the report of a study depends on (its complete cells, of how many), and what is left."""

    complete: int  # cells with a complete trial
    cells: int  # cells with any trial (every enqueued cell)
    running: int
    waiting: int

    @property
    def version(self) -> str:
        return f"{self.complete}/{self.cells}"

    @property
    def live(self) -> bool:
        return self.complete < self.cells or self.running + self.waiting > 0


def study_state(storage: BaseStorage, study_id: int) -> StudyState:
    trials = [t for t in storage.get_all_trials(study_id, deepcopy=False) if "cell" in t.user_attrs]
    complete = {t.user_attrs["cell"] for t in trials if t.state == TrialState.COMPLETE}
    return StudyState(
        complete=len(complete),
        cells=len({t.user_attrs["cell"] for t in trials}),
        running=sum(t.state == TrialState.RUNNING for t in trials),
        waiting=sum(t.state == TrialState.WAITING for t in trials),
    )


@dataclass(frozen=True)
class StoredReport:
    """One reading of the run folder's report: report.html's text (None: there is none), the
    study version its summary.json shows (None: none it names) and report.html's
    ``(mtime_ns, size)`` when it was read."""

    html: str | None
    version: str | None
    stamp: tuple[int, int] | None


def report_stamp(run_dir: Path) -> tuple[int, int] | None:
    try:
        st = (run_dir / "report.html").stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def read_stored(run_dir: Path) -> StoredReport:
    """The run folder's report.html and the version of the study it shows (from summary.json)."""
    stamp = report_stamp(run_dir)
    try:
        text = (run_dir / "report.html").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return StoredReport(None, None, None)
    try:
        cells = read_summary(run_dir)["cells"]
        version: str | None = f"{cells['complete']}/{cells['total']}"
    except (ConfigError, KeyError, TypeError):
        version = None
    return StoredReport(text, version, stamp)


class ReviewPage:
    """The run folder's report.html, rebuilt (``rewrite_report``, as ``ablate report`` does) when
    the study's complete cells changed since the report on disk; looked at on request, at most
    every ``check_every_s``.

    A request never waits for a rebuild: the page is the report read from the run folder
    (``stored``, read when the page opens), the rebuild runs in a thread of its own, and when it
    is done the new report replaces ``stored`` whole, so a request gets the old one or the new
    one and never a mix. Until then the bar says that the report shown is the stored one and is
    being refreshed; with no report yet the page says the report is being built and reloads
    itself. A rebuild that fails (the study mid-write, a read-only folder, a study of an older
    spec format) keeps the last report written, with the reason in the bar and on stderr."""

    def __init__(
        self,
        run_dir: Path,
        name: str,
        storage: BaseStorage,
        url: str | None = None,
        *,
        check_every_s: float = CHECK_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run_dir, self.name, self.storage, self.url = run_dir, name, storage, url
        self.check_every_s, self.clock = check_every_s, clock
        try:
            self.study_id: int | None = storage.get_study_id_from_name(name)
        except KeyError:  # a search folder: only `<name>.search.<variant>` studies
            self.study_id = None
        self.state: StudyState | None = None
        self.read_error: str | None = None  # the study could not be read: the last state stands
        self.build_error: str | None = None  # the report could not be rebuilt: the last one stands
        self.stored = read_stored(run_dir)  # what the page shows; replaced whole after a rebuild
        self._built = self.stored.version  # the version of the study the report shown shows
        self._failed: str | None = None  # a version whose rebuild failed: not tried again
        self._rebuilding: threading.Thread | None = None
        self._checked_at = -math.inf
        self._lock = threading.Lock()

    @property
    def error(self) -> str | None:
        return self.read_error or self.build_error

    @property
    def refreshing(self) -> bool:
        """Whether a rebuild of the report runs (the page shows the stored report meanwhile)."""
        return self._rebuilding is not None

    @property
    def dashboard_url(self) -> str:
        """The study's trial list (its own start page is History, with the best-value line)."""
        return "/dashboard/" if self.study_id is None else f"/dashboard/studies/{self.study_id}/trials"

    @property
    def table_url(self) -> str | None:
        """The study's trial table: in optuna-dashboard 0.21 it is under Smart Selection's plots
        (its ``trialTable`` route draws nothing)."""
        return None if self.study_id is None else f"/dashboard/studies/{self.study_id}/smartSelection"

    def refresh(self) -> StudyState | None:
        """The study's state, read at most every ``check_every_s``; a rebuild of the report
        started in the background if it is stale and none runs."""
        with self._lock:
            if self.clock() - self._checked_at < self.check_every_s:
                return self.state
            self._checked_at = self.clock()
            if self._rebuilding is None and report_stamp(self.run_dir) != self.stored.stamp:
                self.stored = read_stored(self.run_dir)  # written meanwhile (`ablate report`)
                self._built = self.stored.version
            if self.study_id is None:
                return self.state
            try:
                self.state = state = study_state(self.storage, self.study_id)
            except Exception as err:  # a database error while a worker writes: the last state
                self.read_error = f"cannot read the study ({one_line(err)})"
                return self.state
            self.read_error = None
            stale = state.complete and state.version not in (self._built, self._failed)
            if stale and self._rebuilding is None:
                self._rebuilding = threading.Thread(
                    target=self._rebuild, args=(state,), name="ablate-report", daemon=True
                )
                self._rebuilding.start()
            return state

    def wait_rebuilt(self, timeout: float | None = None) -> bool:
        """Wait for the rebuild that runs, if one does; whether none runs any more."""
        thread = self._rebuilding
        if thread is not None:
            thread.join(timeout)
        return self._rebuilding is None

    def _rebuild(self, state: StudyState) -> None:
        """The report written again from the study (in the rebuild's thread), then shown."""
        from optuna.exceptions import OptunaError

        from ablate.sweeps.report.build import rewrite_report

        stored, error = None, "the rebuild stopped"
        try:
            rewrite_report(self.run_dir, self.url)
            stored = read_stored(self.run_dir)
        except Exception as err:  # anything: the page keeps the last good report, and says why
            error = f"cannot rebuild the report ({one_line(err)})"
            print(f"ablate dashboard: {error}", file=sys.stderr, flush=True)
            if not isinstance(err, (ConfigError, OSError, OptunaError)):  # a bug: where it is
                traceback.print_exc(file=sys.stderr)
        finally:
            with self._lock:
                if stored is not None:
                    # What the report shows: a cell that finished while it was written may be in it.
                    self.stored, self._built = stored, stored.version or state.version
                    self._failed = self.build_error = None
                else:
                    self._failed, self.build_error = state.version, error
                self._rebuilding = None

    def state_json(self) -> bytes:
        state = self.refresh()
        live = state is not None and state.live
        version = state.version if state else None
        return json.dumps({"version": version, "live": live, "refreshing": self.refreshing}).encode()

    def html(self) -> bytes:
        state = self.refresh()
        with self._lock:  # one consistent view: the report shown and whether it is refreshed
            report, built, refreshing = self.stored.html, self._built, self.refreshing
        bar = self._bar(state, report is not None, built, refreshing)
        if report is None:
            return page_html(self.name, bar + self._no_report(state, refreshing)).encode()
        head, sep, rest = report.partition("<body>")
        return (head + sep + bar + rest if sep else bar + report).encode()

    def _no_report(self, state: StudyState | None, refreshing: bool) -> str:
        link = f"<a href='{self.dashboard_url}'>optuna-dashboard</a>"
        if self.study_id is None:
            return (
                f"<p>{html.escape(self.name)} is an <code>ablate search</code> run folder: it has no "
                f"ablation report; its results are in search.json, its trials in {link}.</p>"
            )
        if refreshing:
            done = f" ({state.complete} of {state.cells} cells complete)" if state else ""
            return (
                f"<h1>{html.escape(self.name)}</h1><p><b>Building the report&hellip;</b> The study"
                f"{done} is being written into report.html; this page reloads when it is ready. "
                f"Until then, the trials are in {link}.</p>"
            )
        what = self.error or "no cell has finished yet"
        left = f" ({state.running} running, {state.waiting} waiting)" if state else ""
        return (
            f"<h1>{html.escape(self.name)}</h1><p>No report yet: {html.escape(what)}{left}. The verdicts, "
            f"the per-variant table and the per-seed plot appear here when the first cell finishes; "
            f"until then, the trials are in {link}.</p>"
        )

    def _bar(self, state: StudyState | None, report: bool, shown: str | None, refreshing: bool) -> str:
        """The bar: the study's status (``shown``: the counts of the report, if any), whether it is
        the stored one being refreshed, why it could not be, the links to the trials, and while
        cells are left or the report is being rebuilt a script that reloads the page when the
        study's version changed and no rebuild runs."""
        esc = html.escape
        if state is None:
            status = "no sweep study" if self.study_id is None else "study not read"
        elif state.live:
            counts = (shown if report else None) or state.version
            status = f"live: {counts} cells complete, {state.running} running (reloads when one finishes)"
        elif report:
            status = f"finished: the report of {self.run_dir}"
        else:
            status = f"finished: {state.version} cells complete"
        notes = ""
        if refreshing and report:
            notes += (
                "<span class='refresh'>showing the stored report; it is being rebuilt from the "
                "study (the page reloads when it is done)</span>"
            )
        if self.error and report:
            notes += f"<span class='err'>{esc(self.error)}: showing the last report written</span>"
        poll = ""
        if refreshing or (state is not None and state.live):
            version = json.dumps(state.version if state else None)
            every = REFRESH_POLL_MS if refreshing else POLL_MS
            poll = (
                f"<script>setInterval(function(){{fetch('{STATE_PATH}').then(function(r){{return r.json()}})"
                f".then(function(s){{if(!s.refreshing&&(s.version!=={version}||{json.dumps(refreshing)}))"
                f"location.reload()}}).catch(function(){{}})}},{every})</script>"
                f"<noscript><meta http-equiv='refresh' content='{POLL_MS // 1000 * 2}'></noscript>"
            )
        table = f" &middot; <a href='{self.table_url}'>table</a>" if self.table_url else ""
        return (
            f"<style>{BAR_CSS}</style><div id='ablate-bar'><b>ablate review: {esc(self.name)}</b>"
            f"<span>{esc(status)}</span>{notes}<span class='go'><a href='{self.dashboard_url}'><b>Trials in "
            f"optuna-dashboard &rarr;</b></a>{table} <span class='why'>its best-trial and importance "
            "views are not results</span></span></div>"
            f"{poll}"
        )


def page_html(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body style='font-family:system-ui,sans-serif;margin:2em;color:#222'>{body}</body></html>"
    )


def review_app(page: ReviewPage, dashboard: WSGIApp) -> WSGIApp:
    """``/`` the review page, ``/review/state`` its version; every other path optuna-dashboard."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path not in ("/", STATE_PATH):
            # optuna-dashboard (0.21) serves /static/* and /favicon.ico by reading the request's
            # Accept-Encoding header, and a request without one (curl, a probe) got a 500 and a
            # traceback. None means identity (no gzip), the one coding every client reads.
            environ.setdefault("HTTP_ACCEPT_ENCODING", "identity")
            return dashboard(environ, start_response)
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        body, ctype = (page.html(), "text/html") if path == "/" else (page.state_json(), "application/json")
        headers = [("Content-Type", f"{ctype}; charset=utf-8"), ("Content-Length", str(len(body)))]
        start_response("200 OK", [*headers, ("Cache-Control", "no-store")])
        return [body] if environ.get("REQUEST_METHOD", "GET") == "GET" else [b""]

    return app


def open_review(run_dir: Path, storage: str | None = None) -> ReviewPage:
    """The review page of a run folder (its errors: the folder's, as ``open_run_storage``'s)."""
    name, rdb = open_run_storage(run_dir, storage)
    return ReviewPage(run_dir, name, rdb, storage)


def make_app(page: ReviewPage) -> WSGIApp:
    """The server's WSGI app: the review page, and optuna-dashboard on the same storage."""
    import optuna_dashboard  # only this command needs it

    return review_app(page, optuna_dashboard.wsgi(page.storage, artifact_store=artifact_store(page.run_dir)))


def serve(run_dir: Path, *, host: str = "127.0.0.1", port: int = 8080, storage: str | None = None) -> None:
    """Serve the review page and optuna-dashboard on a sweep run folder until Ctrl-C (which raises
    KeyboardInterrupt).

    The storage goes through the suite's settings (``open_storage``), so that
    reading a live sweep's SQLite study waits for the workers' writes instead of
    failing with "database is locked".

    The server runs in a thread rather than through ``optuna_dashboard.run_server``:
    wsgiref's request handler catches *every* exception, so a Ctrl-C that lands while a
    response is being written would be logged and swallowed, and the server would keep
    running. Signals reach only the main thread, which here does nothing but wait. Each
    connection has a thread of its own and ``http_server.TIMEOUT_S`` seconds for each read
    and write, so a client that hangs holds up no other (sweeps/integrations/http_server.py).

    A stale report starts being rebuilt (in a thread) before the server answers; the first
    page is the stored report meanwhile, not a wait for the rebuild.
    """
    page = open_review(run_dir, storage)  # the folder first: its errors say more than the port's
    check_port_free(host, port)
    page.refresh()  # a stale report: its rebuild starts now, in the background
    httpd = threaded_server(host, port, make_app(page))
    thread = threading.Thread(target=httpd.serve_forever, name="dashboard", daemon=True)
    print(f"review page for {page.name!r}: http://{host}:{port}/", flush=True)
    print(f"optuna-dashboard: http://{host}:{port}/dashboard/", flush=True)
    print(f"studies: {', '.join(study_names(page.storage))}", flush=True)
    if not (run_dir / "artifacts").is_dir():
        print(f"no artifacts in {run_dir / 'artifacts'} yet (no cell has finished)", flush=True)
    if page.refreshing:
        what = "the stored report until then" if page.stored.html is not None else "a wait page until then"
        print(f"rebuilding the report from the study in the background (the page shows {what})", flush=True)
    print("Ctrl-C stops the server", flush=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
    finally:
        httpd.shutdown()  # stops accepting; a connection still open ends with its daemon thread
        httpd.server_close()
