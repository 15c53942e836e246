"""``ablate search``: the search block's validation, per-variant spaces, pruning, exactly
``trials`` trials per variant with two workers, resume, and ``--then-evaluate``.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/drivers/test_search.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.artifacts import FileSystemArtifactStore
from optuna.trial import TrialState

from ablate.sweeps.ledger.storage import open_storage, sqlite_url
from ablate.sweeps.ledger.study_views import trial_config
from tests.helpers.paths import ablate_cmd
from tests.unit.sweeps.drivers.test_search import BASE, RAW, SEARCH


def run_search(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ablate_cmd(
            "search", "tiny.yaml", "--runs", "runs", "--no-wandb", "--heartbeat", "1", "--grace", "3", *args
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def trials_of(storage, variant: str) -> list:
    return optuna.load_study(study_name=f"tiny.search.{variant}", storage=storage).get_trials()


@pytest.mark.multiprocess
def test_search_prunes_counts_exactly_evaluates_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(RAW))
    proc = run_search(tmp_path, "--workers", "2", "--then-evaluate")
    assert proc.returncode == 0, proc.stderr[-3000:]
    storage = open_storage(sqlite_url(tmp_path / "runs" / "tiny-search" / "study.db"))
    artifacts = FileSystemArtifactStore(str(tmp_path / "runs" / "tiny-search" / "artifacts"))
    states = {}
    for variant in RAW["variants"]:
        trials = trials_of(storage, variant)
        states[variant] = [t.state for t in trials]
        # Two workers, five trials each: never a sixth, none lost.
        assert len(trials) == 5 and all(
            s in (TrialState.COMPLETE, TrialState.PRUNED) for s in states[variant]
        )
        pruned = [t for t in trials if t.state == TrialState.PRUNED]
        for t in pruned:  # pruned during training, on validation values only
            assert t.intermediate_values and "val/acc" not in t.user_attrs
        # optuna-dashboard: the objective is named; a finished trial's attributes are scalars
        # (each metric, the variant's overrides) and its config is the config.yaml artifact.
        study = optuna.load_study(study_name=f"tiny.search.{variant}", storage=storage)
        assert study.metric_names == ["val/loss"]
        for t in (t for t in trials if t.state == TrialState.COMPLETE):
            assert t.value == t.user_attrs["val/loss"] and "metrics" not in t.user_attrs
            assert all(isinstance(v, str | int | float | bool) for v in t.user_attrs.values())
            assert {k for k in t.user_attrs if k.startswith("override.")} == {
                f"override.{k}" for k in RAW["variants"][variant]
            }
            cfg = trial_config(t, storage, artifacts)
            assert cfg["optim"]["lr"] == t.params["optim.lr"] and cfg["seed"] == SEARCH.get("seed", 0)
    assert sum(s.count(TrialState.PRUNED) for s in states.values()) >= 1

    summary = json.loads((tmp_path / "runs" / "tiny-search" / "search.json").read_text())
    best = {v: e["best_params"] for v, e in summary["variants"].items()}
    assert set(best["no_warmup"]) == {"optim.lr"}
    # --then-evaluate ran every seed with each variant's best parameters.
    tuned_dir = tmp_path / "runs" / "tiny-tuned"
    for variant in RAW["variants"]:
        for seed in (0, 1):
            cfg = yaml.safe_load((tuned_dir / "cells" / f"{variant}-s{seed}" / "config.yaml").read_text())
            assert cfg["optim"]["lr"] == pytest.approx(best[variant]["optim.lr"])
            assert cfg["seed"] == seed
    report = json.loads((tuned_dir / "summary.json").read_text())
    assert report["cells"]["complete"] == 4
    assert report["tuned"]["no_warmup"]["optim.lr"] == pytest.approx(best["no_warmup"]["optim.lr"])
    assert "Tuned parameters" in (tuned_dir / "report.md").read_text()

    # Rerunning resumes: the finished trials are kept and only the difference runs.
    before = {v: [t.params for t in trials_of(storage, v)] for v in RAW["variants"]}
    more = run_search(tmp_path, "--trials", "6")
    assert more.returncode == 0, more.stderr[-3000:]
    for variant in RAW["variants"]:
        trials = trials_of(storage, variant)
        assert len(trials) == 6 and [t.params for t in trials[:5]] == before[variant]


@pytest.mark.multiprocess
def test_killed_search_worker_then_resume(tmp_path: Path) -> None:
    """kill -9 a search worker mid-trial: finished trials are kept, the killed one is asked again."""
    raw = {**RAW, "base": {**BASE, "trainer": {"max_steps": 150, "log_every": 50}}}
    raw["search"] = {**SEARCH, "trials": 3, "pruner": "none"}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(raw))
    run_dir = tmp_path / "runs" / "tiny-search"
    args = ["--variants", "baseline", "--heartbeat", "1", "--grace", "3", "--no-wandb", "--runs", "runs"]
    driver = subprocess.Popen(
        ablate_cmd("search", "tiny.yaml", *args), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    storage = None
    killed = None
    deadline = time.time() + 240
    while time.time() < deadline and killed is None:
        time.sleep(0.5)
        if not (run_dir / "spec.json").exists():  # written once the studies exist
            continue
        storage = storage or open_storage(sqlite_url(run_dir / "study.db"))
        trials = trials_of(storage, "baseline")
        running = [t.number for t in trials if t.state == TrialState.RUNNING]
        # One of three done: a trial is still waiting even if this one ends while we look.
        if running and sum(t.state == TrialState.COMPLETE for t in trials) == 1:
            children = subprocess.run(["pgrep", "-P", str(driver.pid)], capture_output=True, text=True)
            for pid in children.stdout.split():  # the driver's worker processes
                os.kill(int(pid), signal.SIGKILL)
            killed = running[0]
    assert killed is not None, "no trial was running in time"
    driver.communicate(timeout=60)
    before = {t.number: t.params for t in trials_of(storage, "baseline") if t.state == TrialState.COMPLETE}

    proc = subprocess.run(
        ablate_cmd("search", "tiny.yaml", *args), cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = trials_of(storage, "baseline")
    complete = {t.number: t.params for t in after if t.state == TrialState.COMPLETE}
    assert len(complete) == 3 and all(complete[n] == p for n, p in before.items())  # kept
    assert [t.state for t in after if t.number == killed] == [TrialState.FAIL]  # failed by heartbeat
