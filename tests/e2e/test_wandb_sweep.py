"""W&B sweeps: the generated sweep configuration, and the command line the agent runs.

No W&B server is reachable here, so the agent itself cannot run: the tests
expand the sweep's command with W&B's own expansion of ``${args_no_hyphens}``
and run it as ``wandb agent`` would, with W&B offline.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/sweeps/integrations/test_wandb_sweep.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from wandb.sdk.launch.sweeps.utils import create_sweep_command_args

from ablate.experiments.specs.spec_file import load_spec
from ablate.sweeps.integrations.wandb_sweep import sweep_config
from tests.unit.sweeps.integrations.test_wandb_sweep import write_spec


def agent_argv(command: list[str], params: dict[str, object]) -> list[str]:
    """The argv ``wandb agent`` builds (``Agent._command_run``), with this interpreter for ``python``."""
    args = create_sweep_command_args({"args": {k: {"value": v} for k, v in params.items()}})
    macros = {"env": ["/usr/bin/env"], "interpreter": [sys.executable], **args}
    argv: list[str] = []
    for chunk in command:
        argv += macros[chunk[2:-1]] if chunk.startswith("${") and chunk.endswith("}") else [chunk]
    return argv


@pytest.mark.multiprocess
def test_agent_command_runs_one_grid_point(tmp_path: Path) -> None:
    path = write_spec(tmp_path)
    spec = load_spec(path, ["trainer.log_every=2"], profile="cpu")
    config = sweep_config(spec, str(path), method="grid", profile="cpu", overrides=["trainer.log_every=2"])
    argv = agent_argv(config["command"], {"variant": "no_pe", "seed": 1})
    assert argv[-3:] == ["trainer.log_every=2", "variant=no_pe", "seed=1"]
    env = {**os.environ, "WANDB_MODE": "offline", "ABLATE_CACHE": os.environ["ABLATE_CACHE"]}
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

    (out,) = (tmp_path / "runs" / "tiny" / "wandb-sweep").iterdir()  # the default output folder
    assert out.name.startswith("no_pe-s1-")
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.0 <= metrics["test/acc"] <= 1.0 and metrics["steps"] == 3  # profile cpu: 3 steps
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert (cfg["model"]["pe"], cfg["seed"], cfg["trainer"]["log_every"]) == ("none", 1, 2)

    (run_dir,) = (out / "wandb").glob("offline-run-*")
    wandb_bin = Path(sys.executable).with_name("wandb")
    inspect = subprocess.run(
        [str(wandb_bin), "leet", "inspect", "--json", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    records = [json.loads(line) for line in inspect.stdout.splitlines() if line.startswith("{")]
    (run,) = [r["run"] for r in records if r.get("type") == "run"]
    assert (run["run_group"], run["display_name"], run["job_type"]) == ("tiny/no_pe", "no_pe-s1", "tiny")
