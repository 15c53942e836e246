"""``ablate dashboard``: on a finished sweep, the review page at ``/`` and optuna-dashboard answer
over HTTP with the report's verdict, the study's trials, their params and the heatmap artifacts;
bad input exits 2. (The review page's refresh and fallback: tests/unit/sweeps/integrations/.)"""

from __future__ import annotations

import html
import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.configs import write_spec
from tests.helpers.paths import REPO, ablate_cmd, free_port
from tests.helpers.sweeps import run_sweep

# Every test starts `ablate dashboard` as a process; the run_dir fixture runs a sweep first.
pytestmark = pytest.mark.multiprocess

SEEDS, HEATMAP_SEED = 2, 1
VARIANTS = ("baseline", "no_pe")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny sweep: 2 variants x 2 seeds, heatmaps (artifacts) for seed 1."""
    tmp = tmp_path_factory.mktemp("dashboard")
    write_spec(tmp, seeds=SEEDS, heatmap_seeds=[HEATMAP_SEED])
    proc = run_sweep(tmp, "--no-wandb")
    assert proc.returncode == 0, proc.stderr
    return tmp / "runs" / "tiny"


def get(url: str, timeout: float = 10) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.headers.get_content_type(), resp.read()


def get_json(url: str) -> Any:
    status, _, body = get(url)
    assert status == 200, url
    return json.loads(body)


@pytest.fixture
def server(run_dir: Path, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """``ablate dashboard RUN --port P`` as a real process, once it answers; stopped in any case."""
    port = free_port()
    log = tmp_path / "dashboard.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ablate_cmd("dashboard", str(run_dir), "--port", str(port)),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Ctrl-C must reach Python even when pytest itself runs with SIGINT ignored.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"dashboard exited {proc.returncode}:\n{log.read_text()}"
            try:
                get(f"{base}/api/meta", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, f"no answer in 60 s:\n{log.read_text()}"
                time.sleep(0.5)
        yield base, proc, log
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.server
def test_dashboard_serves_the_study_trials_and_heatmaps(
    server: tuple[str, subprocess.Popen, Path], run_dir: Path
) -> None:
    base, proc, log = server
    studies = get_json(f"{base}/api/studies")["study_summaries"]
    by_name = {s["study_name"]: s for s in studies}
    assert "tiny" in by_name, by_name.keys()
    study_id = by_name["tiny"]["study_id"]

    detail = get_json(f"{base}/api/studies/{study_id}")
    trials = detail["trials"]
    assert len(trials) == len(VARIANTS) * SEEDS
    cells = set()
    for t in trials:
        params = {p["name"]: p["param_external_value"] for p in t["params"]}
        assert set(params) == {"variant", "seed"}
        cells.add((params["variant"], int(params["seed"])))
        assert t["state"] == "Complete"
        attrs = {a["key"] for a in t["user_attrs"]}
        assert {"cell", "test/acc", "diverged", "wall_s"} <= attrs and "config" not in attrs
        files = sorted(a["filename"] for a in t["artifacts"])
        if int(params["seed"]) == HEATMAP_SEED:
            assert {"layer0.png", "layer1.png", "attention.npz", "heads.json", "config.yaml"} <= set(files)
        else:
            assert files == ["config.yaml"]
    assert cells == {(v, s) for v in VARIANTS for s in range(SEEDS)}

    # A heatmap PNG comes back through the dashboard's artifact route.
    t = next(t for t in trials if any(a["filename"] == "layer0.png" for a in t["artifacts"]))
    png = next(a for a in t["artifacts"] if a["filename"] == "layer0.png")
    status, ctype, body = get(f"{base}/artifacts/{study_id}/{t['trial_id']}/{png['artifact_id']}")
    assert (status, ctype) == (200, "image/png") and body.startswith(b"\x89PNG")

    status, ctype, body = get(f"{base}/dashboard/")
    assert (status, ctype) == (200, "text/html") and b"Optuna Dashboard" in body

    # `/` is the review page: the report's verdict, under a link to the study's trials.
    status, ctype, body = get(f"{base}/")
    verdict = json.loads((run_dir / "summary.json").read_text())["verdicts"]["no_pe"]
    assert (status, ctype) == (200, "text/html") and html.escape(verdict).encode() in body
    assert f"href='/dashboard/studies/{study_id}/trials'".encode() in body
    assert log.read_text().startswith(f"review page for 'tiny': {base}/\n"), log.read_text()

    # Ctrl-C stops the server cleanly.
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 30 s after SIGINT:\n{log.read_text()}")
    assert rc == 130 and "Traceback" not in log.read_text(), log.read_text()


def test_port_in_use_is_a_usage_error(run_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            ablate_cmd("dashboard", str(run_dir), "--port", str(port)),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2 and f"port {port} is in use; pass --port" in proc.stderr


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "nonexistent", "not a sweep run folder: no spec.json"),
        (lambda tmp: tmp, "not a sweep run folder: no spec.json"),
        (lambda tmp: (tmp / "spec.json").write_text('{"name": "tiny"}') and tmp, "no study.db in"),
    ],
    ids=["missing-folder", "folder-without-spec", "spec-without-study"],
)
def test_not_a_run_folder_exits_2(tmp_path: Path, make: Any, message: str) -> None:
    run_dir = make(tmp_path)
    proc = subprocess.run(
        ablate_cmd("dashboard", str(run_dir), "--port", str(free_port())),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and str(run_dir) in proc.stderr
