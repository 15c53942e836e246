"""The result tables (every preset's on the docs' results page, the main job's in the README too)
are what ``python -m docs._gen.readme_tables`` prints for the committed inputs
(results/<preset>/), and summary.json records its provenance."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from ablate.sweeps.report.files import results_csv
from ablate.sweeps.report.provenance import git_commit, provenance
from ablate.sweeps.stats.inference import signed_rank
from ablate.sweeps.stats.rows import VARIANT_KEYS, CellRow
from ablate.sweeps.stats.summary import summarize
from docs._gen import readme_tables as rt
from docs._gen.blocks import DocsError
from tests.helpers.paths import REPO
from tests.helpers.rows import cell_row


def one(
    summary: dict[str, Any], spec: dict[str, Any], rows: list[dict[str, Any]] | None = None
) -> rt.Experiment:
    return rt.Experiment(rt.Run(summary, spec, rows))


def test_readme_tables_match_the_generator() -> None:
    """Every block in README.md and in the results page is the generator's output; the results
    page holds every preset's block, the README the main job's."""
    pages = {page: rt.readme_blocks(page.read_text()) for page in (rt.README, rt.RESULTS_PAGE)}
    assert rt.DEFAULT_PRESET in pages[rt.README], (
        "README.md lost its <!-- table:remove-pe-single-head --> block"
    )
    missing = sorted(set(rt.preset_names()) - set(pages[rt.RESULTS_PAGE]))
    assert not missing, (
        f"{rt.RESULTS_PAGE.relative_to(REPO)} lacks the <!-- table:NAME --> block of {missing}"
    )
    for page, blocks in pages.items():
        for preset, body in blocks.items():
            assert page in rt.pages_of(preset), f"{page.name} holds {preset!r}, which --write never updates"
            expected = rt.render(rt.load_inputs(preset))
            assert body == expected, (
                f"{page.relative_to(REPO)}: table {preset!r} is stale: run "
                f"`python -m docs._gen.readme_tables --preset {preset} --write`"
            )


def test_write_updates_every_page_of_the_preset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme, results = tmp_path / "README.md", tmp_path / "results.md"
    for page in (readme, results):
        page.write_text(f"intro\n<!-- table:{rt.DEFAULT_PRESET} -->\nold\n<!-- /table -->\n")
    results.write_text(results.read_text() + "<!-- table:heads -->\nold\n<!-- /table -->\n")
    monkeypatch.setattr(rt, "REPO", tmp_path)
    monkeypatch.setattr(rt, "README", readme)
    monkeypatch.setattr(rt, "RESULTS_PAGE", results)
    assert rt.main(["--preset", "heads", "--write"]) == 0
    assert "old" in readme.read_text() and rt.readme_blocks(results.read_text())["heads"] != "old\n"
    assert rt.main(["--write"]) == 0  # the main job: both pages
    for page in (readme, results):
        assert rt.readme_blocks(page.read_text())[rt.DEFAULT_PRESET] == rt.render(
            rt.load_inputs(rt.DEFAULT_PRESET)
        )
    results.write_text("no blocks\n")
    assert rt.main(["--preset", "norm", "--write"]) == 2  # the page lost its block: one message


def test_committed_inputs_are_the_presets_summaries() -> None:
    names = rt.experiment_names(rt.DEFAULT_PRESET)
    assert names == [
        "remove-pe-single-head-order",
        "remove-pe-single-head-lookup",
        "remove-pe-single-head-sst2",
    ]
    inputs = rt.load_inputs(rt.DEFAULT_PRESET)
    assert [e.label for e in inputs] == ["order-only", "multi-lookup", "SST-2"]
    for name, e in zip(names, inputs, strict=True):
        summary, spec = e.main.summary, e.main.spec
        assert summary["experiment"] == spec["name"] == name
        # The lr check ran where this preset claims an effect that depends on training: lookup.
        assert sorted(e.lr_runs) == ([0.5, 2.0] if name.endswith("lookup") else []) and e.tuned is None
        assert list(summary["variants"]) == ["baseline", "no_pe", "single_head"]
        assert summary["metric"] == "test/acc"


def _variant(**kw: object) -> dict[str, object]:
    v: dict[str, object] = dict.fromkeys(
        ("median", "q1", "q3", "min", "max", "delta", "ci", "ci_confidence", "p_value", "p_improve")
    )
    v.update(n=5, n_diverged=0)
    v.update(kw)
    return v


SUMMARY = {
    "experiment": "remove-pe-single-head-lookup",
    "metric": "test/acc",
    "direction": "maximize",
    "baseline": "baseline",
    "cells": {"total": 10, "complete": 10, "missing": []},
    "variants": {
        "baseline": _variant(median=0.998, q1=0.997, q3=0.999, min=0.989, max=1.0, delta=0.0),
        "single_head": _variant(  # unpaired, 5 + 5 seeds: Mann-Whitney
            median=0.873,
            q1=0.863,
            q3=0.952,
            iqm=0.9,
            min=0.804,
            max=0.96,
            delta=-0.125,
            ci=[-0.193, -0.037],
            ci_confidence=1 - 8 / 252,  # the 3rd interval: 1 - 2 P(U <= 2)
            delta_median=-0.13,  # descriptive: not shown
            p_value=0.007936507936507936,  # 2/252
            p_holm=0.015873015873015872,
            p_mwu=0.5,  # descriptive: not shown
            p_improve=0.0,
            test="mann-whitney",
            paired=False,
            min_seeds=5,
        ),
        "no_pe": _variant(  # paired, 5 seeds: no interval reaches 95 %
            median=0.996,
            q1=0.996,
            q3=0.998,
            iqm=0.997,
            min=0.993,
            max=0.999,
            delta=-0.001,
            ci=None,
            delta_median=-0.002,
            p_value=0.6875,
            p_holm=0.6875,
            p_improve=0.4,
            test="signed-rank",
            paired=True,
            min_seeds=7,
        ),
    },
}
SPEC = {
    "name": "remove-pe-single-head-lookup",
    "base": {"data": {"task": "lookup"}, "trainer": {"max_steps": 3000}},
}


def test_rows_of_one_known_summary() -> None:
    rows = rt.experiment_rows(one(SUMMARY, SPEC), [])
    assert rows == [
        "| multi-lookup (3000) | baseline | 0.998 [0.997, 0.999] | – | 0.989–1.000 | | | | |",
        # Δ, the interval and p are the primary test's (the descriptive delta_median, p_mwu are not)
        "| | single_head | 0.873 [0.863, 0.952] | 0.900 | 0.804–0.960 | −0.125 [−0.193, −0.037] (96.8 %)"
        " | 0.008 | 0.016 | 0.00 |",
        # 5 paired seeds: no interval; Holm over 2 comparisons needs 7
        "| | no_pe | 0.996 [0.996, 0.998] | 0.997 | 0.993–0.999 | −0.001 (no interval at these seeds) | 0.69 | 0.69"
        " | 0.40 |",
    ]
    assert "\u2212" in rows[1] and "-0.125" not in rows[1]  # a real minus sign, not a hyphen
    assert all(r.count("|") == rt.HEADER.count("|") for r in rows)  # a cell per column
    # adaptive seeds: the p column is p_seq, the p the interval inverts
    adaptive = {**SUMMARY, "variants": {**SUMMARY["variants"]}}
    adaptive["variants"]["no_pe"] = {**SUMMARY["variants"]["no_pe"], "p_seq": 1.0}
    assert rt.experiment_rows(one(adaptive, SPEC), [])[2].endswith(" | 1 | 0.69 | 0.40 |")


def test_number_formats() -> None:
    assert rt.signed(0.003) == "+0.003"
    assert rt.signed(0.0) == "+0.000"
    assert rt.signed(-0.002) == "\u22120.002"
    assert rt.p_text(1.0) == "1"
    assert rt.p_text(0.6905) == "0.69"
    assert rt.p_text(0.003977) == "0.004"
    assert rt.p_text(0.0001) == "<0.001"
    assert rt.p_text(None) == "–"
    sst2 = {"base": {"data": {"task": "text", "source": "../shared/data/sst2"}}}
    assert rt.dataset_label(sst2) == "SST-2"
    assert rt.dataset_label({"base": {"data": {"task": "text", "source": "stanfordnlp/sst2"}}}) == "SST-2"


def test_footer_names_the_commit_or_says_it_is_not_recorded() -> None:
    block = rt.render([one(SUMMARY, SPEC)])
    assert block.endswith(
        "\n\nGenerated by `python -m docs._gen.readme_tables` from summaries produced at commit not recorded."
        " p: `mann-whitney`, `signed-rank`; Holm over each data set's comparisons.\n"
    )  # the tests the rows' p come from
    dated = {
        **SUMMARY,
        "provenance": {"commit": "0123456789abcdef0123456789abcdef01234567-dirty", "versions": {}},
    }
    assert "produced at commit `0123456789ab-dirty`." in rt.footer([one(dated, SPEC), one(dated, SPEC)])
    mixed = rt.footer([one(dated, SPEC), one(SUMMARY, SPEC)])
    assert "commit `0123456789ab-dirty` (multi-lookup), commit not recorded (multi-lookup)" in mixed
    partial = {**SUMMARY, "cells": {"total": 10, "complete": 7, "missing": ["x"]}}
    assert "Partial studies (cells complete): multi-lookup 7/10." in rt.footer([one(partial, SPEC)])
    assert "Overrides" not in rt.footer(
        [one(SUMMARY, {**SPEC, "base_overrides": {"trainer.max_steps": 3000}})]
    )
    small = {**SPEC, "base_overrides": {"trainer.max_steps": 40, "data.n_train": 2000}}
    assert rt.footer([one(SUMMARY, small)]).endswith(" Overrides: multi-lookup `data.n_train=2000`.")


def test_write_replaces_only_the_presets_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--write goes through docs/_gen/blocks.py (tests/unit/docs/test_blocks.py): the preset's
    block in each of its pages, the rest of the page as it was."""
    text = "intro\n<!-- table:p -->\nold\n<!-- /table -->\nprose\n<!-- table:q -->\nkeep\n<!-- /table -->\n"
    page = tmp_path / "page.md"
    page.write_text(text)
    monkeypatch.setattr(rt, "pages_of", lambda preset: [page])
    rt.write_tables("p", "new\n")
    assert page.read_text() == text.replace("old", "new")
    assert rt.readme_blocks(page.read_text()) == {"p": "new\n", "q": "keep\n"}
    with pytest.raises(DocsError, match="page.md has no block <!-- table:r -->"):
        rt.write_tables("r", "x")


def test_collect_copies_every_experiment_or_nothing(tmp_path: Path) -> None:
    runs, results = tmp_path / "runs", tmp_path / "results"
    committed = REPO / "results" / rt.DEFAULT_PRESET
    names = rt.experiment_names(rt.DEFAULT_PRESET)
    lookup_lr = [f"{names[1]}-lr0.5x", f"{names[1]}-lr2x"]  # the lr check's companion runs
    for name in [*names, *lookup_lr]:
        (runs / name).mkdir(parents=True)
        shutil.copyfile(committed / f"{name}.json", runs / name / "summary.json")
        shutil.copyfile(committed / f"{name}.spec.json", runs / name / "spec.json")

    def timed(name: str) -> str:
        """The committed cells with every wall time 60 s: the same statistics, known cell times."""
        rows = rt.read_results_csv(committed / f"{name}.results.csv")
        return results_csv([dataclasses.replace(r, wall_s=60.0) for r in rows])

    (runs / names[0] / "results.csv").write_text(timed(names[0]))
    for name in [names[1], *lookup_lr]:  # their per-cell val/acc choose each variant's lr
        shutil.copyfile(committed / f"{name}.results.csv", runs / name / "results.csv")
    with pytest.raises(rt.TableError, match="results.csv missing"):
        rt.collect(rt.DEFAULT_PRESET, runs, results)
    assert not results.exists()
    (runs / names[-1] / "results.csv").write_text(timed(names[-1]))
    copied = rt.collect(rt.DEFAULT_PRESET, runs, results)
    assert len(copied) == 15 and {p.name for p in copied} >= {f"{names[0]}.results.csv"}
    new = rt.render(rt.load_inputs(rt.DEFAULT_PRESET, results))
    old = rt.render(rt.load_inputs(rt.DEFAULT_PRESET))
    assert new.split("\n\n")[0] == old.split("\n\n")[0]  # the same cells: the same table
    n = len(rt.read_results_csv(committed / f"{names[0]}.results.csv"))  # cells per experiment
    assert (
        f" Cell time (each cell's own wall time; parallel workers overlap them): order-only {n} cells, median 60 s,"
        f" total {n:.1f} min; multi-lookup {n} cells,"
    ) in new
    assert f"; SST-2 {n} cells, median 60 s, total {n:.1f} min." in new


def test_the_table_is_recomputed_from_the_cells() -> None:
    """A committed summary.json from older code keeps its provenance, but its statistics are
    computed again from results.csv: the table has today's tests whatever the summary says."""
    (e, *_) = rt.load_inputs(rt.DEFAULT_PRESET)
    committed = json.loads((REPO / "results" / rt.DEFAULT_PRESET / f"{e.main.spec['name']}.json").read_text())
    v = e.main.summary["variants"]["no_pe"]
    assert list(v) == list(VARIANT_KEYS)
    assert v["test"] == "signed-rank" and e.main.summary["provenance"] == committed.get("provenance")
    rows = [r for r in e.main.rows or [] if r.variant in ("baseline", "no_pe")]
    base = {r.seed: r.metric("test/acc") for r in rows if r.variant == "baseline"}
    d = [r.metric("test/acc") - base[r.seed] for r in rows if r.variant == "no_pe"]
    assert v["n"] == len(d) and v["p_value"] == pytest.approx(signed_rank(d).p)


# ---- synthetic runs: a preset's shared run, its lr check and its search-tuned run ---------------

VARIANTS = {"baseline": {}, "post_ln": {"model.norm": "post"}}


def norm_spec(name: str = "norm", lr: float = 0.005, steps: int = 1000) -> dict[str, Any]:
    return {
        "name": name,
        "base": {"data": {"task": "listops"}, "trainer": {"max_steps": steps}, "optim": {"lr": lr}},
        "variants": VARIANTS,
        "seeds": [0, 1, 2],
        "metric": "test/acc",
        "direction": "maximize",
        "extra_metrics": ["test_long/acc", "val/acc"],
        "base_overrides": {"trainer.max_steps": steps},
    }


def cells(values: dict[str, list[tuple[float, float]]], wall: float = 30.0) -> list[CellRow]:
    """results.csv rows: variant -> (val/acc, test/acc) per seed; test_long/acc = test/acc - 0.1."""
    return [
        cell_row(
            v,
            seed,
            test,
            metrics={"val/acc": val, "test_long/acc": round(test - 0.1, 6)},
            wall_s=wall + seed,
            trial=0,
        )
        for v, per_seed in values.items()
        for seed, (val, test) in enumerate(per_seed)
    ]


def write_run(paths: rt.Paths, spec: dict[str, Any], rows: list[CellRow]) -> None:
    """summary.json (sweeps.stats.summarize, as a sweep writes it), spec.json and results.csv."""

    def stats(metric: str) -> dict[str, Any]:
        return summarize(
            rows,
            experiment=spec["name"],
            metric=metric,
            direction="maximize",
            baseline="baseline",
            variants=list(spec["variants"]),
            overrides=spec["variants"],
        )

    summary = stats("test/acc") | {"extra_metrics": {m: stats(m)["variants"] for m in spec["extra_metrics"]}}
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    paths[0].write_text(json.dumps(summary))
    paths[1].write_text(json.dumps(spec))
    paths[2].write_text(results_csv(rows))


# Validation prefers post_ln at x2; baseline ties at every factor (x1 wins the tie).
SHARED_CELLS = {
    "baseline": [(0.8, 0.80), (0.8, 0.82), (0.8, 0.84)],
    "post_ln": [(0.5, 0.50), (0.6, 0.52), (0.5, 0.54)],
}
HALF_CELLS = {
    "baseline": [(0.8, 0.70), (0.8, 0.70), (0.8, 0.70)],
    "post_ln": [(0.4, 0.40), (0.4, 0.40), (0.4, 0.40)],
}
DOUBLE_CELLS = {
    "baseline": [(0.8, 0.60), (0.8, 0.60), (0.8, 0.60)],
    "post_ln": [(0.9, 0.70), (0.9, 0.74), (0.9, 0.72)],
}


def write_norm_runs(paths: Any, *, tuned: bool = True) -> None:
    """The norm preset's shared run, lr check (x0.5, x2) and tuned run at ``paths(run name)``."""
    write_run(paths("norm"), norm_spec(), cells(SHARED_CELLS))
    write_run(paths("norm-lr0.5x"), norm_spec("norm-lr0.5x", lr=0.0025), cells(HALF_CELLS, wall=10.0))
    write_run(paths("norm-lr2x"), norm_spec("norm-lr2x", lr=0.01), cells(DOUBLE_CELLS, wall=20.0))
    if tuned:
        spec = norm_spec("norm-tuned") | {
            "search": {"metric": "val/acc", "trials": 12},
            "tuned": {
                "baseline": {"optim.lr": 0.0012345, "val/acc (search)": 0.81},
                "post_ln": {"optim.lr": 0.00051, "optim.warmup_ratio": 0.2, "val/acc (search)": 0.7},
            },
        }
        write_run(
            paths("norm-tuned"), spec, cells({"baseline": [(0.8, 0.9)] * 3, "post_ln": [(0.8, 0.91)] * 3})
        )


def test_every_preset_has_one_block_shape(tmp_path: Path) -> None:
    """Shared rows, per-variant lr rows and search-tuned rows of one experiment, with the extra
    test metric's column (not val/acc's), cell times and how the tuned rows were chosen."""
    write_norm_runs(lambda run: rt.result_paths(tmp_path / "norm", run))
    block = rt.render(rt.load_inputs("norm", tmp_path))
    table, foot = block.split("\n\n")
    lines = table.split("\n")
    assert lines[0].endswith("| P(improve) | test_long/acc median [IQR] |") and "val/acc" not in lines[0]
    assert lines[1] == "|" + "---|" * 10
    assert [ln.split(" | ")[:2] for ln in lines[2:]] == [
        ["| ListOps (1000)", "baseline"],
        ["|", "post_ln"],
        ["| lr ×0.5", "baseline"],  # every lr on its own: the choice does not read test_long/acc
        ["|", "post_ln"],
        ["| lr ×2", "baseline"],
        ["|", "post_ln"],
        ["| per-variant lr", "baseline (lr ×1)"],
        ["|", "post_ln (lr ×2)"],
        ["| tuned by ablate search", "baseline"],
        ["|", "post_ln"],
    ]
    assert lines[5].endswith(" | 0.300 [0.300, 0.300] |")  # test_long/acc of post_ln at x0.5
    assert lines[7].endswith(" | 0.620 [0.610, 0.630] |")  # ... and at x2
    # post_ln at x2 vs the baseline at x1: per-seed differences -0.10, -0.08, -0.12, all 3 below:
    # p = 2 / 2^3, their Walsh averages' median -0.10; 3 pairs have no 95 % interval (6 would)
    assert lines[9] == (
        "| | post_ln (lr ×2) | 0.720 [0.710, 0.730] | 0.720 | 0.700–0.740 | −0.100 (no interval at these seeds)"
        " | 0.25 | 0.25 | 0.00 | 0.620 [0.610, 0.630] |"
    )
    assert lines[3].endswith(" | 0.420 [0.410, 0.430] |")  # the shared run's test_long/acc of post_ln
    assert (
        "Cell time (each cell's own wall time; parallel workers overlap them): ListOps 6 cells, median 31 s,"
        in foot
    )
    assert (
        "ListOps lr ×0.5 6 cells, median 11 s, total 1.1 min; ListOps lr ×2 6 cells, median 21 s, total 2.1 min"
        in foot
    )
    assert "Rows per-variant lr (ListOps): the shared lr times ×0.5/×1/×2 " in foot
    assert (
        "Rows lr ×0.5, lr ×2 (ListOps): every variant at that lr, because the per-variant choice does"
        " not look at test_long/acc." in foot
    )
    assert (
        "highest median val/acc over seeds (ties: ×1, then the smaller); the test split never chooses."
        in foot
    )
    assert foot.rstrip().endswith(
        "Rows tuned by ablate search (`ablate search --then-evaluate`, then every seed): ListOps, best on val/acc:"
        " baseline optim.lr=0.0012; post_ln optim.lr=0.00051, optim.warmup_ratio=0.2."
    )


def test_collect_takes_the_companion_runs_and_ignores_other_names(tmp_path: Path) -> None:
    runs, results = tmp_path / "runs", tmp_path / "results"
    write_norm_runs(lambda run: rt.run_paths(runs, run))
    (runs / "norm-lr2.0x").mkdir()  # not a name lr_check writes: ignored
    (runs / "norm-search").mkdir()  # the search's own folder: not a grid
    copied = rt.collect("norm", runs, results)
    assert sorted(p.name for p in copied) == sorted(
        f"{run}{ext}"
        for run in ("norm", "norm-lr0.5x", "norm-lr2x", "norm-tuned")
        for ext in (".json", ".spec.json", ".results.csv")
    )
    assert rt.render(rt.load_inputs("norm", results)).count("| per-variant lr |") == 1


def test_a_broken_companion_run_is_one_message_and_copies_nothing(tmp_path: Path) -> None:
    runs, results = tmp_path / "runs", tmp_path / "results"
    write_norm_runs(lambda run: rt.run_paths(runs, run), tuned=False)
    write_run(
        rt.run_paths(runs, "norm-lr2x"), norm_spec("norm-lr2x", lr=0.01, steps=500), cells(DOUBLE_CELLS)
    )
    with pytest.raises(
        rt.TableError, match=r"norm-lr2x is not norm with lr x2: it differs in trainer.max_steps"
    ):
        rt.collect("norm", runs, results)
    write_run(rt.run_paths(runs, "norm-lr2x"), norm_spec("norm-lr2x", lr=0.02), cells(DOUBLE_CELLS))
    with pytest.raises(rt.TableError, match=r"optim.lr=0.02, not 2 x 0.005"):
        rt.collect("norm", runs, results)
    write_run(rt.run_paths(runs, "norm-lr2x"), norm_spec("norm-lr2x", lr=0.01), cells(DOUBLE_CELLS))
    tuned = norm_spec("norm-tuned", lr=0.001, steps=500) | {"tuned": {"baseline": {"optim.lr": 0.001}}}
    write_run(rt.run_paths(runs, "norm-tuned"), tuned, cells(SHARED_CELLS))
    with pytest.raises(
        rt.TableError,
        match=r"norm-tuned is not norm tuned by ablate search: it differs in trainer.max_steps;",
    ):
        rt.collect("norm", runs, results)  # the searched lr may differ, the step count not
    shutil.rmtree(runs / "norm-tuned")
    (runs / "norm-tuned").mkdir()  # a search still running: no summary yet
    with pytest.raises(rt.TableError, match=r"norm-tuned/summary.json.* missing"):
        rt.collect("norm", runs, results)
    assert not results.exists()


def test_committed_inputs_without_results_csv_still_render(tmp_path: Path) -> None:
    """Inputs committed before results.csv was collected: the table, no cell times; an lr check
    needs the shared run's cells, so then the missing file is the message."""
    write_norm_runs(lambda run: rt.result_paths(tmp_path / "norm", run), tuned=False)
    (tmp_path / "norm" / "norm.results.csv").unlink()
    with pytest.raises(rt.TableError, match=r"norm.results.csv; run .*--collect runs/.*per-variant lr rows"):
        rt.load_inputs("norm", tmp_path)
    for f in (tmp_path / "norm").glob("norm-lr*"):
        f.unlink()
    assert "Cell time" not in rt.render(rt.load_inputs("norm", tmp_path))


def test_missing_inputs_are_one_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(rt.TableError, match="--collect runs/"):
        rt.load_inputs(rt.DEFAULT_PRESET, tmp_path)
    assert rt.main(["--preset", "no-such-preset"]) == 2
    assert "no preset 'no-such-preset'" in capsys.readouterr().err


def test_provenance_records_commit_and_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prov = provenance()
    json.dumps(prov, allow_nan=False)
    assert set(prov) == {"commit", "versions"}
    assert set(prov["versions"]) == {"ablate", "torch", "lightning", "optuna", "python"}
    assert prov["versions"]["torch"] and re.fullmatch(r"3\.\d+\.\d+.*", prov["versions"]["python"])
    if shutil.which("git") and (REPO / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", prov["commit"] or "")
    assert git_commit(tmp_path) is None  # not a git checkout
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all: None, no error
    assert git_commit(REPO) is None


def test_per_variant_lr_rows_that_repeat_the_shared_rows_are_left_out(tmp_path: Path) -> None:
    """Validation ties at every lr (as on a task every variant solves): each variant keeps ×1, so
    the per-variant rows would be the shared rows again; the footer says so instead."""
    paths = lambda run: rt.result_paths(tmp_path / "norm", run)  # noqa: E731
    tied = {v: [(val, 0.7) for val, _ in per_seed] for v, per_seed in SHARED_CELLS.items()}  # same val/acc
    write_run(paths("norm"), norm_spec(), cells(SHARED_CELLS))
    write_run(paths("norm-lr0.5x"), norm_spec("norm-lr0.5x", lr=0.0025), cells(tied))
    write_run(paths("norm-lr2x"), norm_spec("norm-lr2x", lr=0.01), cells(tied))
    (e,) = rt.load_inputs("norm", tmp_path)
    assert e.lr_summary is not None and set(e.lr_summary["factors"].values()) == {1.0}
    table, foot = rt.render([e]).split("\n\n")
    firsts = [ln.split(" | ")[0] for ln in table.split("\n")[2:]]
    assert firsts == ["| ListOps (1000)", "|", "| lr ×0.5", "|", "| lr ×2", "|"]
    assert (
        "ties: ×1, then the smaller); the test split never chooses. Δ against the baseline at its own chosen"
        " lr; Holm over these rows. ListOps: that choice is ×1 for every variant, so its rows would repeat the"
        " shared rows and are left out." in foot
    )
