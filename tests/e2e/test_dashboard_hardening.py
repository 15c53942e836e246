"""``ablate dashboard``'s HTTP server (sweeps/integrations/http_server.py) on a real socket: a
client that never finishes its request holds up no other and is closed after the timeout, with
one line and no traceback; optuna-dashboard's assets are served to a client that sends no
``Accept-Encoding``. The server runs in a thread on port 0 over a run folder whose cells are
enqueued, not trained."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json
from ablate.sweeps.integrations import http_server
from ablate.sweeps.integrations.dashboard import make_app, open_review
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.storage import sqlite_url
from tests.helpers.configs import TINY_BASE

pytestmark = pytest.mark.server

PARTIAL = b"GET / HTTP/1.1\r\nHost: x\r\n"  # no blank line: the headers never end


@pytest.fixture
def port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The review server of a 2 x 2 sweep's run folder (cells enqueued), timeout 2 s, on a free port."""
    monkeypatch.setattr(http_server.TimedRequestHandler, "timeout", 2.0)
    spec = spec_from_dict(
        {
            "name": "tiny",
            "base": TINY_BASE,
            "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
            "seeds": 2,
        }
    )
    run_dir = tmp_path / "tiny"
    run_dir.mkdir()
    write_json(run_dir / "spec.json", spec.to_dict())
    open_store(spec, sqlite_url(run_dir / "study.db"), create=True).ensure_cells()
    server = http_server.threaded_server("127.0.0.1", 0, make_app(open_review(run_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def get(port: int, path: str, *, encoding: str | None = None, timeout: float = 5) -> tuple[int, dict, bytes]:
    """``GET path``, with ``Accept-Encoding`` only when ``encoding`` is given (http.client adds
    ``identity`` by itself otherwise)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        if encoding is not None:
            conn.putheader("Accept-Encoding", encoding)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_a_client_that_never_finishes_its_headers_holds_up_no_other(
    port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.create_connection(("127.0.0.1", port)) as idle:
        idle.sendall(PARTIAL)
        time.sleep(0.2)  # the server has taken the connection and is reading its headers
        for path in ("/", "/review/state", "/api/studies"):
            status, _, body = get(port, path, timeout=1.5)  # answered long before the idle one times out
            assert status == 200 and body, path
        idle.settimeout(10)
        started = time.monotonic()
        assert idle.recv(1024) == b""  # closed by the server, after its timeout
        assert 1.0 < time.monotonic() - started < 8
    time.sleep(0.1)
    err = capsys.readouterr().err
    assert "request not complete in 2 s: connection closed" in err
    assert "Traceback" not in err


def test_assets_are_served_without_accept_encoding(port: int, capsys: pytest.CaptureFixture[str]) -> None:
    for path in ("/static/bundle.js", "/favicon.ico"):
        status, headers, body = get(port, path)
        assert status == 200 and body, path  # was 500 and a traceback: a KeyError in the handler
        assert "Content-Encoding" not in headers, path  # identity: a client that asked for none
    status, headers, zipped = get(port, "/static/bundle.js", encoding="gzip")
    assert status == 200 and headers.get("Content-Encoding") == "gzip" and zipped[:2] == b"\x1f\x8b"
    assert "Traceback" not in capsys.readouterr().err
