"""``--launcher local|slurm`` and ``--slurm``: the options are checked before anything is
written, and the submitit path runs a sweep end to end (``--launcher local``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.errors import ConfigError
from ablate.sweeps.drivers.launcher import check_launcher, parse_slurm
from tests.helpers.configs import write_spec
from tests.helpers.forked import run_forked


def test_parse_slurm_takes_submitit_keys() -> None:
    parsed = parse_slurm("partition=gpu,gpus_per_node=1,timeout_min=120,array_parallelism=8")
    assert parsed == {"partition": "gpu", "gpus_per_node": 1, "timeout_min": 120, "array_parallelism": 8}


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (
            ["--launcher", "slurm", "--slurm", "partiton=gpu"],
            ["unknown key 'partiton'", "partition", "timeout_min"],
        ),
        (["--launcher", "slurm", "--slurm", "gpu"], ["'gpu' is not KEY=VALUE", "valid keys"]),
        (["--launcher", "slurm", "--slurm", "setup=x"], ["unknown key 'setup'"]),
        (["--launcher", "local", "--slurm", "partition=gpu"], ["--slurm is for --launcher slurm"]),
        (["--launcher", "slurm"], ["the run folder", "/tmp", "shared file system"]),
        (["--launcher", "local", "--storage", "sqlite:///:memory:"], ["in-memory", "cannot share"]),
        (["--launcher", "cluster"], ["invalid choice", "slurm"]),
    ],
    ids=[
        "unknown-key",
        "not-key-value",
        "list-key",
        "slurm-without-slurm",
        "node-local",
        "memory",
        "bad-launcher",
    ],
)
def test_bad_launcher_options_exit_2(tmp_path: Path, args: list[str], expect: list[str]) -> None:
    write_spec(tmp_path, seeds=1, heatmap_seeds=[0])
    ran = run_forked(["sweep", "tiny.yaml", "--runs", "out", "--no-wandb", *args], tmp_path)
    message = " ".join(ran.stderr.split())
    assert ran.returncode == 2, ran.stderr
    assert all(part in message for part in expect), message
    assert not (tmp_path / "out").exists()


def test_slurm_needs_a_shared_storage_and_sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = Path("/work/shared-looking")  # not under a node-local folder
    with pytest.raises(ConfigError, match="--storage file /tmp/s.log is under /tmp"):
        check_launcher("slurm", None, shared / "run", Path("/tmp/s.log"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no srun
    with pytest.raises(ConfigError, match="no sbatch/srun here"):
        check_launcher("slurm", "partition=gpu", shared / "run", shared / "s.log")


def test_a_node_local_run_folder_is_refused_naming_the_flags_sweep_takes() -> None:
    """``sweep`` and ``search`` take ``--runs`` (``--out`` is ``train``'s): the advice names it."""
    with pytest.raises(ConfigError) as refused:
        check_launcher("slurm", None, Path("/tmp/runs/tiny"), None)
    assert "(--runs, --storage journal:" in str(refused.value) and "--out" not in str(refused.value)
