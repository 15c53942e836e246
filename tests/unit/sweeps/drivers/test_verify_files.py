"""``ablate verify``'s check of the files (sweeps/drivers/verify_files.py): a run folder made
in-process as a sweep makes it, then summary.json, results.csv and a cell's metrics.json edited;
each edit is named (file, key, recorded, reference) and the untouched folder agrees. Nothing is
trained again here: ``check_files`` reads files and the study."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from ablate.sweeps.drivers import verify as vf
from ablate.sweeps.drivers.verify_files import MISSING, FilesCheck, check_files
from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import finished_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished sweep run folder, baseline and no_pe × seeds 0 and 1: trained once per module."""
    base = {**TINY_BASE, "model": {**TINY_BASE["model"], "n_layers": 1}, "trainer": {"max_steps": 2}}
    return finished_run(tmp_path_factory.mktemp("verify-files"), base, seeds=2)


@pytest.fixture
def run(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the run folder to edit."""
    return Path(shutil.copytree(run_dir, tmp_path / "tiny"))


def check(run: Path) -> FilesCheck:
    spec_path, results = vf.locate(run)
    rows, _ = vf.read_rows(results)
    return check_files(vf.read_spec(spec_path), spec_path, results, rows)


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def found(c: FilesCheck) -> set[tuple[str, str]]:
    return {(m.file, m.key) for m in c.mismatches}


def test_an_untouched_run_agrees_with_its_study(run: Path) -> None:
    c = check(run)
    assert c.equal and c.reference == "the study" and not c.notes
    assert c.checked[0] == "results.csv (4 cells)" and c.checked[2] == "metrics.json of 4 cell(s)"
    assert c.checked[1].startswith("summary.json (") and int(c.checked[1].split("(")[1].split()[0]) > 100
    assert c.lines()[-1].startswith("files agree with the study: results.csv (4 cells), summary.json")


def test_an_edited_summary_statistic_is_named(run: Path) -> None:
    """The issue's case: variants.baseline.median -> 0.99 in summary.json (the README tables' file);
    a removed statistic and an added key are named too."""
    true_median = json.loads((run / "summary.json").read_text())["variants"]["baseline"]["median"]

    def change(s: dict) -> None:
        s["variants"]["baseline"]["median"] = 0.99
        del s["variants"]["no_pe"]["p_value"]
        s["variants"]["no_pe"]["note"] = "better"

    edit_json(run / "summary.json", change)
    c = check(run)
    assert found(c) == {
        ("summary.json", "variants.baseline.median"),
        ("summary.json", "variants.no_pe.p_value"),
        ("summary.json", "variants.no_pe.note"),
    }
    median = next(m for m in c.mismatches if m.key == "variants.baseline.median")
    assert (median.recorded, median.expected, median.against) == (0.99, true_median, "recomputed")
    assert median.line() == f"summary.json: variants.baseline.median: recorded 0.99, recomputed {true_median}"
    assert next(m for m in c.mismatches if m.key == "variants.no_pe.p_value").recorded is MISSING
    assert c.lines()[-1].startswith("3 recorded value(s) in 1 file(s) differ from the study (checked ")


def test_an_edited_metrics_json_is_named(run: Path) -> None:
    """The issue's second case: a cell's metrics.json test/acc -> 0.9; its steps and numerics too."""
    metrics = run / "cells" / "baseline-s0" / "metrics.json"
    study_acc = json.loads(metrics.read_text())["test/acc"]

    def change(m: dict) -> None:
        m["test/acc"], m["steps"] = 0.9, 99
        m["numerics"]["threads"] = 64

    edit_json(metrics, change)
    c = check(run)
    shown = "cells/baseline-s0/metrics.json"
    assert found(c) == {(shown, "test/acc"), (shown, "steps"), (shown, "numerics")}
    acc = next(m for m in c.mismatches if m.key == "test/acc")
    assert acc.line() == f"{shown}: test/acc: recorded 0.9, study {study_acc}"


def test_an_edited_results_csv_field_is_named(run: Path) -> None:
    path = run / "results.csv"
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    rows[1]["test/acc"], rows[2]["wall_s"] = "0.9", "1e9"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows[:3])  # and the last row dropped
    c = check(run)
    last = f"{rows[3]['variant']}/s{rows[3]['seed']}"
    assert found(c) == {
        ("results.csv", f"{rows[1]['variant']}/s{rows[1]['seed']} test/acc"),
        ("results.csv", f"{rows[2]['variant']}/s{rows[2]['seed']} wall_s"),
        ("results.csv", last),
    }
    assert next(m for m in c.mismatches if m.key == last).recorded is MISSING


def test_a_margin_given_to_report_is_read_as_the_file_records_it(run: Path) -> None:
    """``ablate report --margin M`` writes equivalence tests the spec has no margin for: the
    recomputation takes the file's margin (a reading choice, not a statistic) and agrees; an edited
    equivalence p is still named."""
    from ablate.sweeps.report.build import rewrite_report

    rewrite_report(run, margin=0.1)
    assert "equivalence" in json.loads((run / "summary.json").read_text())
    assert check(run).equal
    edit_json(run / "summary.json", lambda s: s["equivalence"]["no_pe"].update(p=0.001))
    assert found(check(run)) == {("summary.json", "equivalence.no_pe.p")}


def test_without_a_study_results_csv_is_the_reference(run: Path) -> None:
    """A run folder whose study.db is gone, and the same files as a committed result prefix
    (results/<preset>/<name>.{json,spec.json,results.csv}): checked against results.csv, said so."""
    (run / "study.db").unlink()
    edit_json(run / "cells" / "no_pe-s1" / "metrics.json", lambda m: m.update({"test/acc": 0.25}))
    c = check(run)
    assert c.reference == "results.csv" and "no study.db in" in c.notes[0]
    assert found(c) == {("cells/no_pe-s1/metrics.json", "test/acc")}
    assert c.mismatches[0].against == "results.csv"

    committed = run.parent / "committed"
    committed.mkdir()
    for name, as_ in (
        ("summary.json", ".json"),
        ("spec.json", ".spec.json"),
        ("results.csv", ".results.csv"),
    ):
        shutil.copyfile(run / name, committed / f"tiny-order{as_}")
    c = check(committed / "tiny-order")
    assert c.equal and "a committed result (no study)" in c.notes[0], c.lines()
    edit_json(committed / "tiny-order.json", lambda s: s["variants"]["baseline"].update(iqm=1.0))
    assert found(check(committed / "tiny-order")) == {("tiny-order.json", "variants.baseline.iqm")}


def test_absent_files_are_noted_not_failed(run: Path) -> None:
    shutil.rmtree(run / "cells" / "baseline-s1")
    (run / "summary.json").unlink()
    c = check(run)
    assert c.equal and c.checked == ["results.csv (4 cells)", "metrics.json of 3 cell(s)"]
    assert any(n.startswith("no summary.json") for n in c.notes)
    assert "no metrics.json for 1 complete cell(s) (baseline/s1): not checked" in c.notes


def test_a_summary_that_is_not_json_is_a_mismatch(run: Path) -> None:
    (run / "summary.json").write_text("{ not json")
    (m,) = check(run).mismatches
    assert (m.file, m.key) == ("summary.json", "(the file)") and "unreadable" in m.recorded


def test_a_long_value_is_shown_where_it_differs() -> None:
    """Two verdicts that differ late: the line shows that part of each, not their common start."""
    from ablate.sweeps.drivers.verify_files import Mismatch

    said = "no_pe: not distinguishable from baseline on tiny (test/acc) at 7 seeds (Δ +0.010, p = 0.6250"
    line = Mismatch(
        "summary.json", "verdicts.no_pe", said + ")", said.replace("0.6250", "0.0156") + ")", "recomputed"
    ).line()
    assert line.startswith("summary.json: verdicts.no_pe: recorded ...") and "p = 0.6250)" in line
    assert line.endswith("p = 0.0156)")
