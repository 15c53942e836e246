"""optuna-dashboard's assets through ``ablate dashboard``'s WSGI app, without a server: a request
with no ``Accept-Encoding`` (curl, a health probe) gets the plain file, one that accepts gzip the
compressed one. optuna-dashboard 0.21 alone answers the first with a 500 and a traceback."""

from __future__ import annotations

import wsgiref.util
from pathlib import Path
from typing import Any

import pytest

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json
from ablate.sweeps.integrations.dashboard import make_app, open_review
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.storage import sqlite_url
from tests.helpers.configs import TINY_BASE


@pytest.fixture
def app(tmp_path: Path) -> Any:
    spec = spec_from_dict({"name": "tiny", "base": TINY_BASE, "variants": {"baseline": {}}, "seeds": 1})
    run_dir = tmp_path / "tiny"
    run_dir.mkdir()
    write_json(run_dir / "spec.json", spec.to_dict())
    open_store(spec, sqlite_url(run_dir / "study.db"), create=True).ensure_cells()
    return make_app(open_review(run_dir))


def get(app: Any, path: str, headers: dict[str, str]) -> tuple[str, dict[str, str], bytes]:
    environ: dict[str, Any] = {}
    wsgiref.util.setup_testing_defaults(environ)  # sets no HTTP_ACCEPT_ENCODING
    environ.update(PATH_INFO=path, **headers)
    got: list[tuple[str, list[tuple[str, str]]]] = []
    body = b"".join(app(environ, lambda status, hdrs, exc_info=None: got.append((status, hdrs))))
    return got[0][0], dict(got[0][1]), body


@pytest.mark.parametrize("path", ["/static/bundle.js", "/favicon.ico"])
def test_an_asset_is_served_to_a_client_that_names_no_encoding(app: Any, path: str) -> None:
    status, headers, body = get(app, path, {})
    assert status == "200 OK" and body and "Content-Encoding" not in headers


def test_a_client_that_accepts_gzip_gets_the_compressed_bundle(app: Any) -> None:
    status, headers, body = get(app, "/static/bundle.js", {"HTTP_ACCEPT_ENCODING": "gzip, deflate"})
    assert status == "200 OK" and headers.get("Content-Encoding") == "gzip" and body[:2] == b"\x1f\x8b"
