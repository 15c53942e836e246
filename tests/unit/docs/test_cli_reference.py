"""The generated CLI reference (docs/_gen/reference.py ``render_cli``) is the same page on every
machine: no default read from an ``ABLATE_*`` variable reaches it, so a password in
``$ABLATE_STORAGE`` is never written into docs/pages/reference/cli.md."""

from __future__ import annotations

import argparse
import os

import pytest

from ablate.cli import parser as cli_parser
from ablate.sweeps.ledger.secrets import STORAGE_ENV
from docs._gen import reference

URL = "postgresql+psycopg2://abl:s3cretPW@db.example:5432/studies"


def page_with(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> str:
    for key in [k for k in os.environ if k.startswith("ABLATE_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return reference.render_cli()


def test_the_page_is_the_same_with_a_password_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clean = page_with(monkeypatch, {})
    page = page_with(monkeypatch, {STORAGE_ENV: URL, "ABLATE_CACHE": "/elsewhere/cache"})
    assert "s3cret" not in page and "db.example" not in page
    assert page == clean
    assert f"default ${STORAGE_ENV} if set when the command runs" in page  # where the default comes from
    assert os.environ[STORAGE_ENV] == URL  # rendering gave the environment back


def test_a_default_read_from_the_environment_when_the_parser_is_built_stays_off_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The regression the generator guards against: an option whose default is
    ``os.environ.get("ABLATE_STORAGE")`` (as the parser had once) is rendered without it."""
    built = cli_parser.build_parser

    def reads_the_environment() -> argparse.ArgumentParser:
        parser = built()
        sub = reference.nested(parser)
        assert sub is not None
        sub.choices["report"].add_argument(
            "--db", default=os.environ.get(STORAGE_ENV), help="a storage URL read from the environment"
        )
        return parser

    monkeypatch.setattr(cli_parser, "build_parser", reads_the_environment)
    clean = page_with(monkeypatch, {})
    page = page_with(monkeypatch, {STORAGE_ENV: URL})
    assert "`--db DB`" in page and "s3cret" not in page
    assert page == clean
