"""The design check (sweeps/stats/design.py) in every view of a verdict: a baseline at ceiling
with its variants, and every variant at chance, give sentences that name the problem and no seed
count, in summary.json, report.md, report.html, the terminal table and the W&B summary notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.storage import sqlite_url
from ablate.sweeps.ledger.study_views import result_attrs, set_attrs
from ablate.sweeps.report.build import report
from ablate.sweeps.stats.design import chance_band, chance_of, comparison_check, variant_flags
from tests.helpers.configs import TINY_BASE

CEILING = {  # the order-task ablation: the baseline at 1.000 on 7 of 7 seeds
    "baseline": [1.0] * 7,
    "gqa": [1.0, 1.0, 0.995, 1.0, 1.0, 0.99, 1.0],
    "talking": [1.0] * 6 + [0.995],
}
CHANCE = {  # a lookup grid where nothing learned: binary, test split of 200, majority 0.5
    "baseline": [0.5, 0.485, 0.51, 0.52, 0.495, 0.48, 0.505],
    "one_head": [0.49, 0.515, 0.5, 0.48, 0.52, 0.5, 0.485],
}
SPLITS = {"test": {"n": 200, "source": "generated", "majority": 0.5}}


def study(tmp_path: Path, values: dict[str, list[float]], **extra: Any) -> tuple[Any, Any, Path]:
    variants = {name: ({} if i == 0 else {"model.d_ff": 8 * i}) for i, name in enumerate(values)}
    spec = spec_from_dict({"name": "tiny", "base": TINY_BASE, "variants": variants, "seeds": 7, **extra})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = open_store(spec, sqlite_url(run_dir / "study.db"), create=True)
    store.ensure_cells()
    while (trial := store.claim()) is not None:
        value = values[trial.params["variant"]][trial.params["seed"]]
        ov = spec.variants[trial.params["variant"]]
        set_attrs(trial, result_attrs({"test/acc": value}, ov, diverged=False, wall_s=1.0, splits=SPLITS))
        store.study.tell(trial, value)
    return spec, store, run_dir


def views(
    run_dir: Path, summary: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> dict[str, str]:
    """The verdict as each view shows it: report.md, report.html, the terminal, W&B's notes."""
    from ablate.cli.tables import print_summary

    capsys.readouterr()
    print_summary(summary, run_dir)
    printed = capsys.readouterr()
    terminal = " ".join((printed.err + printed.out).split())  # rich wraps lines
    import wandb

    from ablate.sweeps.integrations import wandb_glue

    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def init(**kwargs: Any) -> Any:
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(wandb, "init", init)
    with pytest.raises(Stop):
        wandb_glue.log_summary(study_spec(run_dir), summary, run_dir / "metric.png", run_dir)
    return {
        "md": (run_dir / "report.md").read_text(),
        "html": " ".join((run_dir / "report.html").read_text().split()),
        "terminal": terminal,
        "wandb": seen["notes"],
    }


def study_spec(run_dir: Path) -> Any:
    from ablate.sweeps.ledger.run_folder import open_run

    return open_run(run_dir)[0]


def test_a_baseline_at_ceiling_names_the_ceiling_and_gives_no_seed_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, store, run_dir = study(tmp_path, CEILING)
    (run_dir / "spec.json").write_text(json.dumps(spec.to_dict()))
    summary = report(spec, store, run_dir)
    for name in ("gqa", "talking"):
        sentence = summary["verdicts"][name]
        assert (
            "the design cannot answer: baseline at ceiling: 1.000 on 7/7 seeds; make the task harder"
            in sentence
        )
        assert "seeds would detect" not in sentence and "needs at least" not in sentence
        for where, text in views(run_dir, summary, capsys, monkeypatch).items():
            assert "baseline at ceiling: 1.000 on 7/7 seeds" in text, where
    assert summary["design"]["comparisons"]["gqa"]["uninformative"]


def test_every_variant_at_chance_names_chance_and_gives_no_seed_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, store, run_dir = study(tmp_path, CHANCE)
    (run_dir / "spec.json").write_text(json.dumps(spec.to_dict()))
    summary = report(spec, store, run_dir)
    sentence = summary["verdicts"]["one_head"]
    assert "the design cannot answer: baseline at chance: within [0.410, 0.590]" in sentence
    assert "majority-class rate 0.500 (test, 200 examples), on 7/7 seeds; train longer" in sentence
    assert "seeds would detect" not in sentence
    for where, text in views(run_dir, summary, capsys, monkeypatch).items():
        assert "baseline at chance" in text, where


def test_the_flags_and_their_thresholds() -> None:
    low, high = chance_band(0.5, 200)
    assert (low, high) == (0.41, 0.59)  # Binomial(200, 0.5)'s 0.5 % and 99.5 % quantiles: 82 and 118
    chance = {"split": "test", "majority": 0.5, "n": 200, "band": [low, high]}
    assert [f["kind"] for f in variant_flags([1.0, 1.0, 1.0, 0.9], "test/acc", None)] == ["ceiling"]
    assert variant_flags([1.0, 1.0, 0.9, 0.9], "test/acc", None) == []  # half is not most
    assert variant_flags([1.0, 1.0, 1.0], "test/loss", None) == [
        {"kind": "no_spread", "seeds": 3, "n": 3, "text": "identical on every seed: 1 on 3/3 seeds"}
    ]  # a loss has no ceiling
    assert [f["kind"] for f in variant_flags([0.5, 0.6, 0.45], "test/acc", chance)] == ["chance"]
    assert variant_flags([0.7, 0.75, 0.8], "test/acc", chance) == []
    split = [{"splits": SPLITS}]
    assert chance_of("test/acc", split)["band"] == [0.41, 0.59]
    assert chance_of("test/f1", split) is None and chance_of("val/acc", split) is None
    assert chance_of("test/acc", [{"splits": {"test": {"n": 200, "source": "old"}}}]) is None  # not recorded


def test_a_flag_on_one_side_is_a_note_and_identical_seeds_are_uninformative() -> None:
    ceiling = variant_flags([1.0] * 5, "test/acc", None)
    worse = comparison_check("baseline", ceiling, [], [-0.1, -0.2, -0.1, -0.3, -0.1])
    assert not worse["uninformative"] and worse["notes"] == [
        "baseline at ceiling: 1.000 on 5/5 seeds: only a loss can show"
    ]
    same = comparison_check("baseline", [], [], [0.0] * 5)
    assert same["uninformative"] and "identical to baseline on every seed (Δ 0 on 5/5)" in same["reasons"][0]


def test_between_variant_comparisons_and_margins_reach_the_report(tmp_path: Path) -> None:
    base = [0.80, 0.82, 0.79, 0.81, 0.83, 0.80, 0.78]
    values = {
        "baseline": base,
        "near": [b + d for b, d in zip(base, [0.001, -0.002, 0.0, 0.002, -0.001, 0.001, 0.0], strict=True)],
        "far": [
            b - 0.1 + d for b, d in zip(base, [0.001, -0.002, 0.003, 0.002, -0.001, 0.0, 0.004], strict=True)
        ],
    }
    spec, store, run_dir = study(tmp_path, values, compare="all", margin=0.01)
    (run_dir / "spec.json").write_text(json.dumps(spec.to_dict()))
    summary = report(spec, store, run_dir)
    assert list(summary["verdicts"]) == ["near", "far", "near vs far"]
    assert summary["verdicts"]["near vs far"].startswith(
        "near is better than far on tiny (test/acc): Δ +0.10"
    )
    assert "near is equivalent to baseline within ±0.010: Δ [" in summary["verdicts"]["near"]
    assert "Equivalence within ±0.010 not shown" in summary["verdicts"]["far"]
    md = (run_dir / "report.md").read_text()
    assert "## Between variants" in md and "| near vs far | 7 |" in md
    assert "across the k = 3 comparisons with the baseline and 1 between variants" in md


def test_ablate_power_gives_no_seed_count_to_an_uninformative_comparison(tmp_path: Path) -> None:
    from ablate.sweeps.report.power_table import power_table

    spec, store, _ = study(tmp_path, CEILING, margin=0.01)
    table = power_table(spec, store, delta=None, target=0.8, alpha=0.05, max_seeds=50)
    for name in ("gqa", "talking"):
        row = table["variants"][name]
        assert row["uninformative"] and row["detect"] is None and row["equivalence"] is None
        assert row["note"].startswith("the design cannot answer: baseline at ceiling: 1.000 on 7/7 seeds")
