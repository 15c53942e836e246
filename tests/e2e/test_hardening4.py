"""Hardening, fourth round, with real sweeps: two plugins with one file name are both recorded and
an edit of either stops the study naming it; a plugin edited after the driver recorded it stops the
workers, and the driver says why in one line; a plugin fixed after its variant's cells all failed
runs again with --retry-failed in the same study."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.sweeps import run_sweep

NORM = """
from torch import nn
from ablate import components

@components.register("norm", "{name}")
class Norm(nn.LayerNorm):
    def __init__(self, cfg):
        super().__init__(cfg.d_model)
"""
ONE_LAYER = {**TINY_BASE, "model": {**TINY_BASE["model"], "n_layers": 1}}


def test_two_plugins_with_one_file_name_are_both_recorded_and_an_edit_of_either_stops_the_study(
    tmp_path: Path,
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "p.py").write_text(NORM.format(name=f"norm_{folder}"))
    variants = {"baseline": {}, "a": {"model.norm_layer": "norm_a"}, "b": {"model.norm_layer": "norm_b"}}
    spec = {"base": ONE_LAYER, "variants": variants, "plugins": ["a/p.py", "b/p.py"], "heatmap_seeds": [0]}
    write_spec(tmp_path, **spec, seeds=1)
    first = run_sweep(tmp_path, "--no-wandb")
    assert first.returncode == 0, first.stdout + first.stderr
    recorded = json.loads((tmp_path / "runs" / "tiny" / "spec.json").read_text())["plugin_sources"]
    assert sorted(recorded) == [str(tmp_path / "a" / "p.py"), str(tmp_path / "b" / "p.py")]
    b = tmp_path / "b" / "p.py"
    b.write_text(
        b.read_text().replace("super().__init__(cfg.d_model)", "super().__init__(cfg.d_model, eps=0.1)")
    )
    write_spec(tmp_path, **spec, seeds=2)  # more seeds: the same study, grown
    again = run_sweep(tmp_path, "--no-wandb")
    assert again.returncode == 2, again.stdout + again.stderr
    message = " ".join(again.stderr.split())
    assert f"plugin_sources.{b}: " in message and f"the code of the plugin {b} changed" in message
    assert f"complete or running cells of b (1) ran the old code of the plugin {b}" in message
    summary = json.loads((tmp_path / "runs" / "tiny" / "summary.json").read_text())
    assert summary["cells"]["total"] == 3  # no seed of b ran the new code


# Edits itself when a worker imports it: changed after the driver recorded it. Once only, so both
# workers see the same new code whichever imports first (two edits gave two reasons, under load),
# and atomically.
SELF_EDITING = """
import os
import sys
from pathlib import Path

if "--run-dir" in sys.argv and "EDITED = 1" not in Path(__file__).read_text().splitlines():
    Path(__file__ + f".{os.getpid()}").write_text(Path(__file__).read_text() + "\\nEDITED = 1\\n")
    os.replace(__file__ + f".{os.getpid()}", __file__)  # atomic: the other worker reads one or the other
""" + NORM.format(name="self_editing")


def test_a_plugin_edited_after_the_driver_recorded_it_stops_the_workers_with_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "norm.py").write_text(SELF_EDITING)
    variants = {"baseline": {}, "plugged": {"model.norm_layer": "self_editing"}}
    write_spec(tmp_path, base=ONE_LAYER, variants=variants, plugins=["norm.py"], seeds=1, heatmap_seeds=[0])
    swept = run_sweep(tmp_path, "--no-wandb", "--workers", "2")
    assert swept.returncode == 1, swept.stdout + swept.stderr
    out = " ".join((swept.stdout + swept.stderr).split())
    assert "2 worker(s) exited with errors; see" in out
    assert (
        "worker stopped: the study 'tiny' in" in out
        and f"the code of the plugin {tmp_path / 'norm.py'} changed" in out
    )
    assert out.count("worker stopped:") == 1  # the same reason once
    for log in (tmp_path / "runs" / "tiny" / "logs").iterdir():
        assert "Traceback" not in log.read_text() and "worker stopped: the study" in log.read_text()


FLAKY = NORM.format(name="flaky").replace(
    "super().__init__(cfg.d_model)", 'raise RuntimeError("a bug in __init__")'
)


def test_retry_failed_follows_a_plugin_fixed_after_its_cells_failed(tmp_path: Path) -> None:
    """Its __init__ raised, so every cell of the variant that uses it failed (named in one line);
    the baseline's completed without its code: the fixed plugin runs in the same study."""
    (tmp_path / "flaky.py").write_text(FLAKY)
    variants = {"baseline": {}, "flaky": {"model.norm_layer": "flaky"}}
    write_spec(tmp_path, base=ONE_LAYER, variants=variants, plugins=["flaky.py"], seeds=1, heatmap_seeds=[0])
    failed = run_sweep(tmp_path, "--no-wandb")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "1 cell(s) failed for good" in " ".join((failed.stdout + failed.stderr).split())
    log = (tmp_path / "runs" / "tiny" / "logs" / "worker-0.log").read_text()
    assert "the norm component model.norm_layer='flaky' (class Norm of" in log and "Traceback" not in log
    (tmp_path / "flaky.py").write_text(NORM.format(name="flaky"))  # the fix
    retried = run_sweep(tmp_path, "--no-wandb", "--retry-failed")
    out = " ".join((retried.stdout + retried.stderr).split())
    assert retried.returncode == 0, out
    assert (
        f"the plugin {tmp_path / 'flaky.py'} changed since the study ran; the variants that use it (flaky)"
        in out
    )
    assert "retrying 1 cell(s) that had failed for good: flaky/s0" in out and "2/2 cells complete" in out
