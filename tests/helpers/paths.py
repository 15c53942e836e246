"""Where things are: the checkout, the shared SST-2 data beside it, the ``ablate`` command."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# ../shared/data/sst2 beside the checkout: the repository's checkouts (and CI) have it, an
# installed package does not.
SST2 = (REPO.parent / "shared" / "data" / "sst2").resolve()


def sst2() -> Path:
    """The shared SST-2 folder, or a skip saying why the test cannot run here."""
    if not (SST2 / "train.tsv").is_file():
        pytest.skip(f"no SST-2 at {SST2} (../shared/data/sst2 beside the checkout)")
    return SST2


def ablate_cmd(*args: str) -> list[str]:
    """The installed console script, run with this interpreter (no PATH assumptions)."""
    return [sys.executable, "-m", "ablate", *args]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
