"""Secrets a storage URL may hold (a database password): where they travel and how they are shown.

Workers get the study's URL from the environment variable ``STORAGE_ENV``, never on their command
line (W&B records a run's command line, and any user on the machine can list it), and every
message, log line and record shows a URL through ``shown``. Standard library only: the CLI imports
this before anything heavy.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

STORAGE_ENV = "ABLATE_STORAGE"
# ``scheme://user:password@host``: the password runs to the LAST ``@`` of the URL. SQLAlchemy
# takes a password raw up to the first ``@`` (``/``, ``:``, ``?``, spaces and all: ``u:pa/ss@h``
# logs in as ``pa/ss``), but an unencoded ``@`` is a typo of ``%40`` whose both halves are
# secret: ``make_url`` reads ``u:p@ss/w:rd@h/db`` as password ``p``, host ``ss``, so its own
# masking (``render_as_string(hide_password=True)``) would show ``ss/w:rd``. Masking to the last
# ``@`` hides at worst a host or a path with an ``@`` in it too. The user name stops at ``:`` and
# ``/`` (no password then: ``sqlite:////a:b@c.db`` is a path), as in SQLAlchemy, and may hold an
# ``@`` (``me@corp:pw@h``).
_USER = r"([A-Za-z][\w+.-]*://[^:/\s]*:)"
_IN_TEXT = re.compile(_USER + r"\S*@")  # a URL inside a message ends at whitespace
_WHOLE = re.compile(r"(?:--[\w-]+=)?" + _USER + r".*@")  # a lone URL: its password may hold a space
_QUERY_PASSWORD = re.compile(r"([?&;]password=)[^&;\s]*", re.IGNORECASE)  # psycopg2 reads ?password=


def shown(text: str) -> str:
    """``text`` (a URL, a ``--storage=URL`` argument, or a message holding URLs) for a message,
    every password masked, also in a URL that does not parse; nothing else changes."""
    if whole := _WHOLE.match(text):  # the text is one URL: it ends at the end, not at a space
        text = f"{text[: whole.end(1)]}***@{text[whole.end() :]}"
    else:
        text = _IN_TEXT.sub(r"\1***@", text)
    return _QUERY_PASSWORD.sub(r"\1***", text)


@contextmanager
def masked_argv() -> Iterator[None]:
    """``sys.argv`` with every password masked, for a library that records this process's command
    line (``wandb.init`` reads it then: ``ablate sweep --storage URL``); restored on exit."""
    given = sys.argv[:]
    sys.argv[:] = [shown(a) for a in given]
    try:
        yield
    finally:
        sys.argv[:] = given
