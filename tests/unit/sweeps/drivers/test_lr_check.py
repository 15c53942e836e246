"""The per-variant lr check: ``ablate lr-check`` (its runs' names, learning
rates and refusals, without running sweeps) and the README's choice and statistics of the
per-variant lr rows (docs/_gen/tuned_rows.py) on synthetic results.csv rows."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from ablate.cli import main
from ablate.errors import ConfigError
from ablate.experiments.specs.spec_file import load_spec
from ablate.sweeps.drivers import lr_check
from ablate.sweeps.stats.exact import mwu_exact
from ablate.sweeps.stats.rows import CellRow
from docs._gen import tuned_rows
from tests.helpers.configs import TINY_BASE, write_spec
from tests.helpers.rows import cell_row

# ---- lr_check: names, learning rates, refusals ---------------------------------------------------


def test_run_names_and_factors() -> None:
    assert lr_check.lr_run_name("heads", 0.5) == "heads-lr0.5x"
    assert lr_check.lr_run_name("heads", 2.0) == "heads-lr2x"
    assert lr_check.lr_run_name("heads", 0.25) == "heads-lr0.25x"
    present = {
        "heads",
        "heads-lr0.5x",
        "heads-lr2x",
        "heads-lr2.0x",
        "heads-lr1x",
        "heads-tuned",
        "heads-8-lr2x",
    }
    assert tuned_rows.companions("heads", present) == (
        {0.5: "heads-lr0.5x", 2.0: "heads-lr2x"},
        "heads-tuned",
    )
    assert tuned_rows.companions("heads-8", present) == ({2.0: "heads-8-lr2x"}, None)
    assert lr_check.parse_factors("0.5,2") == [0.5, 2.0]
    for bad in ("1", "0", "-1", "2,2", "a", "", "nan", "inf", "0.5,1"):
        with pytest.raises(ConfigError, match=r"--factors .*distinct positive numbers other than 1"):
            lr_check.parse_factors(bad)


def test_lr_values_are_yaml_floats() -> None:
    assert lr_check.lr_value(0.002, 0.5) == "0.001"
    assert lr_check.lr_value(0.005, 2.0) == "0.01"
    assert lr_check.lr_value(0.003, 3.0) == "0.009"  # 0.009000000000000001 in floats
    assert lr_check.lr_value(2e-5, 0.5) == "1.0e-05"  # YAML reads 1e-05 as a string
    for text in ("0.001", "1.0e-05", lr_check.lr_value(4e-4, 0.25)):
        assert isinstance(yaml.safe_load(text), float)


def test_plan_scales_the_resolved_lr_and_renames_the_spec(tmp_path: Path) -> None:
    spec_path = write_spec(tmp_path, profiles={"cpu": {"optim.lr": 0.004}})
    (tmp_path / "specs").mkdir()
    plan = lr_check.plan(spec_path, ["trainer.max_steps=2"], "cpu", [0.5, 2.0], tmp_path / "specs")
    assert [(f.name, ov) for f, ov in plan] == [
        ("tiny-lr0.5x.yaml", ["trainer.max_steps=2", "optim.lr=0.002"]),
        ("tiny-lr2x.yaml", ["trainer.max_steps=2", "optim.lr=0.008"]),
    ]
    shared = load_spec(spec_path, ["trainer.max_steps=2"], profile="cpu")
    for (spec_file, ov), factor in zip(plan, (0.5, 2.0), strict=True):
        renamed = load_spec(spec_file, ov, profile="cpu")  # read from another folder: paths absolute
        assert renamed.name == lr_check.lr_run_name("tiny", factor)
        assert renamed.base.optim.lr == pytest.approx(factor * 0.004)
        assert (
            renamed.base.override({"optim.lr": 0.004}) == shared.base and renamed.variants == shared.variants
        )
        assert tuned_rows.lr_run_differences(shared.to_dict(), renamed.to_dict(), factor) == []
    # an optim.lr on the command line is the base lr; each factor replaces it
    plan = lr_check.plan(spec_path, ["optim.lr=0.01"], None, [0.5], tmp_path / "specs")
    assert plan[0][1] == ["optim.lr=0.005"]


def test_the_renamed_spec_keeps_its_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "base.yaml").write_text(yaml.safe_dump(TINY_BASE))
    spec_path = write_spec(tmp_path, base="configs/base.yaml", overrides={"data.cache_dir": "cache"})
    (tmp_path / "elsewhere").mkdir()
    [(spec_file, ov)] = lr_check.plan(spec_path, [], None, [2.0], tmp_path / "elsewhere")
    shared, renamed = load_spec(spec_path), load_spec(spec_file, ov)
    assert renamed.base.data.cache_dir == shared.base.data.cache_dir == str(tmp_path / "cache")
    assert renamed.base == shared.base.override({"optim.lr": 2 * shared.base.optim.lr})


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--factors", "1,2"], "--factors '1,2': give distinct positive numbers other than 1"),
        (["--factors", "200"], "lr x200 of the base lr 0.01: optim.lr=2.0 is out of range; valid: (0, 1]"),
        (["--workers", "0"], "--workers=0 is out of range; valid: [1, 256]"),
        (["model.no_such_key=1"], "model.no_such_key"),
    ],
)
def test_bad_options_are_one_message_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    spec_path = write_spec(tmp_path, base={**TINY_BASE, "optim": {"lr": 0.01}})
    runs = tmp_path / "runs"
    assert main(["lr-check", str(spec_path), "--runs", str(runs), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and err.count("\n") == 1
    assert not runs.exists()


def test_a_variant_with_its_own_lr_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    variants = {"baseline": {}, "no_pe": {"model.pe": "none"}, "fast": {"optim.lr": 0.01}}
    spec_path = write_spec(tmp_path, variants=variants)
    runs = tmp_path / "runs"
    assert main(["lr-check", str(spec_path), "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert "tiny: variant(s) fast set optim.lr themselves, which would win over the scaled base lr" in err
    assert not runs.exists()


# ---- the per-variant lr rows: choice and statistics ---------------------------------------------


def rows(values: dict[str, list[tuple[float | None, float | None]]]) -> list[CellRow]:
    """results.csv rows as read back: variant -> (val/acc, test/acc) per seed (None: no value)."""
    return [
        cell_row(v, s, test, metrics={"val/acc": val}, diverged=val is None, wall_s=1.0)
        for v, per_seed in values.items()
        for s, (val, test) in enumerate(per_seed)
    ]


SUMMARY = {
    "metric": "test/acc",
    "direction": "maximize",
    "baseline": "baseline",
    "variants": dict.fromkeys(("baseline", "a", "b")),
}
SPEC = {"variants": {"baseline": {}, "a": {"model.pe": "none"}, "b": {"model.n_heads": 1}}}


def test_each_variant_gets_the_factor_with_the_best_median_val_not_test() -> None:
    runs = {
        1.0: rows({"baseline": [(0.8, 0.80)] * 5, "a": [(0.6, 0.90)] * 5, "b": [(0.5, 0.5)] * 5}),
        # a: x2 is best on validation though worse on test; b: x0.5 and x2 tie above x1 -> x0.5
        0.5: rows({"baseline": [(0.8, 0.70)] * 5, "a": [(0.5, 0.95)] * 5, "b": [(0.7, 0.6)] * 5}),
        2.0: rows({"baseline": [(0.8, 0.60)] * 5, "a": [(0.9, 0.85)] * 5, "b": [(0.7, 0.7)] * 5}),
    }
    assert tuned_rows.choose_factors(runs, ["baseline", "a", "b"]) == {"baseline": 1.0, "a": 2.0, "b": 0.5}
    # medians, not means: one bad seed at x2 does not move the median
    runs[2.0] = rows(
        {"baseline": [(0.9, 0.6)] * 4 + [(0.0, 0.6)], "a": [(0.9, 0.85)] * 5, "b": [(0.7, 0.7)] * 5}
    )
    assert tuned_rows.choose_factors(runs, ["baseline"]) == {"baseline": 2.0}
    # no val value anywhere (every cell diverged to NaN, which counts as the worst value 0)
    runs = {1.0: rows({"baseline": [(None, None)]}), 2.0: rows({"baseline": [(None, None)]})}
    assert tuned_rows.choose_factors(runs, ["baseline"]) == {"baseline": 1.0}  # 0 = 0: x1 wins the tie
    assert tuned_rows.choose_factors({1.0: [], 2.0: []}, ["baseline"]) == {"baseline": None}


def test_tuned_statistics_pair_each_seed_with_the_baseline_at_its_own_factor() -> None:
    base_x1 = [0.80, 0.82, 0.84, 0.86, 0.88]
    a_x2 = [0.70, 0.83, 0.80, 0.95, 0.90]
    b_x05 = [0.50, 0.52, 0.51, 0.53, 0.49]
    runs = {
        1.0: rows({"baseline": [(0.9, t) for t in base_x1], "a": [(0.1, 0.99)] * 5, "b": [(0.1, 0.99)] * 5}),
        0.5: rows({"baseline": [(0.5, 0.0)] * 5, "a": [(0.1, 0.99)] * 5, "b": [(0.6, t) for t in b_x05]}),
        2.0: rows({"baseline": [(0.5, 0.0)] * 5, "a": [(0.7, t) for t in a_x2], "b": [(0.2, 0.99)] * 5}),
    }
    out = tuned_rows.per_variant_lr(runs, SUMMARY, SPEC)
    assert out["factors"] == {"baseline": 1.0, "a": 2.0, "b": 0.5}
    assert out["baseline"] == "baseline (lr ×1)" and list(out["variants"]) == [
        "baseline (lr ×1)",
        "a (lr ×2)",
        "b (lr ×0.5)",
    ]
    a = out["variants"]["a (lr ×2)"]
    d = np.array(a_x2) - np.array(base_x1)  # -0.10, +0.01, -0.04, +0.09, +0.02: no zero, no tie
    assert a["median"] == pytest.approx(0.83) and a["min"] == 0.70 and a["max"] == 0.95
    # paired with the baseline at x1 seed by seed: the signed-rank test of d and its
    # Hodges-Lehmann estimate (the median of the Walsh averages (d_i + d_j) / 2, i <= j)
    walsh = [(d[i] + d[j]) / 2 for i, j in itertools.combinations_with_replacement(range(5), 2)]
    assert a["paired"] and a["test"] == "signed-rank"
    assert a["delta"] == pytest.approx(float(np.median(walsh)))
    assert a["p_value"] == pytest.approx(stats.wilcoxon(d, method="exact").pvalue)
    assert a["delta_median"] == pytest.approx(0.83 - 0.84) and a["p_mwu"] == pytest.approx(
        mwu_exact(a_x2, base_x1)[0]
    )
    assert a["p_improve"] == pytest.approx(np.mean(d > 0))  # over the per-seed differences
    # 5 pairs cannot reach 95 % (the widest interval has 1 - 2/32): no interval; with Holm over
    # the two comparisons p <= 0.025 needs 7 pairs (2 / 2^7)
    assert a["ci"] is None and a["ci_confidence"] is None and a["min_seeds"] == 7
    b = out["variants"]["b (lr ×0.5)"]
    assert b["p_value"] == pytest.approx(1 / 16)  # 5 of 5 seeds below: 2 / 2^5
    p_sorted = sorted([a["p_value"], b["p_value"]])
    assert b["p_holm"] == pytest.approx(min(1.0, 2 * p_sorted[0]))  # Holm over the two comparisons
    assert a["p_holm"] == pytest.approx(max(2 * p_sorted[0], p_sorted[1]))
    assert out["variants"]["baseline (lr ×1)"]["p_value"] is None


def test_a_variant_that_changes_the_data_is_compared_unpaired() -> None:
    spec = {"variants": {"baseline": {}, "a": {"data.n_train": 10}, "b": {"model.n_heads": 1}}}
    runs = {1.0: rows({"baseline": [(0.9, 0.8)] * 3, "a": [(0.9, 0.7)] * 3, "b": [(0.9, 0.7)] * 3})}
    out = tuned_rows.per_variant_lr(runs, SUMMARY, spec)
    assert (
        not out["variants"]["a (lr ×1)"]["paired"] and out["variants"]["a (lr ×1)"]["test"] == "mann-whitney"
    )
    assert out["variants"]["b (lr ×1)"]["paired"]


def test_cell_time_counts_the_cells_that_recorded_one() -> None:
    cells = [cell_row("a", s, 1.0, wall_s=w) for s, w in enumerate([30.0, 31.0, 60.0, None, float("nan")])]
    assert tuned_rows.cell_time(cells) == (3, 31.0, 121.0)
    assert tuned_rows.cell_time([cell_row("a", 0, wall_s=None)]) is None
    assert tuned_rows.cell_time_note([("ListOps", cells)]) == (
        " Cell time (each cell's own wall time; parallel workers overlap them): ListOps 3 cells, median 31 s, total 2.0 min."
    )


def test_results_csv_reads_back_typed(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_text(
        "variant,seed,state,diverged,wall_s,trial,wandb_id,error,test/acc,val/acc\n"
        "baseline,10,complete,False,2.5,3,,,0.5,0.75\n"
        "no_pe,2,complete,True,1.0,4,,,,\n"
        "no_pe,3,fail,,,5,,boom,,\n"
    )
    got = tuned_rows.read_results_csv(path)
    assert got[0] == CellRow(
        variant="baseline", seed=10, state="complete", diverged=False, wall_s=2.5, trial=3,
        metrics={"test/acc": 0.5, "val/acc": 0.75},
    )  # fmt: skip
    assert got[1].diverged is True and got[1].metric("test/acc") is None and got[1].metrics == {}
    assert got[2].state == "fail" and got[2].error == "boom" and got[2].wall_s is None
    # what a sweep writes reads back as the same row
    rows = [*got, CellRow("a", 0, metrics={"test/acc": float("nan")}, diverged=True)]
    assert [r.csv_fields() for r in tuned_rows.read_results_csv(_written(tmp_path, rows))][:3] == [
        r.csv_fields() for r in got
    ]


def _written(tmp_path: Path, rows: list[CellRow]) -> Path:
    """results.csv as the report writes it (sweeps/report/files.py)."""
    from ablate.sweeps.report.files import results_csv

    path = tmp_path / "written.csv"
    path.write_text(results_csv(rows))
    return path
