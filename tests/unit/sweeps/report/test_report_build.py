"""A study's report assembled from its ledger (sweeps/report/build.py) without training: cells of a
real SQLite study claimed and told as a worker does, then the report's summary.json, results.csv
and the W&B summary run's table read back."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import pytest
from optuna.trial import TrialState

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.integrations.wandb_glue import table_rows
from ablate.sweeps.ledger.cells import collect_rows, open_store
from ablate.sweeps.ledger.storage import sqlite_url
from ablate.sweeps.ledger.study_views import result_attrs, set_attrs
from ablate.sweeps.report.build import report
from ablate.sweeps.report.provenance import versions
from ablate.sweeps.stats.rows import CELL_COLUMNS, INTERVAL_KEYS, VARIANT_KEYS, CellRow
from tests.helpers.configs import TINY_BASE

VALUES = {"baseline": [0.9, 0.92, 0.95], "no_pe": [0.5, 0.52, 0.49]}


@pytest.fixture
def finished(tmp_path: Path) -> tuple[object, object, Path]:
    """A 2 x 3 study in ``tmp_path/run/study.db`` whose cells completed with VALUES, but no_pe/s2,
    which failed."""
    spec = spec_from_dict(
        {
            "name": "tiny",
            "base": TINY_BASE,
            "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}},
            "seeds": 3,
        }
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = open_store(spec, sqlite_url(run_dir / "study.db"), create=True)
    store.ensure_cells()
    while (trial := store.claim()) is not None:
        variant, seed = trial.params["variant"], trial.params["seed"]
        if (variant, seed) == ("no_pe", 2):
            trial.set_user_attr("error", "RuntimeError: boom")
            store.study.tell(trial, state=TrialState.FAIL)
            continue
        value = VALUES[variant][seed]
        attrs = result_attrs(
            {"test/acc": value, "val/acc": value}, spec.variants[variant], diverged=False, wall_s=1.5
        )
        set_attrs(trial, attrs)
        store.study.tell(trial, value)
    return spec, store, run_dir


def test_collect_rows_types_every_cell(finished: tuple) -> None:
    spec, store, _ = finished
    rows = collect_rows(store)
    assert all(isinstance(r, CellRow) for r in rows)
    assert [r.name for r in rows] == [f"{v}/s{s}" for v, s in spec.cells()]  # one per cell, spec order
    by_name = {r.name: r for r in rows}
    ok, failed = by_name["baseline/s0"], by_name["no_pe/s2"]
    assert (
        ok.state == "complete" and ok.metric("test/acc") == 0.9 and ok.wall_s == 1.5 and ok.diverged is False
    )
    assert failed.state == "failed" and failed.error == "RuntimeError: boom" and failed.metrics == {}


def test_summary_document_and_results_csv(finished: tuple) -> None:
    spec, store, run_dir = finished
    summary = report(spec, store, run_dir)
    on_disk = json.loads((run_dir / "summary.json").read_text())
    assert on_disk == summary
    # the package versions come right after the statistics' methods, the provenance last
    keys = list(summary)
    assert keys[: keys.index("versions") + 1] == [
        "experiment", "metric", "direction", "baseline", "cells", "variants", "design", "methods", "versions",
    ] and keys[-1] == "provenance"  # fmt: skip
    assert summary["versions"] == versions()
    assert summary["cells"] == {"total": 6, "complete": 5, "missing": ["no_pe/s2 (failed)"]}
    assert all(list(v) == list(VARIANT_KEYS) for v in summary["variants"].values())
    assert summary["variants"]["no_pe"]["n"] == 2 and summary["variants"]["baseline"]["median"] == 0.92
    with (run_dir / "results.csv").open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == [*CELL_COLUMNS, "test/acc", "val/acc"]
    assert [CellRow.from_csv(r) for r in rows] == collect_rows(store)  # the file reads back as the rows


def test_the_wandb_table_has_a_column_per_statistic(finished: tuple) -> None:
    spec, store, run_dir = finished
    summary = report(spec, store, run_dir)
    columns, rows = table_rows(summary)
    expected = ["variant"]
    for k in VARIANT_KEYS:
        expected += [f"{k}_lo", f"{k}_hi"] if k in INTERVAL_KEYS else [k]
    assert columns == expected and [r[0] for r in rows] == ["baseline", "no_pe"]
    no_pe = dict(zip(columns, rows[1], strict=True))
    stats = summary["variants"]["no_pe"]
    assert no_pe["median"] == stats["median"] and no_pe["p_value"] == stats["p_value"]
    assert no_pe["test"] == "signed-rank" and no_pe["paired"] is True  # no_pe's seeds 0, 1 pair
    assert [no_pe["iqm_ci_lo"], no_pe["iqm_ci_hi"]] == stats["iqm_ci"] and None not in stats["iqm_ci"]
    # 2 paired seeds cannot reach 95 % (6 are the fewest): no interval, in either column
    assert stats["ci"] is None and no_pe["ci_lo"] is None and no_pe["ci_hi"] is None
    baseline = dict(zip(columns, rows[0], strict=True))
    assert baseline["ci_lo"] is None and baseline["p_value"] is None  # compared with itself: nothing
    assert baseline["iqm_ci_lo"] is not None  # its own spread still has an interval


def test_the_verdicts_lead_summary_and_report(finished: tuple) -> None:
    """summary.json's verdicts: one sentence per comparison naming the variant, Δ and the seeds; with
    2 seeds the sentence says they cannot decide and how many could; report.md opens with it."""
    spec, store, run_dir = finished
    summary = report(spec, store, run_dir)
    assert list(summary["verdicts"]) == ["no_pe"]  # the baseline is not compared with itself
    sentence = summary["verdicts"]["no_pe"]
    v = summary["variants"]["no_pe"]
    assert v["delta"] == pytest.approx(-0.4) and v["min_seeds"] == 6  # 1 comparison: 2 / 2^6 <= 0.05
    assert sentence.startswith("no_pe: not distinguishable from baseline on tiny (test/acc) at 2 seeds")
    assert "Δ -0.400 (no interval at these seeds)" in sentence
    assert "these seeds cannot reach p Holm <= 0.05: that needs at least 6. No margin was given" in sentence
    md = (run_dir / "report.md").read_text().splitlines()
    assert md[0].startswith("# tiny") and md[1] == "" and md[2] == f"- **{sentence}**"
    page = (run_dir / "report.html").read_text()
    head = f"<p class='verdict'><strong>{html.escape(sentence)}</strong></p>"
    assert head in page and page.index(head) < page.index("<table")  # before the statistics


SPLITS = {
    "train": {"n": 270, "source": "one.csv, less the validation and test rows drawn from it"},
    "validation": {"n": 15, "source": "5% of one.csv (15 of its 300 rows), drawn at random"},
    "test": {"n": 15, "source": "5% of one.csv (15 of its 300 rows), disjoint from validation"},
}


def split_study(root: Path, odd: dict | None = None) -> tuple[object, object, Path]:
    """A 2-variant study whose cells completed with SPLITS as a worker records them; no_pe/s0's
    splits are ``odd`` when given."""
    spec = spec_from_dict(
        {"name": "tiny", "base": TINY_BASE, "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}}
    )
    run_dir = root / "run"
    run_dir.mkdir(parents=True)
    store = open_store(spec, sqlite_url(run_dir / "study.db"), create=True)
    store.ensure_cells()
    while (trial := store.claim()) is not None:
        variant, seed = trial.params["variant"], trial.params["seed"]
        splits = odd if odd is not None and (variant, seed) == ("no_pe", 0) else SPLITS
        attrs = result_attrs(
            {"test/acc": 0.6}, spec.variants[variant], diverged=False, wall_s=1.0, splits=splits
        )
        set_attrs(trial, attrs)
        store.study.tell(trial, 0.6)
    return spec, store, run_dir


def test_the_split_sizes_reach_the_report_once_with_their_warning(tmp_path: Path) -> None:
    """Each cell's trial carries its splits (split.<name>.n/.source); the report states them once,
    since every cell agrees, and warns once that 15 examples are too few."""
    spec, store, run_dir = split_study(tmp_path)
    summary = report(spec, store, run_dir)
    assert summary["splits"] == {
        "min_eval_examples": 100,
        "sets": [{"variants": ["baseline", "no_pe"], "cells": len(spec.cells()), "splits": SPLITS}],
    }
    md = (run_dir / "report.md").read_text()
    line = "- Data splits (every complete cell): train 270 (one.csv, less the validation and test rows"
    assert md.count(line) == 1 and "; validation 15 (5% of one.csv" in md
    warnings = [x for x in md.splitlines() if "small evaluation split(s)" in x]
    assert len(warnings) == 1 and "validation 15, test 15 examples (fewer than 100)" in warnings[0]
    page = (run_dir / "report.html").read_text()
    assert page.count("small evaluation split(s)") == 1 and "Data splits (every complete cell)" in page


def test_splits_that_differ_between_cells_show_their_range(tmp_path: Path) -> None:
    odd = {**SPLITS, "validation": {"n": 30, "source": "10% of one.csv"}}
    spec, store, run_dir = split_study(tmp_path, odd)
    summary = report(spec, store, run_dir)
    n = len(spec.cells())
    sets = summary["splits"]["sets"]  # in the order of the cells (baseline/s0 first)
    assert [(s["variants"], s["cells"]) for s in sets] == [(["baseline", "no_pe"], n - 1), (["no_pe"], 1)]
    md = (run_dir / "report.md").read_text()
    assert "- Data splits differ between cells (validation 15–30):" in md
    assert f"- baseline, no_pe ({n - 1} cells): train 270 (" in md and "- no_pe (1 cell): train 270" in md
    # Both sets are too small: one warning each, named by their variants.
    assert sum("small evaluation split(s)" in x for x in md.splitlines()) == 2
