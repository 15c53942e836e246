"""Reading a run folder never imports its plugins (sweeps/ledger/run_folder.py ``open_run``, a
RecordedSpec): a study with a plugin norm, built without training as a worker records it, is
reported, powered, compared, shown on the dashboard and reviewed for W&B with its plugin file
deleted, and with it present but writing a marker when imported (the marker never appears).
Training and ``verify`` import it: ``verify`` first checks its code against the recorded hash."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from optuna.trial import TrialState

from ablate.cli.parser import main
from ablate.errors import ConfigError
from ablate.experiments.specs.spec import RecordedSpec
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json
from ablate.lit_modules.components import plugins
from ablate.lit_modules.model.kinds import TABLES
from ablate.sweeps.drivers import verify
from ablate.sweeps.integrations.dashboard import open_review
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.run_folder import open_run
from ablate.sweeps.ledger.storage import sqlite_url
from ablate.sweeps.ledger.study_views import result_attrs, set_attrs
from tests.helpers.configs import TINY_BASE

NORM = "reading_test_norm"  # registered once per process, by the module-scoped plugin below
PLUGIN = f'''"""A norm of the tests' own."""
import torch
from torch import nn

from ablate import components


@components.register("norm", "{NORM}")
class Norm(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cfg.d_model))

    def forward(self, x):  # (B, L, D) -> (B, L, D)
        return self.weight * x / x.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()
'''
MARKER = "from pathlib import Path\nPath(__file__).with_name('imported').touch()\n"
VALUES = {"baseline": [0.90, 0.92, 0.95, 0.91], "plugged": [0.80, 0.83, 0.79, 0.82]}


def make_study(folder: Path, name: str) -> None:
    """The run folder ``folder / name`` of a 2 x 4 study with the plugin ``folder / "norm.py"``,
    its cells completed with VALUES (spec.json as the sweep writes it), not trained."""
    raw = {
        "name": name,
        "plugins": [str(folder / "norm.py")],
        "base": TINY_BASE,
        "variants": {"baseline": {}, "plugged": {"model.norm_layer": NORM}},
        "seeds": 4,
    }
    spec = spec_from_dict(raw)
    run = folder / name
    run.mkdir()
    write_json(run / "spec.json", spec.to_dict())
    store = open_store(spec, sqlite_url(run / "study.db"), create=True)
    store.ensure_cells()
    while (trial := store.claim()) is not None:
        variant, seed = trial.params["variant"], trial.params["seed"]
        value = VALUES[variant][seed]
        attrs = result_attrs({"test/acc": value}, spec.variants[variant], diverged=False, wall_s=1.0)
        set_attrs(trial, attrs)
        store.study.tell(trial, value, state=TrialState.COMPLETE)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the plugin and the run folders of two such studies, ``run`` and
    ``other`` (another task, for ``ablate aggregate``)."""
    folder = tmp_path_factory.mktemp("plugged")
    (folder / "norm.py").write_text(PLUGIN)
    make_study(folder, "run")
    make_study(folder, "other")
    return folder


@pytest.fixture
def copied(made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of ``made`` (same paths: spec.json names the plugin's absolute path) in which this
    process has not imported the plugin: its module and its component are forgotten meanwhile."""
    plugin = made / "norm.py"
    saved = tmp_path / "saved"
    shutil.copytree(made, saved)
    monkeypatch.delitem(sys.modules, plugins.module_name(str(plugin)), raising=False)
    monkeypatch.delitem(TABLES["norm"], NORM, raising=False)
    yield made
    shutil.rmtree(made)
    shutil.copytree(saved, made)


def read_everything(folder: Path, tmp_path: Path) -> None:
    """Every command that reads the run folder ``folder / "run"``, each exiting 0."""
    run = folder / "run"
    assert main(["report", str(run)]) == 0
    assert json.loads((run / "summary.json").read_text())["variants"]["plugged"]["n"] == 4
    assert main(["power", str(run), "--max-seeds", "12"]) == 0 and (run / "power.json").is_file()
    assert main(["aggregate", str(run), str(folder / "other"), "--out", str(tmp_path / "agg")]) == 0
    assert main(["report", str(folder / "other")]) == 0
    assert main(["compare", str(run), str(folder / "other"), "--out", str(tmp_path / "cmp")]) == 0
    (run / "report.html").unlink()  # the dashboard rebuilds it as `ablate report` does
    page = open_review(run)
    page.check_every_s = 0
    page.html()  # starts the rebuild, in the background
    assert page.wait_rebuilt(120)
    assert b"report" in page.html() and page.build_error is None and (run / "report.html").is_file()
    assert main(["wandb-report", str(run)]) == 0 and (run / "wandb-report.json").is_file()  # offline


def test_every_reader_works_with_the_plugin_file_deleted(copied: Path, tmp_path: Path) -> None:
    (copied / "norm.py").unlink()
    read_everything(copied, tmp_path)
    recorded = json.loads((copied / "run" / "summary.json").read_text())["provenance"]["plugins"]
    norm = str(copied / "norm.py")  # a plugin file is recorded by its path (two may share a name)
    assert [(r["name"], r["file"]) for r in recorded] == [(norm, norm)]
    assert (
        recorded[0]["sha256"]
        == json.loads((copied / "run" / "spec.json").read_text())["plugin_sources"][norm]
    )


def test_no_reader_imports_the_plugin_when_it_is_there(copied: Path, tmp_path: Path) -> None:
    (copied / "norm.py").write_text(MARKER + PLUGIN)  # importing it leaves a file named imported
    read_everything(copied, tmp_path)
    assert not (copied / "imported").exists()
    assert NORM not in TABLES["norm"]


def test_open_run_is_the_study_as_recorded(copied: Path) -> None:
    (copied / "norm.py").unlink()
    spec, store = open_run(copied / "run")
    assert isinstance(spec, RecordedSpec) and spec.cell_config("plugged", 0).model.norm_layer == NORM
    assert store.study.user_attrs["identity"] == spec.identity()
    assert spec.to_dict() == json.loads((copied / "run" / "spec.json").read_text())


def committed(folder: Path) -> Path:
    """``folder / "run"`` with a results.csv of its complete cells, as ``ablate report`` writes it."""
    run = folder / "run"
    with (run / "results.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["variant", "seed", "state", "test/acc"])
        writer.writerows([v, s, "complete", x] for v, xs in VALUES.items() for s, x in enumerate(xs))
    return run


def test_verify_refuses_an_edited_plugin_naming_its_file(copied: Path, capsys: pytest.CaptureFixture) -> None:
    run = committed(copied)
    plugin = copied / "norm.py"
    plugin.write_text(PLUGIN.replace("add(1e-5)", "add(1e-6)"))
    assert main(["verify", str(run)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"plugin {plugin} changed since the study ran" in err
    assert NORM not in TABLES["norm"]  # refused before anything imported it
    plugin.unlink()
    with pytest.raises(ConfigError, match=r"norm.py: file not found; the study ran with it"):
        verify.read_spec(run / "spec.json")


def test_verify_accepts_comments_and_docstrings_then_imports_the_plugin(copied: Path) -> None:
    run = committed(copied)
    edited = PLUGIN.replace('"""A norm of the tests\' own."""', '"""Another docstring."""  # and a comment')
    (copied / "norm.py").write_text(edited + "\n\n# the end\n")
    spec = verify.read_spec(run / "spec.json")
    assert not isinstance(spec, RecordedSpec) and NORM in TABLES["norm"]  # training imports it
