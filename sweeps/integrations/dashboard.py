"""``ablate dashboard``: review a sweep locally in optuna-dashboard, no cloud needed.

The dashboard reads the run folder's study: the objective named by the spec's metric,
report.md as the study note, report.html and metric.png as study artifacts, and one trial per
cell attempt (params ``variant``/``seed``; scalar user attributes: each metric, ``diverged``,
``wall_s``, ``override.<key>``; artifacts: ``config.yaml`` and the heatmap seeds' heatmaps),
all written through sweeps/ledger/study_views.py into the run folder's ``artifacts/`` store.
"""

from __future__ import annotations

import errno
import socket
import threading
from pathlib import Path
from wsgiref.simple_server import make_server

from optuna.artifacts import FileSystemArtifactStore
from optuna.storages import BaseStorage

from ablate.errors import ConfigError
from ablate.sweeps.ledger.run_folder import read_json_object, study_storage


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


def artifact_store(run_dir: Path) -> FileSystemArtifactStore | None:
    """The run folder's artifact store, or None before any cell or report has written one."""
    folder = run_dir / "artifacts"
    return FileSystemArtifactStore(str(folder)) if folder.is_dir() else None


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


def serve(run_dir: Path, *, host: str = "127.0.0.1", port: int = 8080, storage: str | None = None) -> None:
    """Serve optuna-dashboard on a sweep run folder until Ctrl-C (which raises KeyboardInterrupt).

    The storage goes through the suite's settings (``open_storage``), so that
    reading a live sweep's SQLite study waits for the workers' writes instead of
    failing with "database is locked".

    The server runs in a thread rather than through ``optuna_dashboard.run_server``:
    wsgiref's request handler catches *every* exception, so a Ctrl-C that lands while a
    response is being written would be logged and swallowed, and the server would keep
    running. Signals reach only the main thread, which here does nothing but wait.
    """
    name, rdb = open_run_storage(run_dir, storage)  # the folder first: its errors say more
    check_port_free(host, port)
    import optuna_dashboard  # only this command needs it

    artifacts = artifact_store(run_dir)
    app = optuna_dashboard.wsgi(rdb, artifact_store=artifacts)
    httpd = make_server(host, port, app)
    thread = threading.Thread(target=httpd.serve_forever, name="dashboard", daemon=True)
    print(f"optuna-dashboard for {name!r}: http://{host}:{port}/dashboard/", flush=True)
    print(f"studies: {', '.join(study_names(rdb))}", flush=True)
    if artifacts is None:
        print(f"no artifacts in {run_dir / 'artifacts'} (no cell has finished yet)", flush=True)
    print("Ctrl-C stops the server", flush=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
    finally:
        httpd.shutdown()  # waits for the request in flight
        httpd.server_close()
