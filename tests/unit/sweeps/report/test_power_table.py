"""``ablate power RUN_DIR``'s table: per comparison, the seeds that detect the margin and the seeds
that show equivalence within it, each with its share, Holm-safe; no point answer without a margin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.cli.parser import main
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.report import power_table as table
from ablate.sweeps.stats.inference import seeds_to_reject
from ablate.sweeps.stats.power import seeds_to_detect, seeds_to_show_equivalence
from ablate.sweeps.stats.rows import CellRow
from tests.helpers.configs import TINY_BASE
from tests.helpers.rows import cell_rows

BASE = [0.80, 0.82, 0.79, 0.81, 0.83, 0.80, 0.82]
NOISY = [0.81, 0.80, 0.82, 0.79, 0.84, 0.83, 0.80]


def spec(variants: dict, **extra: object) -> object:
    return spec_from_dict({"name": "p", "base": TINY_BASE, "variants": {"baseline": {}, **variants}, **extra})


def study(monkeypatch: pytest.MonkeyPatch, rows: list[CellRow]) -> None:
    monkeypatch.setattr(table, "collect_rows", lambda store: rows)
    monkeypatch.setattr(table, "study_splits", lambda store: {"sets": []})  # no store: no chance rate


def test_each_comparison_is_held_to_alpha_over_k(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two comparisons: each at alpha / 2, so equal differences need the seeds of 0.025 (7)."""
    study(monkeypatch, cell_rows({"baseline": [1.0] * 5, "v": [0.5] * 5, "w": [0.25] * 5}))
    sp = spec({"v": {"model.pe": "none"}, "w": {"data.seed": 2}})
    out = table.power_table(sp, None, delta=None, margin=0.1, target=0.8, alpha=0.05, max_seeds=50)
    assert out["comparisons"] == 2 and out["alpha_per_comparison"] == 0.025
    v, w = out["variants"]["v"], out["variants"]["w"]
    assert v["test"] == "signed-rank" and w["test"] == "mann-whitney"
    assert v["detect"] == {"effect": 0.1, "seeds": seeds_to_reject(True, 0.025), "share": 1.0} and v["note"]
    assert w["detect"]["seeds"] == seeds_to_reject(False, 0.025) == 5  # 2/252 <= 0.025 < 2/70
    assert v["equivalence"]["seeds"] == seeds_to_reject(True, 0.05)  # its interval is at 1 - 2 alpha
    assert v["estimate"] == pytest.approx(-0.5) and v["pilot_seeds"] == 5


def test_a_margin_gives_both_claims_with_their_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    study(monkeypatch, cell_rows({"baseline": BASE, "no_pe": NOISY}))
    sp = spec({"no_pe": {"model.pe": "none"}})
    out = table.power_table(sp, None, delta=None, margin=0.01, target=0.8, alpha=0.05, max_seeds=200)
    v = out["variants"]["no_pe"]
    (pilot,) = table.pilots(sp, cell_rows({"baseline": BASE, "no_pe": NOISY}))
    d = seeds_to_detect(pilot, effect=0.01, alpha=0.05, max_seeds=200)
    e = seeds_to_show_equivalence(pilot, margin=0.01, alpha=0.05, max_seeds=200)
    assert v["detect"] == {"effect": 0.01, "seeds": d.seeds, "share": d.share}
    assert v["equivalence"] == {"margin": 0.01, "seeds": e.seeds, "share": e.share}
    assert d.seeds is not None and 0.5 < d.share < 1 and e.seeds is not None and 0.5 < e.share < 1
    given = table.power_table(sp, None, delta=0.02, margin=0.01, target=0.8, alpha=0.05, max_seeds=200)
    assert given["variants"]["no_pe"]["detect"]["seeds"] < d.seeds  # --delta sets the effect detected
    assert given["variants"]["no_pe"]["equivalence"] == v["equivalence"]


def test_without_a_margin_there_is_no_point_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pilot's own Δ is no effect to size seeds for: the table says a margin is needed."""
    study(monkeypatch, cell_rows({"baseline": BASE, "no_pe": NOISY}))
    out = table.power_table(
        spec({"no_pe": {"model.pe": "none"}}), None, delta=None, target=0.8, alpha=0.05, max_seeds=50
    )
    v = out["variants"]["no_pe"]
    assert v["detect"] is None and v["equivalence"] is None and v["note"] == table.NO_EFFECT


def test_the_margin_defaults_to_the_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    study(monkeypatch, cell_rows({"baseline": BASE, "no_pe": NOISY, "one": NOISY[::-1]}))
    sp = spec({"no_pe": {"model.pe": "none"}, "one": {"model.n_heads": 1}}, margin={"no_pe": 0.01})
    out = table.power_table(sp, None, delta=None, target=0.8, alpha=0.05, max_seeds=200)
    assert out["variants"]["no_pe"]["margin"] == 0.01 and out["variants"]["no_pe"]["equivalence"]
    assert out["variants"]["one"]["margin"] is None and out["variants"]["one"]["note"] == table.NO_EFFECT
    assert out["equivalence_alpha_per_comparison"] == 0.05  # one comparison has a margin
    assert table.margin_of(object(), "x", None) is None  # a spec without margins


def test_ablate_power_prints_the_shares_and_writes_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = cell_rows({"baseline": BASE, "no_pe": NOISY})
    sp = spec({"no_pe": {"model.pe": "none"}})
    monkeypatch.setattr(table, "open_run", lambda run_dir, storage: (sp, None))
    study(monkeypatch, rows)
    assert main(["power", str(tmp_path), "--margin", "0.01"]) == 0
    printed = capsys.readouterr()
    v = json.loads((tmp_path / "power.json").read_text())["variants"]["no_pe"]
    for claim in ("detect", "equivalence"):
        assert f"{v[claim]['seeds']} (±0.01: enough in {100 * v[claim]['share']:.0f} %)" in printed.out
    assert "enough in S %: the probability, under that model, that a pilot like this one" in printed.err
    assert main(["power", str(tmp_path)]) == 0  # no margin anywhere: says so
    assert "no margin: give --margin M" in capsys.readouterr().err
