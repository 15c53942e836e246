"""``ablate verify`` (sweeps/drivers/verify.py): a run folder made in-process the way a sweep makes it
(spec.json, cells claimed and run by the worker's ``run_claimed``, the report's results.csv), then
cells of it rerun and compared to the bit; an edited value is caught; bad paths and counts refused."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from ablate.errors import ConfigError
from ablate.experiments.schema.machine import NOT_RECORDED, numerics_key, numerics_record
from ablate.sweeps.drivers import verify as vf
from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import finished_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-cell sweep run folder (baseline and no_pe, seed 0): trained once per module."""
    return finished_run(tmp_path_factory.mktemp("verify"), TINY_BASE, seeds=1)


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(run_dir, out)
    return out


def _edit(results: Path, column: str, value: object) -> None:
    """Set ``column`` of every row (a new column too) to ``value``, or to ``value(row)``."""
    with results.open(newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0]) + ([column] if column not in rows[0] else [])
    for row in rows:
        row[column] = value(row) if callable(value) else value
    with results.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_a_rerun_is_bit_identical(run_dir: Path) -> None:
    found = vf.verify(run_dir, cells=1, seed=0)
    (check,) = found.cells
    assert check.equal and check.diffs == {} and check.metrics >= 4
    # Before workers record their numerics results.csv has none; after, this machine's.
    assert (
        check.recorded_numerics in (NOT_RECORDED, check.local_numerics) and check.numerics_match is not False
    )
    assert check.local_numerics == numerics_key(numerics_record())
    lines = vf.format_checks(found)
    assert lines[0] == f"{check.name}: bit-identical ({check.metrics} metrics)"
    assert "all 1 cell(s) bit-identical" in lines and found.files.equal
    # The files it vouches for were checked too (verify_files.py: tests/.../test_verify_files.py).
    assert lines[-1].startswith("files agree with the study: results.csv (2 cells), summary.json (")
    assert vf.exit_code(found) == 0


def test_an_edited_value_differs_and_exits_1(run_dir: Path, tmp_path: Path) -> None:
    run = _copy(run_dir, tmp_path)
    results = run / "results.csv"
    with results.open(newline="") as f:
        recorded = {r["variant"]: float(r["test/acc"]) for r in csv.DictReader(f)}
    # Every cell's test/acc moved by a tiny amount, and numerics recorded from another machine.
    _edit(results, "test/acc", lambda row: repr(float(row["test/acc"]) + 1e-6))
    _edit(results, vf.NUMERICS_COLUMN, "some other machine | AVX2 | torch 0 | 1 thread")
    found = vf.verify(run, cells=1, seed=0)
    (check,) = found.cells
    assert not check.equal and list(check.diffs) == ["test/acc"]
    old = recorded[check.variant]
    assert check.diffs["test/acc"] == (old + 1e-6, old)
    assert check.worst == ("test/acc", pytest.approx(1e-6, rel=1e-3))
    assert check.numerics_match is False
    lines = vf.format_checks(found)
    assert lines[0].startswith(f"{check.name}: DIFFERS in 1 of {check.metrics} metrics; max |diff| 1e-06")
    assert "  test/acc: recorded" in lines[1]
    assert "the numerics differ" in "\n".join(lines) and vf.exit_code(found) == 1
    # results.csv is no longer what the study holds: each edited field is named.
    edited = {m.key for m in found.files.mismatches if m.file == "results.csv"}
    assert {"baseline/s0 test/acc", "no_pe/s0 test/acc", "baseline/s0 numerics"} <= edited


def test_recorded_numerics_as_key_or_json() -> None:
    record = numerics_record()
    assert vf.recorded_numerics({}) == NOT_RECORDED
    assert vf.recorded_numerics({"numerics": "k"}) == "k"
    import json

    assert vf.recorded_numerics({"numerics": json.dumps(record)}) == numerics_key(record)


def test_same_float_is_to_the_bit() -> None:
    assert vf.same_float(0.5, 0.5) and vf.same_float(None, float("nan")) and vf.same_float(None, None)
    assert not vf.same_float(0.0, -0.0) and not vf.same_float(None, 0.5)
    assert not vf.same_float(0.1 + 0.2, 0.3)


def test_bad_paths_name_what_is_missing(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"neither a run folder \(no .*nope/spec.json\) nor a committed"):
        vf.verify(tmp_path / "nope")
    run = _copy(run_dir, tmp_path)
    (run / "results.csv").unlink()
    with pytest.raises(ConfigError, match=r"run folder without results.csv; write it with `ablate report"):
        vf.verify(run)
    (tmp_path / "x.spec.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"committed result without x.results.csv"):
        vf.verify(tmp_path / "x")


def test_more_cells_than_complete_is_refused(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"--cells 3: .* has 2 complete cell\(s\) of tiny; choose --cells 2"
    ):
        vf.verify(run_dir, cells=3)
    with pytest.raises(ConfigError, match=r"--cells 0"):
        vf.verify(run_dir, cells=0)
    run = _copy(run_dir, tmp_path)
    _edit(run / "results.csv", "state", lambda row: "failed" if row["variant"] == "no_pe" else row["state"])
    with pytest.raises(ConfigError, match=r"has 1 complete cell"):
        vf.verify(run, cells=2)


def test_a_committed_prefix_reads_like_a_run_folder(run_dir: Path, tmp_path: Path) -> None:
    """``<prefix>.spec.json`` and ``<prefix>.results.csv``, as results/ holds them."""
    shutil.copyfile(run_dir / "spec.json", tmp_path / "tiny-order.spec.json")
    shutil.copyfile(run_dir / "results.csv", tmp_path / "tiny-order.results.csv")
    for given in ("tiny-order", "tiny-order.results.csv", "tiny-order.spec.json"):
        spec_path, results = vf.locate(tmp_path / given)
        assert (spec_path.name, results.name) == ("tiny-order.spec.json", "tiny-order.results.csv")
    spec = vf.read_spec(tmp_path / "tiny-order.spec.json")
    rows, metrics = vf.read_rows(tmp_path / "tiny-order.results.csv")
    assert spec.name == "tiny" and "test/acc" in metrics
    assert len(vf.complete_cells(spec, rows, tmp_path / "tiny-order.results.csv")) == 2
    with pytest.raises(ConfigError, match=r"holds committed results; give one of them as the prefix"):
        vf.locate(tmp_path)


def test_the_committed_results_are_readable() -> None:
    """Every committed result prefix locates and parses (nothing trained)."""
    root = Path(__file__).resolve().parents[4] / "results"
    prefixes = sorted(root.glob("*/*.spec.json"))
    assert prefixes
    for spec_json in prefixes:
        spec_path, results = vf.locate(spec_json)
        spec = vf.read_spec(spec_path)
        rows, _ = vf.read_rows(results)
        assert vf.complete_cells(spec, rows, results), spec_json


def test_check_plugins_reads_a_plugin_by_its_path_or_by_its_file_name_as_recorded_before(
    tmp_path: Path,
) -> None:
    from ablate.lit_modules.components import plugins

    plugin = tmp_path / "norm.py"
    plugin.write_text("SCALE = 1\n")
    recorded = plugins.code_hash(tmp_path, [plugin])
    for key in (str(plugin), "norm.py"):  # today's key, and the one studies recorded before
        vf.check_plugins({"base": {"plugins": [str(plugin)]}, "plugin_sources": {key: recorded}})
    plugin.write_text("SCALE = 2\n")
    for key in (str(plugin), "norm.py"):
        with pytest.raises(ConfigError, match=f"plugin {plugin} changed since the study ran"):
            vf.check_plugins({"base": {"plugins": [str(plugin)]}, "plugin_sources": {key: recorded}})
