"""No traceback, no silent wrong run, no false success (issue 13), for the commands that run or read
sweeps: exit 1 with the counts when a cell failed or is missing, workers that run exactly the
driver's code, study files that are Optuna studies or refused, storage URLs and numeric options
checked before anything is made, wrong folders named, and output paths that are files.

The exit-2 catalog runs ``cli.main`` in a forked child (``tests/unit/cli/test_bad_inputs.py``'s harness)
and checks that the working folder is byte for byte what it was; the three "must fix first"
items run real ``ablate`` processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from ablate.errors import ConfigError
from ablate.experiments.specs.spec_file import load_spec
from ablate.files import atomic_dir, remove_stale_partials, write_json
from ablate.sweeps.drivers.loop import worker_command
from ablate.sweeps.drivers.outcome import Outcome, final_line, grid_outcome, search_outcome
from ablate.sweeps.integrations.wandb_sweep import sweep_config
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.identity import changed_keys
from ablate.sweeps.ledger.storage import sqlite_url
from tests.helpers.configs import TINY_BASE, TINY_YAML, write_spec
from tests.helpers.forked import run_forked
from tests.helpers.rows import cell_row

# --- helpers that build folders ---------------------------------------------------------------


def make_study(tmp_path: Path, **spec_extra: object) -> Path:
    """``runs/tiny`` as a sweep leaves it before any cell ran: spec.json and a study (no training)."""
    spec = load_spec(write_spec(tmp_path, seeds=1, heatmap_seeds=[0], **spec_extra))
    run_dir = tmp_path / "runs" / "tiny"
    run_dir.mkdir(parents=True)
    store = open_store(spec, sqlite_url(run_dir / "study.db"), create=True)
    store.storage.engine.dispose()  # no pooled connection crosses the fork
    write_json(run_dir / "spec.json", spec.to_dict())
    return run_dir


def other_study(tmp_path: Path, name: str) -> None:
    """``runs/tiny`` with a valid spec.json and a study.db that holds only the study ``name``."""
    run_dir = make_study(tmp_path)
    (run_dir / "study.db").unlink()
    import optuna

    optuna.create_study(study_name=name, storage=sqlite_url(run_dir / "study.db"))


def foreign_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with a digest of its bytes (folders as "dir")."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass
class Case:
    argv: list[str]
    expect: list[str]
    files: dict[str, str | None] = field(default_factory=dict)  # None makes a folder
    setup: Callable[[Path], object] | None = None


SPEC = {
    "tiny.yaml": yaml.safe_dump(
        {
            "name": "tiny",
            "base": TINY_BASE,
            "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
            "seeds": 1,
            "heatmap_seeds": [0],
        }
    )
}
SWEEP = ["sweep", "tiny.yaml", "--runs", "runs", "--no-wandb"]
EMPTY_SPEC_JSON = {"runs/tiny": None, "runs/tiny/spec.json": "{}"}


CASES: dict[str, Case] = {
    # --- numeric options: one range table (cli/checks.py) -----------------------------
    "heartbeat-zero": Case(
        [*SWEEP, "--heartbeat", "0"], ["--heartbeat=0 is out of range", "[1, 3600]"], SPEC
    ),
    "grace-negative": Case([*SWEEP, "--grace", "-1"], ["--grace=-1 is out of range", "[2, 86400]"], SPEC),
    "grace-within-heartbeat": Case(
        [*SWEEP, "--heartbeat", "10", "--grace", "5"], ["--grace=5 must be longer than --heartbeat=10"], SPEC
    ),
    "workers-zero": Case([*SWEEP, "--workers", "0"], ["--workers=0 is out of range", "[1, 256]"], SPEC),
    "search-trials-zero": Case(
        ["search", "tiny.yaml", "--trials", "0"], ["--trials=0 is out of range", "[1, 100000]"], SPEC
    ),
    "power-above-one": Case(
        ["power", "runs/tiny", "--power", "1.5"], ["--power=1.5 is out of range", "(0, 1)"]
    ),
    "delta-not-finite": Case(["power", "runs/tiny", "--delta", "inf"], ["--delta=inf is out of range"]),
    "port-zero": Case(["dashboard", "runs/tiny", "--port", "0"], ["--port=0 is out of range", "[1, 65535]"]),
    # --- storage URLs: parsed and their driver imported before a run folder exists -----------
    "storage-not-a-url": Case([*SWEEP, "--storage", "notaurl"], ["'notaurl' is not a database URL"], SPEC),
    "storage-unknown-database": Case(
        [*SWEEP, "--storage", "nosuchdb://h/x"], ["'nosuchdb://h/x' is not a database URL"], SPEC
    ),
    "storage-driver-missing": Case(
        [*SWEEP, "--storage", "mysql+mysqldb://u:secret@localhost/db"],
        ["mysql driver 'mysqldb' is not installed", "MySQLdb", "u:***@localhost"],
        SPEC,
    ),
    "storage-in-memory": Case([*SWEEP, "--storage", "sqlite://"], ["in-memory SQLite database"], SPEC),
    "storage-file-missing": Case(
        ["report", "runs/tiny", "--storage", "sqlite:///nothere.db"],
        ["no study file nothere.db"],
        setup=make_study,
    ),
    # --- study files: an Optuna study, or refused ---------------------------------------------
    "study-db-empty": Case(
        SWEEP,
        ["runs/tiny/study.db is empty (0 bytes)", "move it away"],
        {**SPEC, "runs/tiny": None, "runs/tiny/study.db": ""},
    ),
    "study-db-garbage": Case(
        SWEEP,
        ["runs/tiny/study.db is not a SQLite database"],
        {**SPEC, "runs/tiny": None, "runs/tiny/study.db": "hello " * 200},
    ),
    "study-db-another-database": Case(
        SWEEP,
        ["runs/tiny/study.db is a SQLite database without Optuna's tables"],
        {**SPEC, "runs/tiny": None},
        setup=lambda tmp: foreign_sqlite(tmp / "runs/tiny/study.db"),
    ),
    "report-study-db-empty": Case(
        ["report", "runs/tiny"],
        ["study.db is empty (0 bytes)"],
        setup=lambda tmp: (make_study(tmp) / "study.db").write_bytes(b""),
    ),
    # --- a rerun with other settings names the keys that changed ------------------------------
    "rerun-other-override": Case(
        [*SWEEP, "model.d_ff=64"],
        ["was run with a different base config", "base.model.d_ff: 32 -> 64"],
        setup=make_study,
    ),
    "rerun-other-direction": Case(
        SWEEP,
        ['direction: "maximize" -> "minimize"'],
        setup=lambda tmp: (
            make_study(tmp),
            write_spec(tmp, seeds=1, heatmap_seeds=[0], direction="minimize", metric="test/loss"),
        ),
    ),
    "rerun-other-metric": Case(
        SWEEP,
        ['metric: "test/acc" -> "val/acc"'],
        setup=lambda tmp: (make_study(tmp), write_spec(tmp, seeds=1, heatmap_seeds=[0], metric="val/acc")),
    ),
    # --- wrong folders ------------------------------------------------------------------------
    "report-spec-json-empty-object": Case(
        ["report", "runs/tiny"],
        ["spec.json is not the spec.json of a sweep run folder", "missing or wrong name, base"],
        EMPTY_SPEC_JSON,
    ),
    "report-spec-json-not-json": Case(
        ["report", "runs/tiny"],
        ["runs/tiny/spec.json is not valid JSON", "line 1"],
        {"runs/tiny": None, "runs/tiny/spec.json": "{name: tiny"},
    ),
    "report-spec-json-a-list": Case(
        ["report", "runs/tiny"],
        ["spec.json holds a JSON list"],
        {"runs/tiny": None, "runs/tiny/spec.json": "[1, 2]"},
    ),
    "report-no-such-folder": Case(
        ["report", "nowhere"], ["nowhere is not a sweep run folder: no spec.json (no such folder)"]
    ),
    "report-a-file": Case(
        ["report", "afile"], ["afile is not a sweep run folder", "(not a folder)"], {"afile": "x"}
    ),
    "report-no-study-in-db": Case(
        ["report", "runs/tiny"],
        ["no study 'tiny' in", "it holds: other"],
        setup=lambda tmp: other_study(tmp, "other"),
    ),
    "report-search-folder": Case(
        ["report", "runs/tiny"],
        ["no study 'tiny'", "an `ablate search` folder"],
        setup=lambda tmp: other_study(tmp, "tiny.search.baseline"),
    ),
    "power-spec-json-empty-object": Case(
        ["power", "runs/tiny"], ["missing or wrong name, base"], EMPTY_SPEC_JSON
    ),
    "aggregate-spec-json-not-json": Case(
        ["aggregate", "runs/tiny", "runs/other"],
        ["runs/tiny/spec.json is not valid JSON"],
        {"runs/tiny": None, "runs/tiny/spec.json": "", "runs/other": None},
    ),
    "dashboard-spec-json-empty-object": Case(
        ["dashboard", "runs/tiny"], ["missing or wrong name"], EMPTY_SPEC_JSON
    ),
    "compare-summary-empty-object": Case(
        ["compare", "a", "b"],
        ["a/summary.json is not the summary.json", "variants, metric, direction"],
        {"a": None, "a/summary.json": "{}", "b": None, "b/summary.json": "{}"},
    ),
    "compare-no-summary": Case(
        ["compare", "a", "b"], ["a is not a sweep run folder with a report: no summary.json"], {"a": None}
    ),
    "reproduce-relative-path": Case(
        ["reproduce", "../order"], ["no preset '../order' (a path", "ablate sweep"]
    ),
    "reproduce-config-file": Case(
        ["reproduce", "experiments/configs/order.yaml"],
        ["no preset 'experiments/configs/order.yaml' (a path"],
    ),
    # --- paths --------------------------------------------------------------------------------
    "sweep-out-is-a-file": Case(
        ["sweep", "tiny.yaml", "--runs", "afile"],
        ["output folder afile/tiny: afile is a file"],
        {**SPEC, "afile": "x"},
    ),
    "sweep-out-under-proc": Case(
        ["sweep", "tiny.yaml", "--runs", "/proc/ablate-hardening"],
        ["cannot create output folder /proc/ablate-hardening/tiny"],
        SPEC,
    ),
    "train-out-is-a-file": Case(
        ["train", "tiny.yaml", "--out", "afile"],
        ["output folder afile is a file"],
        {"tiny.yaml": TINY_YAML, "afile": "x"},
    ),
    "compare-out-is-a-file": Case(
        ["compare", "a", "a", "--out", "afile"],
        ["output folder afile: afile is a file"],
        {
            "a": None,
            "a/summary.json": json.dumps({"variants": {}, "metric": "test/acc", "direction": "maximize"}),
            "afile": "x",
        },
    ),
    "spec-is-a-folder": Case(["sweep", "adir"], ["adir is a folder, not a YAML file"], {"adir": None}),
    "train-config-is-a-folder": Case(
        ["train", "adir"], ["adir is a folder, not a YAML file"], {"adir": None}
    ),
}


def prepare_case(tmp_path: Path, case: Case) -> None:
    for name, content in case.files.items():
        if content is None:
            (tmp_path / name).mkdir(parents=True, exist_ok=True)
        else:
            (tmp_path / name).write_text(content)
    if case.setup is not None:
        case.setup(tmp_path)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, case: Case) -> None:
    prepare_case(tmp_path, case)
    before = snapshot(tmp_path)
    ran = run_forked(case.argv, tmp_path)
    assert ran.returncode == 2, f"exit {ran.returncode}\nstdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"
    assert "Traceback" not in ran.stderr
    message = " ".join(ran.stderr.split())  # rich may wrap long lines
    for part in case.expect:
        assert part in message, f"{part!r} not in stderr:\n{ran.stderr}"
    assert "identity" not in message  # a refusal names keys, not hashes
    assert snapshot(tmp_path) == before


# --- process level: the "must fix first" items --------------------------------------------------


# --- units --------------------------------------------------------------------------------------


def test_a_refused_storage_leaves_no_run_folder(tmp_path: Path) -> None:
    """A server that cannot be reached fails after the URL check: the run folder made for it goes."""
    from ablate.sweeps.drivers.grid import sweep
    from ablate.sweeps.drivers.options import RunOptions

    spec = load_spec(write_spec(tmp_path, seeds=1, heatmap_seeds=[0]))
    with pytest.raises(ConfigError, match="cannot create the study file .* not found"):
        sweep(
            spec,
            tmp_path / "deep" / "runs" / "tiny",
            RunOptions(storage=f"sqlite:///{tmp_path}/nothere/x.db", use_wandb=False),
        )
    assert not (tmp_path / "deep").exists()


def test_stale_partial_folders_of_dead_processes_are_removed(tmp_path: Path) -> None:
    """``kill -9`` leaves ``.out.partial-PID@HOST.*``; the next run of the same --out or --runs removes it
    when PID is gone, and keeps a live process's."""
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    stale = tmp_path / f".out.partial-{dead.pid}@{host}.abc123"
    live = tmp_path / f".out.partial-{os.getpid()}@{host}.def456"
    other_host = tmp_path / f".out.partial-{dead.pid}@not-{host}.ghi789"
    for p in (stale, live, other_host):
        p.mkdir()
        (p / "metrics.json").write_text("{}")
    with atomic_dir(tmp_path / "out") as tmp:
        assert tmp.name.startswith(f".out.partial-{os.getpid()}@{host}.")
        (tmp / "metrics.json").write_text("{}")
    assert not stale.exists() and live.exists() and other_host.exists()
    assert (tmp_path / "out" / "metrics.json").is_file()
    assert remove_stale_partials(tmp_path / "out") == []


def test_outcome_counts_and_exit_line() -> None:
    rows = [
        cell_row("baseline", 0),
        cell_row("no_pe", 0, state="failed", error="DataError: bad"),
        cell_row("baseline", 1, state="waiting"),
        cell_row("no_pe", 1, state="missing"),
    ]
    o = grid_outcome(rows)
    assert (o.total, o.complete, o.failed, o.missing) == (4, 1, 1, 2)
    assert o.first_error == "no_pe/s0: DataError: bad"
    assert final_line([("", o)]) == ("1/4 cells complete; 1 failed, 2 missing: exit 1", 1)
    done = Outcome(total=4, complete=4, failed=0)
    assert final_line([("", done)]) == ("4/4 cells complete: exit 0", 0)
    assert final_line([("order", done), ("lookup", o)])[0].startswith(
        "order: 4/4 cells complete; lookup: 1/4"
    )
    search = {
        "trials": 3,
        "variants": {
            "a": {"complete": 2, "pruned": 1, "errors": 1},
            "b": {"complete": 0, "pruned": 1, "errors": 3},
        },
    }
    s = search_outcome(search)
    assert (s.total, s.complete, s.failed, s.missing) == (6, 4, 2, 0)


def test_changed_keys_name_the_settings() -> None:
    old = {
        "base": {"optim": {"lr": 0.001}},
        "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
        "metric": "test/acc",
        "direction": "maximize",
    }
    new = {**old, "base": {"optim": {"lr": 0.01}}, "variants": {"baseline": {}}, "direction": "minimize"}
    assert changed_keys(old, new) == [
        "base.optim.lr: 0.001 -> 0.01",
        'direction: "maximize" -> "minimize"',
        'variants.no_pe.model.pe: "none" -> "(absent)"',
    ]
    assert changed_keys(old, json.loads(json.dumps(old))) == []


def test_workers_and_wandb_agents_do_not_import_from_the_current_folder(tmp_path: Path) -> None:
    for module in ("ablate.sweeps.drivers.worker", "ablate.sweeps.drivers.search_worker"):
        cmd = worker_command(module, ["--run-dir", "x"])
        assert cmd[:2] == [sys.executable, "-P"] and Path(cmd[2]).is_absolute() and cmd[3] == module
    spec = load_spec(write_spec(tmp_path, seeds=1, heatmap_seeds=[0]))
    command = sweep_config(spec, "tiny.yaml", method="grid", profile=None, overrides=[])["command"]
    assert command[1:5] == ["${interpreter}", "-P", "-m", "ablate"]


def test_the_catalog_covers_every_class() -> None:
    assert len(CASES) >= 40


def test_a_study_file_deleted_or_replaced_mid_run_is_no_success(tmp_path: Path) -> None:
    """The processes of a sweep go on writing to a study file that was deleted or replaced (they
    hold it open), so its counts are no success: the outcome says so and exits 1."""
    from ablate.sweeps.ledger.study_file import create_study_file, file_identity, file_lost

    path = tmp_path / "study.db"
    create_study_file(path)
    url = sqlite_url(path)
    opened = file_identity(url)
    assert file_lost(url, opened) is None
    path.rename(tmp_path / "old.db")  # kept, as the sweep's open connections keep its inode
    assert "was deleted while the sweep ran" in (file_lost(url, opened) or "")
    create_study_file(path)
    assert "was replaced while the sweep ran" in (file_lost(url, opened) or "")
    lost = Outcome(total=4, complete=4, failed=0, lost="the study file ... was deleted")
    assert final_line([("", lost)]) == ("4/4 cells complete, then the study file was lost: exit 1", 1)


def test_ctrl_c_during_a_claim_fails_the_claimed_work() -> None:
    """SIGINT landing inside a claim (after its compare-and-set) is deferred until the work is
    where the loop can mark it failed; a claim that holds nothing and waits stops at once."""
    import logging
    import os
    import signal

    from ablate.sweeps.drivers.loop import idle_wait, work_loop

    failed: list[tuple[str, str | None]] = []

    def claim_then_interrupted() -> str:
        os.kill(os.getpid(), signal.SIGINT)  # delivered now, inside the claim
        return "cell-a"

    def run(work: str) -> int:
        raise AssertionError("an interrupted claim must not run its work")

    log = logging.getLogger("test")
    sigterm = signal.getsignal(signal.SIGTERM)  # the loop ignores both once interrupted: restored below
    try:
        with pytest.raises(KeyboardInterrupt):
            work_loop(claim_then_interrupted, run, lambda w, e: failed.append((w, e)), describe=str, log=log)
        assert failed == [("cell-a", None)]  # None: interrupted, not an error
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second Ctrl-C cannot stop the marking
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, sigterm)

    def claim_waiting() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0.2)  # SIGALRM -> SIGINT below, while waiting
        idle_wait(30)
        raise AssertionError("idle_wait must not sleep through Ctrl-C")

    signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    try:
        with pytest.raises(KeyboardInterrupt):
            work_loop(claim_waiting, run, lambda w, e: failed.append((w, e)), describe=str, log=log)
    finally:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert failed == [("cell-a", None)]  # nothing was claimed, nothing to mark
