"""A throwaway PostgreSQL server on localhost for the multi-worker tests.

Uses the Debian packages (``apt-get install postgresql``; ``.ci/run`` installs
them). PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.paths import free_port


def pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@contextmanager
def postgres_server(root: Path) -> Iterator[str]:
    """Start a server in ``root``; yield its SQLAlchemy URL; stop it afterwards."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        raise FileNotFoundError("PostgreSQL server binaries not found (apt-get install postgresql)")
    as_user: list[str] = []
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        root.chmod(0o755)
        for parent in root.parents:  # the postgres user must reach the data folder
            if parent == Path("/"):
                break
            parent.chmod(parent.stat().st_mode | 0o005)
    data = root / "pgdata"
    data.mkdir()
    if as_user:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        [*as_user, initdb, "-D", str(data), "-U", "postgres", "--auth=trust"], check=True, capture_output=True
    )
    opts = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c max_connections=100"
    subprocess.run(
        [*as_user, pg_ctl, "-D", str(data), "-o", opts, "-w", "-l", str(data / "log"), "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
