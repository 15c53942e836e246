"""The Python API reaches every subcommand's function (api.py): a sweep, then its report, power,
comparison and the table across two tasks, each the same numbers the CLI writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ablate
from tests.helpers.configs import write_spec

pytestmark = [pytest.mark.multiprocess]


def test_the_api_runs_a_study_and_every_command_on_it(tmp_path: Path) -> None:
    spec = ablate.load_spec(write_spec(tmp_path))
    other = ablate.load_spec(write_spec(tmp_path, name="tiny2"), ["data.seed=1"])
    runs = tmp_path / "runs"
    summary = ablate.sweep(spec, runs / "tiny", use_wandb=False)
    assert summary["cells"] == {"total": 6, "complete": 6, "missing": []}
    assert ablate.load_summary(runs / "tiny") == summary

    rewritten = ablate.report(runs / "tiny")
    assert {k: v for k, v in rewritten.items() if k != "provenance"} == {
        k: v for k, v in summary.items() if k != "provenance"
    }
    assert json.loads((runs / "tiny" / "summary.json").read_text()) == rewritten

    table = ablate.power(runs / "tiny", max_seeds=5)
    assert set(table["variants"]) == {"no_pe"} and (runs / "tiny" / "power.json").is_file()

    ablate.sweep(other, runs / "tiny2", use_wandb=False)
    agg = ablate.aggregate([runs / "tiny", runs / "tiny2"], tmp_path / "agg")
    assert agg["tasks"] == ["tiny", "tiny2"] and set(agg["variants"]) == {"baseline", "no_pe"}
    assert json.loads((tmp_path / "agg.json").read_text()) == agg

    paths = ablate.compare(runs / "tiny", runs / "tiny2", tmp_path / "cmp")
    assert paths["markdown"].read_text().startswith("# Compare tiny (A) with tiny2 (B)")
    with pytest.raises(ablate.ConfigError, match="is not a sweep run folder with a report"):
        ablate.load_summary(tmp_path)
