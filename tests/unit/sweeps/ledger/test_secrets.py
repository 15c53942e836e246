"""``secrets.shown``: a storage URL's password never reaches a message, whatever it holds. SQLAlchemy
takes a password raw up to the first ``@`` (``/`` and ``:`` included); an unencoded ``@`` is a
typo whose halves are both secret. No server: ``make_url`` shows what SQLAlchemy would log in with."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from ablate.sweeps.ledger.secrets import shown

PASSWORDS = ["s3cretPW", "pa/ss", "p@ss", "p@ss/w:rd", "p?ss", "p%40ss", "p ss"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_password_is_masked_whole_whatever_it_holds(password: str) -> None:
    url = f"postgresql+psycopg2://abl:{password}@db.example:5432/studies"
    assert shown(url) == "postgresql+psycopg2://abl:***@db.example:5432/studies"
    assert shown(f"--storage={url}") == "--storage=postgresql+psycopg2://abl:***@db.example:5432/studies"
    if " " not in password:  # inside a message a URL ends at whitespace
        assert shown(f"cannot open {url}: refused") == (
            "cannot open postgresql+psycopg2://abl:***@db.example:5432/studies: refused"
        )


def test_sqlalchemy_takes_a_slash_raw_so_shown_must_mask_it() -> None:
    """Why ``pa/ss`` matters: it logs in as ``pa/ss``, not as a path (the old mask stopped at /)."""
    url = make_url("postgresql+psycopg2://abl:pa/ss@db.example:5432/studies")
    assert (url.password, url.host, url.database) == ("pa/ss", "db.example", "studies")


def test_sqlalchemy_masking_would_show_half_of_an_at_password() -> None:
    """Why shown masks to the last ``@`` rather than through ``make_url``: it reads ``p@ss/w:rd``
    as password ``p`` at host ``ss``, and its own masking shows the rest of the secret."""
    url = make_url("postgresql://abl:p@ss/w:rd@db.example/studies")
    assert url.password == "p" and "w%3Ard" in url.render_as_string(hide_password=True)
    assert shown("postgresql://abl:p@ss/w:rd@db.example/studies") == "postgresql://abl:***@db.example/studies"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql://me@corp:pw@h/db", "mysql://me@corp:***@h/db"),  # a user name may hold an @
        ("a postgresql://u:p1@h/a and mysql://v:p2@k/b", "a postgresql://u:***@h/a and mysql://v:***@k/b"),
        (
            "postgresql://u@h/db?password=zz&sslmode=require",
            "postgresql://u@h/db?password=***&sslmode=require",
        ),
    ],
)
def test_every_password_of_a_text_is_masked(text: str, expected: str) -> None:
    assert shown(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://u@h:5432/db",  # a user and a port, no password
        "sqlite:////home/me/a:b@c/study.db",  # a path
        "journal:/shared/x@y.log",
        "http://127.0.0.1:8080/dashboard/",
        "sqlite:///runs/tiny/study.db",
    ],
)
def test_a_text_without_a_password_is_unchanged(text: str) -> None:
    assert shown(text) == text
