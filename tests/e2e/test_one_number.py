"""One cell, one number: a (config, seed) cell's metrics depend on nothing else.

Not on the stack it trains in (its size, its other seeds, its position), not on the
entry point (``ablate train``, a sweep worker of any worker count, the W&B agent's
``train --spec``), not on the process. A diverged member reports what the single run reports.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/experiments/runner/test_one_number.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO, SST2, ablate_cmd
from tests.unit.experiments.runner.test_one_number import TINY

METRICS = ("val/acc", "val/loss", "test/acc", "test/f1", "test/loss")


TASKS = {
    "order": {},
    "lookup": {"data": {"task": "lookup", "n_keys": 4, "n_values": 5, "n_pairs": 3}},
    "listops": {"data": {"task": "listops", "min_len": 5, "max_len": 15}},
    "text": {
        "data": {
            "task": "text",
            "source": str(SST2),
            "text_column": "sentence",
            "label_column": "label",
            "tokenizer": "word",
            "vocab_size": 500,
            "max_len": 24,
        }
    },
}


TRAIN_ALL = """
import json, sys
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.runner.cells import run_cells
out = {}
for name, raw in json.loads(sys.argv[1]).items():
    cfg = TrainConfig.from_dict(raw)
    out[name] = [r.to_dict() for r in run_cells(cfg, [3, 4])]
print(json.dumps(out))
"""


@pytest.mark.multiprocess
@pytest.mark.parametrize("seed_parallel", [1, 2])
def test_train_sweep_and_agent_give_the_same_cell(tmp_path: Path, seed_parallel: int) -> None:
    base = {**TINY, "trainer": {**TINY["trainer"], "seed_parallel": seed_parallel}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(base))
    spec = {"name": "one", "base": "tiny.yaml", "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({**spec, "seeds": [0, 1, 2]}))

    def run(*args: str) -> None:
        proc = subprocess.run(ablate_cmd(*args), cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]

    run("train", "tiny.yaml", "seed=1", "model.pe=none", "--out", "train", "--no-progress")
    run("train", "--spec", "spec.yaml", "variant=no_pe", "seed=1", "--out", "agent", "--no-progress")
    run("sweep", "spec.yaml", "--workers", "2", "--runs", "w2", "--no-wandb")
    train_dir = "train" if seed_parallel == 1 else "train/seed1"  # seed_parallel=2 trains seeds 1 and 2
    got = {
        where: json.loads((tmp_path / where / "metrics.json").read_text())
        for where in (train_dir, "agent", "w2/one/cells/no_pe-s1")
    }
    train = got.pop(train_dir)
    assert train["steps"] == 6
    for where, metrics in got.items():
        assert {m: metrics[m] for m in METRICS} == {m: train[m] for m in METRICS}, where


@pytest.mark.multiprocess
@pytest.mark.parametrize("seed_parallel", [1, 2])
def test_every_task_reproduces_across_processes(seed_parallel: int) -> None:
    configs = {}
    for name, extra in TASKS.items():
        data = {**TINY["data"], **extra.get("data", {})}
        trainer = {**TINY["trainer"], "seed_parallel": seed_parallel}
        configs[name] = {**TINY, "data": data, "trainer": trainer}
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", TRAIN_ALL, json.dumps(configs)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert set(first) == set(TASKS)
    for name in TASKS:
        a = [{k: v for k, v in r.items() if k != "wall_s"} for r in first[name]]
        b = [{k: v for k, v in r.items() if k != "wall_s"} for r in second[name]]
        assert a == b, name
        assert a[0]["test/loss"] != a[1]["test/loss"], name  # the seeds really train
