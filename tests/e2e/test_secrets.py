"""No secret is ever written: a sweep on a password-bearing PostgreSQL URL, with W&B offline,
then every file under the run folder (W&B's offline run files included) and every process's
command line while it ran are searched for the password."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.helpers.configs import write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.postgres import pg_bin, postgres_server

PASSWORD = "Zq8-secret-Pw-71"


def command_lines() -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return out.splitlines()


@pytest.mark.server
@pytest.mark.multiprocess
@pytest.mark.skipif(
    pg_bin("pg_ctl") is None, reason="PostgreSQL is not installed (apt-get install postgresql)"
)
def test_a_database_password_reaches_no_file_and_no_worker_command_line(tmp_path: Path) -> None:
    write_spec(tmp_path, seeds=2, heatmap_seeds=[0])
    with postgres_server(tmp_path / "pg") as url:
        # The throwaway server trusts every login; the password rides along as a user's would.
        secret_url = url.replace("postgres@", f"postgres:{PASSWORD}@")
        env = {**os.environ, "WANDB_MODE": "offline", "ABLATE_STORAGE": secret_url}
        seen: list[str] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                seen.extend(line for line in command_lines() if "sweeps.drivers.worker" in line)
                done.wait(0.2)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            # The driver gets the URL from the environment too; --storage would put it in its own
            # command line, which is the user's (and is masked before W&B records it).
            swept = subprocess.run(
                ablate_cmd("sweep", "tiny.yaml", "--runs", "runs", "--workers", "2", "--heartbeat", "1", "--grace", "3"),
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
        finally:
            done.set()
            watcher.join()
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert seen, "no worker command line was seen while the sweep ran"
    assert not [line for line in seen if PASSWORD in line]
    run_dir = tmp_path / "runs" / "tiny"
    assert list(run_dir.glob("wandb/*/run-*.wandb")), "the sweep wrote no W&B offline run"
    leaked = [
        str(p.relative_to(run_dir))
        for p in run_dir.rglob("*")
        if p.is_file() and PASSWORD.encode() in p.read_bytes()
    ]
    assert not leaked, f"the password is written in {leaked}"
    assert PASSWORD not in swept.stdout + swept.stderr


@pytest.mark.server
@pytest.mark.multiprocess
@pytest.mark.skipif(
    pg_bin("pg_ctl") is None, reason="PostgreSQL is not installed (apt-get install postgresql)"
)
def test_a_password_on_the_drivers_command_line_stays_out_of_the_run_folder(tmp_path: Path) -> None:
    """--storage URL typed by the user: the workers still get it from the environment, and the W&B
    summary run records the driver's command line with the password masked."""
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    with postgres_server(tmp_path / "pg") as url:
        secret_url = url.replace("postgres@", f"postgres:{PASSWORD}@")
        swept = subprocess.run(
            ablate_cmd("sweep", "tiny.yaml", "--runs", "runs", "--storage", secret_url),
            cwd=tmp_path, env={**os.environ, "WANDB_MODE": "offline"}, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
    assert swept.returncode == 0, swept.stdout + swept.stderr
    run_dir = tmp_path / "runs" / "tiny"
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".wandb") for p in files)
    assert not [str(p) for p in files if PASSWORD.encode() in p.read_bytes()]
