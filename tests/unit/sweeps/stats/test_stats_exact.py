"""Exact permutation tests, pairing, Holm and IQM against values computed independently.

mwu_exact (midranks) is exact.py's permutation test behind p_mwu, and the primary test of a comparison (inference.py: signed-rank / Mann-Whitney, ties counted
against rejection) is checked by brute force in test_inference.py.

The expected p-values come from hand-counted fractions or from a plain brute-force enumeration
written here (itertools over every split / every sign vector, exact Fractions), never from the
functions under test.
"""

from __future__ import annotations

import itertools
import json
import statistics
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest
from scipy import stats

from ablate.sweeps.report.files import write_report
from ablate.sweeps.stats import exact
from ablate.sweeps.stats.exact import holm, mwu_exact
from ablate.sweeps.stats.inference import seeds_to_reject
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import iqm, summarize, variant_stats
from tests.helpers.rows import cell_row

# ---- brute force, written plainly ---------------------------------------------------------------


def midranks(values: list[Fraction]) -> list[Fraction]:
    """1-based ranks; tied values share the mean of the ranks they span."""
    order = sorted(values)
    out = []
    for v in values:
        first = order.index(v) + 1
        last = len(order) - order[::-1].index(v)
        out.append(Fraction(first + last, 2))
    return out


def brute_mwu(x: list[float], y: list[float]) -> Fraction:
    """P(|U - n1 n2/2| >= |U_obs - n1 n2/2|) over every split of the pooled values."""
    pooled = [Fraction(v) for v in [*x, *y]]
    ranks = midranks(pooled)
    n1 = len(x)
    centre = Fraction(n1 * (len(pooled) + 1), 2)  # E[rank sum]; U - n1n2/2 = ranksum - centre
    obs = abs(sum(ranks[:n1]) - centre)
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), n1):
        total += 1
        hits += abs(sum(ranks[i] for i in chosen) - centre) >= obs
    return Fraction(hits, total)


# ---- exact Mann-Whitney U -------------------------------------------------------------------------


def test_tie_case_from_the_issue() -> None:
    """All-0.5 vs all-1.0 over 5 seeds: only the 2 fully separated splits of C(10, 5) = 252."""
    res = variant_stats([0.5] * 5, [1.0] * 5)
    assert res["p_value"] == pytest.approx(2 / 252, rel=1e-12)
    assert round(res["p_value"], 5) == 0.00794
    assert res["test"] == "mann-whitney" and res["paired"] is False
    # every one of the 25 differences is -0.5: U = 0, and the midrank test agrees
    assert res["p_mwu"] == pytest.approx(res["p_value"], rel=1e-12)
    assert res["delta"] == -0.5 and res["ci"] == [-0.5, -0.5]
    # scipy's default falls back to the normal approximation with ties: half the exact value
    assert stats.mannwhitneyu([0.5] * 5, [1.0] * 5).pvalue == pytest.approx(0.00398, abs=1e-5)
    assert variant_stats([1.0] * 5, [0.5] * 5)["p_value"] == pytest.approx(2 / 252, rel=1e-12)


# (x, y, the exact p as a hand-counted fraction, or None: use the brute force above)
HAND_CASES = [
    # all tied within each side, fully separated: 2 of C(n1+n2, n1) splits are as extreme
    ([0.5] * 3, [1.0] * 3, Fraction(2, 20)),
    ([0.5] * 4, [1.0] * 4, Fraction(2, 70)),
    ([0.0] * 10, [1.0] * 10, Fraction(2, comb(20, 10))),
    # 3 vs 7 separated: the other tail (all 3 among the 1.0s) has rank-sum deviation 4.5 < 10.5,
    # so only the observed split counts: 1 / C(10, 3)
    ([0.5] * 3, [1.0] * 7, Fraction(1, 120)),
    # x = {0.5, 0.5, 1.0}, y = {1.0, 1.0, 1.0}: midranks 1.5 (x2) and 4.5 (x4); with j of the 0.5s
    # in x the rank sum is 13.5 - 3j, centre 10.5: j = 2 (4 splits) and j = 0 (4 splits) are as
    # extreme as observed, j = 1 (12 splits) is not: 8 / 20
    ([0.5, 0.5, 1.0], [1.0, 1.0, 1.0], Fraction(8, 20)),
    # every value tied: every split has the observed statistic
    ([0.7] * 4, [0.7] * 5, Fraction(1)),
    # partial ties, unequal sizes, both directions (brute force)
    ([0.5, 0.5, 0.75, 1.0], [0.75, 1.0, 1.0, 1.0, 1.0], None),
    ([1.0, 1.0, 0.5], [0.5, 0.5, 0.5, 0.75], None),
    ([0.875, 1.0, 1.0, 1.0, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0], None),
    ([0.5, 0.5, 0.5, 0.5, 0.5, 0.625], [0.5, 0.625, 1.0, 1.0, 1.0, 1.0], None),
    ([0.25, 0.5, 0.5, 0.75, 0.75, 1.0, 1.0], [0.5, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0], None),
    ([0.5] * 8, [0.5, 0.5, 1.0], None),
    ([0.9, 0.9, 0.95, 0.95, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.5, 0.9, 1.0], None),
    ([0.125, 0.25, 0.375], [0.5, 0.625, 0.75, 0.875], Fraction(2, 35)),  # no ties, separated
]


@pytest.mark.parametrize(("x", "y", "expected"), HAND_CASES)
def test_exact_mwu_hand_cases(x: list[float], y: list[float], expected: Fraction | None) -> None:
    if expected is None:
        expected = brute_mwu(x, y)
    else:
        assert len(x) + len(y) > 14 or brute_mwu(x, y) == expected  # the hand count, checked
    for a, b in ((x, y), (y, x)):  # both directions give the same two-sided p
        p, name = mwu_exact(a, b)
        assert name == "mwu-exact"
        assert p == pytest.approx(float(expected), rel=1e-12, abs=1e-15)
        assert variant_stats(a, b)["p_mwu"] == pytest.approx(float(expected), rel=1e-12, abs=1e-15)


def test_exact_mwu_without_ties_matches_scipy_exact() -> None:
    """Without ties scipy's exact method (a different algorithm) is the reference."""
    x = [0.11, 0.52, 0.33, 0.94, 0.65, 0.26, 0.77, 0.48, 0.19, 0.7]
    y = [0.6, 0.81, 0.72, 0.93, 0.84, 0.55, 0.99, 0.87, 0.9, 0.95]
    ref = stats.mannwhitneyu(x, y, method="exact").pvalue
    assert mwu_exact(x, y)[0] == pytest.approx(ref, rel=1e-12)
    # without ties the primary test (U's own null) and the midrank test are the same test
    res = variant_stats(x, y)
    assert res["p_value"] == pytest.approx(ref, rel=1e-12) and res["p_mwu"] == pytest.approx(ref, rel=1e-12)


def test_monte_carlo_fallback_above_the_exact_size(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = [0.5, 0.5, 0.75, 1.0], [0.75, 1.0, 1.0, 1.0, 1.0]
    expected = float(brute_mwu(x, y))
    monkeypatch.setattr(exact, "EXACT_MWU_MAX", 5)
    monkeypatch.setattr(exact, "MC_RESAMPLES", 20_000)
    p, name = mwu_exact(x, y)
    assert name == "mwu-permutation-mc"
    assert p == pytest.approx(expected, abs=0.015) and p == mwu_exact(x, y)[0]  # seeded


# ---- the primary paired test, through summarize -------------------------------------------------


def brute_signed_rank_ties_against(d: list[float]) -> Fraction:
    """2 min(P(W+ <= #{A <= 0}), P(W+ <= #{A >= 0})), A the Walsh averages, W+ over every sign
    vector of the ranks 1..n (ties counted against rejection), capped at 1."""
    n = len(d)
    a = [(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)]
    null = [
        sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
        for signs in itertools.product((0, 1), repeat=n)
    ]
    low, high = sum(v <= 0 for v in a), sum(v >= 0 for v in a)
    return min(
        Fraction(1), Fraction(2 * min(sum(t <= low for t in null), sum(t <= high for t in null)), 2**n)
    )


def test_paired_variant_stats() -> None:
    base = [0.9, 0.92, 0.95, 0.97, 0.99]
    var = [0.8, 0.9, 0.85, 0.97, 0.89]  # differences -0.1, -0.02, -0.1, 0, -0.1
    d = [v - b for v, b in zip(var, base, strict=True)]
    res = variant_stats(var, base, paired=True)
    assert res["paired"] is True and res["test"] == "signed-rank"
    # one Walsh average is 0 (d = 0 with itself), the other 14 negative: 2 P(W+ <= 1) = 2 x 2/32
    assert brute_signed_rank_ties_against(d) == Fraction(4, 32)
    assert res["p_value"] == pytest.approx(4 / 32)
    assert res["p_mwu"] == pytest.approx(float(brute_mwu(var, base)))
    walsh = [(d[i] + d[j]) / 2 for i in range(5) for j in range(i, 5)]
    assert res["delta"] == pytest.approx(statistics.median(walsh))  # Hodges-Lehmann
    assert res["ci"] is None and res["ci_confidence"] is None  # 5 pairs: at best 1 - 2/32 < 0.95
    assert res["delta_median"] == pytest.approx(0.89 - 0.95)  # kept: difference of medians
    assert res["p_improve"] == pytest.approx(0.1)  # no difference positive, one tie: 0.5 / 5
    with pytest.raises(ValueError, match="same length"):
        variant_stats(var[:4], base, paired=True)


# ---- Holm, IQM ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "adjusted"),
    [
        ([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),  # 3 x 0.01; 2 x 0.03; max(0.06, 1 x 0.04)
        ([0.5, 0.01], [0.5, 0.02]),
        ([0.02, 0.021, 0.5], [0.06, 0.06, 0.5]),  # 2 x 0.021 = 0.042 < 0.06: monotone
        ([0.6, 0.7], [1.0, 1.0]),  # capped at 1
        ([0.0625], [0.0625]),  # one comparison: unchanged
        ([0.0625, None, 0.0079], [0.0625, None, 0.0158]),  # None is not a comparison
        ([], []),
    ],
)
def test_holm_hand_values(raw: list[float | None], adjusted: list[float | None]) -> None:
    got = holm(raw)
    assert [g is None for g in got] == [a is None for a in adjusted]
    assert [g for g in got if g is not None] == pytest.approx([a for a in adjusted if a is not None])


def test_iqm() -> None:
    assert iqm([1, 2, 3, 4, 100]) == pytest.approx(3.0)  # n = 5: 1 dropped at each end
    assert iqm([8, 1, 7, 2, 6, 3, 5, 4]) == pytest.approx(4.5)  # n = 8: mean of 3, 4, 5, 6
    assert iqm([0.5, 1.0, 1.0]) == pytest.approx(2.5 / 3)  # n < 4: nothing trimmed, the mean
    assert iqm([]) is None
    res = variant_stats([0.5, 1.0, 1.0, 1.0, 0.5, 1.0], None)
    assert res["iqm"] == pytest.approx(0.875)  # n = 6 drops 1 each end: mean of 0.5, 1, 1, 1
    # Yuen: winsorized at the 2nd and 5th sorted values (0.5, 1.0: nothing changes), h = 4 kept
    w = [0.5, 0.5, 1.0, 1.0, 1.0, 1.0]
    se = (5 * statistics.variance(w) / (4 * 3)) ** 0.5
    half = stats.t.ppf(0.975, 3) * se
    assert res["iqm_ci"] == [pytest.approx(0.875 - half), pytest.approx(0.875 + half)]


# ---- summarize: pairing, Holm, methods ---------------------------------------------------------


def _row(variant: str, seed: int, acc: float | None, state: str = "complete") -> CellRow:
    return cell_row(variant, seed, acc, state=state)


def _shared_rows() -> list[CellRow]:
    rows = [_row("base", s, 1.0) for s in range(5)]
    rows += [_row("no_pe", s, 0.5) for s in range(5)]
    rows += [_row("one_head", s, v) for s, v in enumerate([0.9, 0.95, 1.0, 0.85, 0.9])]
    return rows


def _summarize(rows: list[CellRow], **kw: object) -> dict:
    return summarize(
        rows,
        experiment="e",
        metric="test/acc",
        direction="maximize",
        baseline="base",
        variants=["base", "no_pe", "one_head"],
        **kw,  # type: ignore[arg-type]
    )


def test_summarize_shared_seeds_is_paired_with_holm() -> None:
    s = _summarize(_shared_rows(), seeds=[0, 1, 2, 3, 4])
    base, no_pe, one = (s["variants"][n] for n in ("base", "no_pe", "one_head"))
    assert base["paired"] is None and base["test"] is None and base["p_holm"] is None
    for v in (no_pe, one):
        assert v["paired"] is True and v["test"] == "signed-rank"
        assert v["pairing"] == "paired on seeds 0–4"
        assert v["ci"] is None  # 5 pairs cannot reach 95 %
        assert v["min_seeds"] == seeds_to_reject(True, 0.05 / 2) == 7  # 2/2^7 <= 0.025 < 2/2^6
    assert no_pe["p_value"] == pytest.approx(2 / 32)
    assert no_pe["p_mwu"] == pytest.approx(2 / 252)  # the issue's tie case, unpaired
    # one_head: differences -0.1, -0.05, 0, -0.15, -0.1: one Walsh average at 0 -> 2 P(W+ <= 1)
    d = [-0.1, -0.05, 0.0, -0.15, -0.1]
    assert brute_signed_rank_ties_against(d) == Fraction(4, 32)
    assert one["p_value"] == pytest.approx(4 / 32)
    # Holm over k = 2: 2 x 0.0625 = 0.125; max(0.125, 1 x 0.125) = 0.125
    assert no_pe["p_holm"] == pytest.approx(0.125) and one["p_holm"] == pytest.approx(0.125)
    assert no_pe["delta"] == pytest.approx(-0.5) and no_pe["delta_median"] == pytest.approx(-0.5)
    assert one["iqm"] == pytest.approx((0.9 + 0.9 + 0.95) / 3)
    m = s["methods"]
    assert m["seeds"] == [0, 1, 2, 3, 4] and m["alpha"] == 0.05 and m["looks"] == 1
    assert m["paired_test"]["name"] == "signed-rank" and m["unpaired_test"]["name"] == "mann-whitney"
    assert m["multiple_comparisons"]["method"] == "holm" and m["multiple_comparisons"]["k"] == 2
    json.dumps(s, allow_nan=False)


def test_summarize_missing_variant_seed_pairs_the_complete_cases() -> None:
    """one_head lacks seed 4: it is paired on seeds 0-3 (complete cases); the baseline's seed 4
    still enters the unpaired statistics."""
    rows = [r for r in _shared_rows() if not (r.variant == "one_head" and r.seed == 4)]
    rows.append(_row("one_head", 4, None, state="failed"))
    s = _summarize(rows)
    one, no_pe = s["variants"]["one_head"], s["variants"]["no_pe"]
    assert one["paired"] is True and one["test"] == "signed-rank"
    assert one["pairing"] == "paired on seeds 0–3 (base's seed(s) 4 enter the descriptive statistics only)"
    # differences -0.1, -0.05, 0, -0.15: one Walsh average at 0, 9 negative: 2 P(W+ <= 1) over n = 4
    d = [-0.1, -0.05, 0.0, -0.15]
    assert brute_signed_rank_ties_against(d) == Fraction(4, 16)
    assert one["p_value"] == pytest.approx(4 / 16)
    assert one["p_mwu"] == pytest.approx(float(brute_mwu([0.9, 0.95, 1.0, 0.85], [1.0] * 5)))
    walsh = [(d[i] + d[j]) / 2 for i in range(4) for j in range(i, 4)]
    assert one["delta"] == pytest.approx(statistics.median(walsh))
    assert one["delta_median"] == pytest.approx(0.925 - 1.0)  # descriptive: against all 5 base seeds
    assert no_pe["paired"] is True
    assert s["variants"]["one_head"]["p_holm"] == pytest.approx(holm([no_pe["p_value"], one["p_value"]])[1])
    assert s["methods"]["seeds"] == [0, 1, 2, 3, 4]  # default: the seeds of the rows


def test_summarize_baseline_missing_seed_and_data_override() -> None:
    """A baseline cell still running (the live page) or failed leaves the design paired: the test
    runs on the shared seeds and needs what a paired design needs, not Mann-Whitney's 5."""
    rows = [r for r in _shared_rows() if not (r.variant == "base" and r.seed == 0)]
    s = _summarize(rows)
    for name in ("no_pe", "one_head"):
        v = s["variants"][name]
        assert v["paired"] is True and v["test"] == "signed-rank"
        assert (
            v["pairing"] == f"paired on seeds 1–4 ({name}'s seed(s) 0 enter the descriptive statistics only)"
        )
        assert v["min_seeds"] == seeds_to_reject(True, 0.05 / 2) == 7  # 2/128 <= 0.025 < 2/64
        assert v["n"] == 5  # the variant's own statistics keep every seed
    full = _summarize(_shared_rows())["variants"]["no_pe"]
    shared = [r for r in _shared_rows() if r.seed != 0]
    assert s["variants"]["no_pe"]["p_value"] == _summarize(shared)["variants"]["no_pe"]["p_value"] != None  # noqa: E711
    assert full["n"] == 5
    s = _summarize(_shared_rows(), overrides={"no_pe": {"model.pe": "none"}, "one_head": {"data.seed": 3}})
    assert s["variants"]["no_pe"]["paired"] is True
    one = s["variants"]["one_head"]
    assert one["paired"] is False and "overrides data.seed" in one["pairing"]
    s = _summarize(_shared_rows(), overrides={"one_head": {"data.num_workers": 2}})
    assert s["variants"]["one_head"]["paired"] is True  # does not change a seed's data


def test_report_shows_tests_holm_design_and_fixed_decimals(tmp_path: Path) -> None:
    rows = [r for r in _shared_rows() if not (r.variant == "one_head" and r.seed == 4)]
    spec = {
        "seeds": [0, 1, 2, 3, 4],
        "base": {
            "model": {"d_model": 64, "n_layers": 2, "n_heads": 4, "pe": "sinusoidal", "norm": "pre"},
            "data": {"batch_size": 64},
            "optim": {"lr": 0.002},
            "trainer": {"max_steps": 800},
            "seed": 0,
        },
        "variants": {"base": {}, "no_pe": {"model.pe": "none"}, "one_head": {"model.n_heads": 1}},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    summary = _summarize(rows, seeds=spec["seeds"], overrides=spec["variants"])
    md = write_report(tmp_path, summary, rows)["markdown"].read_text()
    assert "Seeds: 0–4 (5 per variant)." in md
    assert (
        "Base configuration: steps 800, lr 0.002, batch 64, d_model 64, layers 2, heads 4, "
        "PE sinusoidal, block pre." in md
    )
    assert "Overrides of no_pe: model.pe=none." in md and "Overrides of one_head: model.n_heads=1." in md
    assert "| no_pe | 5 | 0 | 0.500 [0.500, 0.500] | 0.500 | 0.500–0.500 |" in md
    # no_pe: 5 differences of -0.5, signed-rank p = 2/32. one_head lacks seed 4: paired on 0-3,
    # d = -0.15, -0.1, -0.05, 0: one Walsh average (0) is >= 0, so p = 2 P(T <= 1) = 2 x 2/16;
    # P(improve) = half the one tie of 4. Its unpaired MWU (4 vs 5; 0.85, 0.9, 0.95 below all
    # five 1.0s, one tie) stays in summary.json only: 6/126. Holm: 2 x 0.0625, max(0.125, 0.25).
    assert "| signed-rank | 0.0625 | 0.1250 | 0.00 |" in md
    assert "| signed-rank | 0.2500 | 0.2500 | 0.12 |" in md
    assert "p MWU" not in md and "0.0476" not in md  # descriptive, not in the report's table
    assert "Holm-adjusted across the k = 2 comparisons" in md
    assert md.splitlines()[2].startswith("- **no_pe: not distinguishable from base")
    written = json.loads((tmp_path / "summary.json").read_text())["variants"]
    assert written["one_head"]["p_mwu"] == pytest.approx(6 / 126)
    assert written["no_pe"]["p_holm"] == pytest.approx(0.125)
    assert written["one_head"]["p_holm"] == pytest.approx(0.25)
    page = (tmp_path / "report.html").read_text()
    assert "Holm-adjusted" in page and "signed-rank" in page and "model.pe=none" in page
