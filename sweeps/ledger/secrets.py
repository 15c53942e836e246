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
_USER_PASSWORD = re.compile(r"(//[^:/@\s]*:)[^@/\s]*@")


def shown(url: str) -> str:
    """The URL for a message, its password masked (also in a URL that does not parse)."""
    return _USER_PASSWORD.sub(r"\1***@", url)


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
