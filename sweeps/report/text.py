"""The words and cells that report.md, report.html and the terminal tables share: number
formats, the statistics table's header and rows, the status, design, data-split, seed-factor and
adaptive-seed lines, and the head digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ablate.datamodules.splits import MIN_EVAL_EXAMPLES, describe, small_splits_warning
from ablate.errors import ConfigError
from ablate.experiments.schema.machine import NOT_RECORDED
from ablate.sweeps.ledger.run_folder import read_json_object
from ablate.sweeps.stats.inference import ALPHA, min_p, widest_confidence
from ablate.sweeps.stats.rows import INTERVAL_KEYS
from ablate.sweeps.stats.summary import interval_range, seeds_text
from ablate.trees import flatten


def fmt(x: float | None, spec: str = ".4g") -> str:
    return "–" if x is None else format(x, spec)


def params_text(params: dict[str, Any]) -> str:
    """``optim.lr=0.001295, model.block=post``: floats to 4 significant digits."""
    return ", ".join(f"{k}={p:.4g}" if isinstance(p, float) else f"{k}={p}" for k, p in params.items())


def head_digest(seeds: dict[int, dict[str, Any]]) -> tuple[float, str]:
    """(mean entropy over seeds/layers/heads, most important head "L{l}H{h} (Δ)") of one variant.

    Importance is averaged over seeds when every seed has the same layer x head shape.
    """
    ent = [np.asarray(h["entropy"], dtype=float) for h in seeds.values()]
    imp = [np.asarray(h["importance"], dtype=float) for h in seeds.values()]
    mean_ent = float(np.mean([e.mean() for e in ent]))
    same = all(i.shape == imp[0].shape for i in imp)
    avg = np.mean(imp, axis=0) if same else imp[0]
    layer, head = np.unravel_index(int(np.nanargmax(avg)), avg.shape)
    return mean_ent, f"L{layer}H{head} ({avg[layer, head]:+.3g})"


# The base configuration that matters for reading a result (report.md's "Design" line).
BASE_HIGHLIGHTS = {
    "steps": "trainer.max_steps",
    "lr": "optim.lr",
    "batch": "data.batch_size",
    "d_model": "model.d_model",
    "layers": "model.n_layers",
    "heads": "model.n_heads",
    "PE": "model.pe",
    "block": "model.block",
}
# Metric names that are proportions in [0, 1] (3 decimals); anything else gets 4.
PROPORTION_WORDS = ("acc", "f1", "precision", "recall", "auc", "mcc", "error_rate")


def decimals(metric: str) -> int:
    """Fixed decimals for a metric's values: 3 for accuracy-like proportions, 4 otherwise (loss)."""
    name = metric.lower()
    return 3 if any(w in name for w in PROPORTION_WORDS) and "loss" not in name else 4


def fmt_p(p: float | None) -> str:
    """A p-value with 4 fixed decimals (``0.0079``, ``1.0000``); ``<0.0001`` below that."""
    if p is None:
        return "–"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _ci(ci: list[float | None] | None, d: int, sign: str = "") -> str:
    return "" if ci is None else f" [{fmt(ci[0], f'{sign}.{d}f')}, {fmt(ci[1], f'{sign}.{d}f')}]"


def conf_text(confidence: float | None) -> str:
    """An achieved confidence as the reports print it: ``93.8 %``, ``96.9 %``."""
    return "–" if confidence is None else f"{100 * confidence:.1f} %"


def decision_p(v: dict[str, Any]) -> float | None:
    """The p the interval inverts: p_seq under adaptive seeds (L looks), else the exact p."""
    return v["p_seq"] if v.get("p_seq") is not None else v.get("p_value")


def delta_text(v: dict[str, Any], d: int) -> str:
    """``+0.012 [+0.003, +0.020] (96.9 %)``: Δ, the interval that inverts the test and its
    achieved confidence; ``+0.012 (no interval at these seeds)`` when the seeds cannot reach it
    (the verdict says how many could decide)."""
    s = f"+.{d}f"
    if v.get("ci") is None:
        return fmt(v.get("delta"), s) + (" (no interval at these seeds)" if v.get("test") else "")
    return fmt(v["delta"], s) + _ci(v["ci"], d, "+") + f" ({conf_text(v.get('ci_confidence'))})"


def row_cells(name: str, v: dict[str, Any], baseline: str, d: int = 3) -> list[str]:
    """One table row; ``d`` = decimals of the metric's values (see ``decimals``)."""
    f = f".{d}f"
    std = f" ± {fmt(v['std'], f)}" if v["std"] is not None else ""
    return [
        name,
        str(v["n"]),
        str(v["n_diverged"]),
        f"{fmt(v['median'], f)} [{fmt(v['q1'], f)}, {fmt(v['q3'], f)}]",
        fmt(v.get("iqm"), f),
        f"{fmt(v['min'], f)}–{fmt(v['max'], f)}",
        f"{fmt(v['mean'], f)}{std}",
        "0 (baseline)" if name == baseline else delta_text(v, d),
        v.get("test") or "–",
        fmt_p(decision_p(v)),
        fmt_p(v.get("p_holm")),
        fmt(v["p_improve"], ".2f"),
    ]


HEADER = [
    "variant",
    "n",
    "diverged",
    "median [q1, q3]",
    "IQM",
    "min–max",
    "mean ± std",
    "Δ [CI] (confidence)",
    "test",
    "p",
    "p Holm",
    "P(improve)",
]


def stat_rows(variants: dict[str, dict[str, Any]], baseline: str, metric: str) -> list[list[str]]:
    """The statistics table of one metric (HEADER's columns), a row per variant in order: what
    report.md, report.html and ``ablate sweep``'s terminal table show."""
    return [row_cells(name, v, baseline, decimals(metric)) for name, v in variants.items()]


HEAD_HEADER = ["variant", "mean entropy (nats)", "most important head (Δ metric)"]


def head_rows(heads: dict[str, dict[int, dict[str, Any]]]) -> list[list[str]]:
    """The attention heads table (HEAD_HEADER): each variant's ``head_digest``."""
    return [[name, f"{ent:.3f}", top] for name, (ent, top) in ((n, head_digest(s)) for n, s in heads.items())]


def status_line(summary: dict[str, Any]) -> str:
    c = summary["cells"]
    if not c["missing"]:
        return f"All {c['total']} cells complete."
    return f"Partial study: {c['complete']} of {c['total']} cells complete; missing: " + ", ".join(
        c["missing"]
    )


def notes(summary: dict[str, Any]) -> str:
    """The paragraph under the statistics table: what each column is, with the study's alpha and
    what its seeds allow the discrete test (``reach_text``), and what summary.json keeps beside."""
    alpha = (summary.get("methods") or {}).get("alpha", ALPHA)
    reach = reach_text(summary)
    return (
        "Median over seeds with IQR; IQM: interquartile mean (trim 25 % each end). Δ is the effect "
        "estimate, the one the verdict uses; it, its interval and p come from one test, the primary "
        "test of the design named in 'test': signed-rank = Wilcoxon on the per-seed differences (the "
        "variant shares every seed with the baseline), Δ their Hodges-Lehmann centre; mann-whitney "
        "otherwise, Δ the Hodges-Lehmann shift. The interval is that test inverted, so it excludes 0 "
        f"exactly when p <= {alpha:g} (p is p_seq under adaptive seeds, and the intervals are wider); "
        f"its confidence is the achieved one (the test is discrete{': ' + reach if reach else ''}). "
        "Ties count against rejection. p Holm: adjusted over the comparisons with the baseline; it "
        "decides. P(improve): P(variant better than baseline) + ½ P(tie), over the per-seed "
        "differences when paired. Diverged seeds are included (a diverged NaN counts as the worst "
        "value). summary.json also keeps, descriptive and not a decision: the difference of medians "
        "(delta_median, not the effect estimate: it can differ from Δ), the Mann-Whitney p and Yuen's "
        f"interval of the IQM (it covers 92-95 % in simulation, not 95 %{clipped_note(summary)})."
    )


def tested_comparisons(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The comparisons of the primary metric that have a test: with the baseline, then between variants."""
    base = summary["baseline"]
    found = {n: v for n, v in summary["variants"].items() if n != base} | (summary.get("comparisons") or {})
    return {n: v for n, v in found.items() if v.get("test") is not None}


def seed_counts(summary: dict[str, Any], name: str) -> tuple[bool, int, int]:
    """(paired?, n1, n2) that comparison ``name``'s test ran on: its pairs (n_pairs; a summary
    written before it: n), or unpaired its seeds and those of the side it is measured against."""
    v = comparison_entry(summary, name)
    if v.get("paired"):
        return True, v["n"] if v.get("n_pairs") is None else v["n_pairs"], 0
    return False, v["n"], summary["variants"][_sides(summary, name)[1]]["n"]


def _seeds_words(paired: bool, n1: int, n2: int) -> str:
    if paired:
        return f"{n1} paired seed{'s allow' if n1 != 1 else ' allows'}"
    return f"{n1} against {n2} unpaired seeds allow"


def reach_text(summary: dict[str, Any]) -> str:
    """What the study's own seeds allow its discrete tests, from each comparison's seed counts
    (``seed_counts``; inference.min_p, widest_confidence): for the counts too few for an interval
    at the study's level, the most confidence and the smallest p they allow; else that the
    confidence shown is achieved. "" without a test."""
    methods = summary.get("methods") or {}
    level = methods.get("alpha", ALPHA) / methods.get("looks", 1)  # the intervals' alpha
    groups: dict[tuple[bool, int, int], list[str]] = {}
    for name in tested_comparisons(summary):
        groups.setdefault(seed_counts(summary, name), []).append(name)
    short = {k: names for k, names in groups.items() if min_p(*k) > level}
    reached = f"at least {conf_text(1 - level)}"
    if not short:
        return f"the confidence shown is the one the seeds achieve, {reached}" if groups else ""
    parts = [
        f"{_seeds_words(*k)} an interval of at most {conf_text(widest_confidence(*k))} confidence, "
        f"below {conf_text(1 - level)}, so none is shown, and a p of at least {fmt_p(min_p(*k))}"
        + (f" ({', '.join(names)})" if len(groups) > 1 else "")
        for k, names in short.items()
    ]
    others = f"; the others' confidence is achieved, {reached}" if len(short) < len(groups) else ""
    return "; ".join(parts) + others


def clipped_note(summary: dict[str, Any]) -> str:
    """``; iqm_ci of a, b left [0, 1] ...`` when an interval of the primary metric left its range
    (summary.json's ``clipped``: summary.clip_intervals), else ""."""
    entries = {**summary["variants"], **(summary.get("comparisons") or {})}
    found = []
    for key in INTERVAL_KEYS:
        if names := [n for n, v in entries.items() if key in (v.get("clipped") or [])]:
            low, high = interval_range(key, summary["metric"])
            found.append(f"{key} of {', '.join(names)} left [{low:g}, {high:g}]")
    if not found:
        return ""
    return (
        f"; {'; '.join(found)} and was clipped to it (summary.json's 'clipped' lists it): that "
        "bound is the range's end, not a computed one"
    )


def holm_line(
    variants: dict[str, dict[str, Any]], baseline: str, comparisons: dict[str, dict[str, Any]] | None = None
) -> str:
    """The one line that says p Holm is adjusted, across how many comparisons, and that it decides."""
    k = sum(v.get("p_value") is not None for n, v in variants.items() if n != baseline)
    pairs = sum(v.get("p_value") is not None for v in (comparisons or {}).values())
    what = "with the baseline" + (f" and {pairs} between variants" if pairs else "")
    return f"p Holm: p Holm-adjusted across the k = {k + pairs} comparisons {what}; p Holm <= 0.05 decides."


PAIR_HEADER = [
    "comparison (a vs b: Δ = a − b)",
    "n",
    "Δ [CI] (confidence)",
    "test",
    "p",
    "p Holm",
    "P(improve)",
]


def pair_rows(comparisons: dict[str, dict[str, Any]], metric: str) -> list[list[str]]:
    """The between-variant table (PAIR_HEADER): a row per ``compare:`` pair, the columns of the
    statistics table that a comparison has."""
    keep = [HEADER.index(c) for c in ("n", "Δ [CI] (confidence)", "test", "p", "p Holm", "P(improve)")]
    rows = {
        name: row_cells(name, {"n_diverged": 0, **v}, "", decimals(metric)) for name, v in comparisons.items()
    }
    return [[name] + [row[i] for i in keep] for name, row in rows.items()]


def comparison_entry(summary: dict[str, Any], name: str) -> dict[str, Any]:
    """A comparison's statistics: ``variants[name]`` against the baseline, or ``comparisons[name]``
    for a "a vs b" pair of the spec's ``compare:``."""
    if name in summary["variants"]:
        return summary["variants"][name]
    return summary["comparisons"][name]


def _sides(summary: dict[str, Any], name: str) -> tuple[str, str]:
    a, sep, b = name.partition(" vs ")
    return (a, b) if sep and name not in summary["variants"] else (name, summary["baseline"])


DECISIONS = ("better", "worse", "not distinguishable", "cannot answer", "no comparison")


def decision(name: str, summary: dict[str, Any]) -> str:
    """What a comparison's verdict decides (one of DECISIONS): ``better`` or ``worse`` when its
    p Holm is at most the study's alpha, else ``cannot answer`` when the design check finds it
    uninformative, ``not distinguishable`` otherwise; ``no comparison`` without a test.
    ``verdict`` words the same decision; ``ablate verify --conclusions`` compares it."""
    v = comparison_entry(summary, name)
    if v.get("test") is None:
        return "no comparison"
    alpha = (summary.get("methods") or {}).get("alpha", 0.05)
    if v.get("p_holm") is not None and v["p_holm"] <= alpha:
        return "better" if (v["delta"] > 0) == (summary["direction"] == "maximize") else "worse"
    design = ((summary.get("design") or {}).get("comparisons") or {}).get(name) or {}
    return "cannot answer" if design.get("uninformative") else "not distinguishable"


def verdict(name: str, summary: dict[str, Any], detect: Any = None) -> str:
    """One or two sentences for one comparison: the primary test and its interval; when the
    comparison is undecided, why the design cannot answer (sweeps/stats/design.py), or how many
    seeds could (``detect``: sweeps/stats/power.py ``Detect`` at the margin, with the simulated
    share of studies in which they are enough); then the equivalence test at the margin, or
    that no margin was given."""
    v, (a, base) = comparison_entry(summary, name), _sides(summary, name)
    d = decimals(summary["metric"])
    where = f"{summary['experiment']} ({summary['metric']})"
    decided = decision(name, summary)
    if decided == "no comparison":
        return f"{a}: no comparison with {base} on {where} ({v.get('pairing') or 'no complete values'})."
    # the seeds the test ran on: a paired one's pairs (fewer than n when the other side lacks a seed)
    n, alpha = seed_counts(summary, name)[1], (summary.get("methods") or {}).get("alpha", 0.05)
    seq = "p_seq" if v.get("p_seq") is not None else "p"
    p = f"{seq} = {fmt_p(decision_p(v))}, p Holm = {fmt_p(v.get('p_holm'))}"
    design = ((summary.get("design") or {}).get("comparisons") or {}).get(name) or {}
    if decided in ("better", "worse"):
        text = f"{a} is {decided} than {base} on {where}: Δ {delta_text(v, d)}, {p}, {n} seeds."
        ad = summary.get("adaptive")
        if ad and n < ad["max"]:
            text += f" It stopped early ({n} of at most {ad['max']} seeds): |Δ| is likely overstated."
        return text + equivalence_text(name, summary, decided=True)
    text = f"{a}: not distinguishable from {base} on {where} at {n} seeds (Δ {delta_text(v, d)}, {p})"
    if decided == "cannot answer":
        return (
            text
            + "; the design cannot answer: "
            + "; ".join(design["reasons"])
            + "."
            + equivalence_text(name, summary, decided=False)
        )
    if design.get("notes"):
        text += " (" + "; ".join(design["notes"]) + ")"
    if v.get("min_seeds") and n < v["min_seeds"]:
        text += f"; these seeds cannot reach p Holm <= {alpha}: that needs at least {v['min_seeds']}."
    elif detect is not None and detect.seeds is not None:
        text += (
            f"; about {detect.seeds} seeds would detect |Δ| = {detect.effect:.{d}f} (the margin) with power "
            f"{detect.target:.1f}, enough in {detect.share:.0%} of simulated studies like this one."
        )
    elif detect is not None:
        text += f"; more seeds than were searched would be needed to detect |Δ| = {detect.effect:.{d}f} (the margin)."
    else:
        text += "."
    return text + equivalence_text(name, summary, decided=False)


def equivalence_text(name: str, summary: dict[str, Any], *, decided: bool) -> str:
    """The equivalence sentence of a comparison with a margin (sweeps/stats/equivalence.py); for
    an undecided one without a margin, that none was given (so it is not evidence of no effect)."""
    e = (summary.get("equivalence") or {}).get(name)
    a, base = _sides(summary, name)
    if e is None:
        return (
            ""
            if decided
            else " No margin was given, so this is not evidence of no effect (`margin:` in the spec, or "
            "`ablate report --margin M`, tests equivalence within ±M)."
        )
    d = decimals(summary["metric"])
    m = f"±{e['margin']:.{d}f}"
    ci = _ci(e["ci"], d, "+").strip() if e["ci"] else ""
    conf = f" ({conf_text(e['confidence'])})" if e["ci"] else ""
    p = f"p TOST Holm = {fmt_p(e.get('p_holm'))}"
    if e["equivalent"]:
        return f" {a} is equivalent to {base} within {m}: Δ {ci}{conf} inside ({m}), {p}."
    if e["ci"] is None:
        return f" Equivalence within {m} not shown: these seeds cannot reach its interval ({p})."
    return f" Equivalence within {m} not shown: Δ {ci}{conf} reaches the margin, {p}."


def verdict_lines(summary: dict[str, Any]) -> list[str]:
    """The report's headline: the stored sentences (report.build) or, for a summary without
    them, each comparison's sentence without the seeds-to-detect estimate."""
    stored = summary.get("verdicts")
    if stored:
        return list(stored.values())
    names = [n for n in summary["variants"] if n != summary["baseline"]] + list(
        summary.get("comparisons") or {}
    )
    return [verdict(n, summary) for n in names]


def design_check_lines(summary: dict[str, Any]) -> list[str]:
    """The design check's flags per variant (sweeps/stats/design.py), one line each, and a line
    saying there are none; nothing for a summary written before the check existed."""
    design = summary.get("design")
    if design is None:
        return []
    flagged = [f"{v}: {'; '.join(f['text'] for f in fs)}." for v, fs in design["variants"].items() if fs]
    if not flagged:
        return ["Design checks: no variant at its ceiling, floor or chance, none without spread."]
    return [
        "Design checks (ceiling, floor, chance, spread; a flagged baseline makes its comparisons uninformative):",
        *flagged,
    ]


def pairing_lines(variants: dict[str, dict[str, Any]], baseline: str) -> list[str]:
    return [f"{n}: {v['pairing']}" for n, v in variants.items() if n != baseline and v.get("pairing")]


def read_design(run_dir: Path) -> dict[str, Any] | None:
    """The run folder's spec.json (seeds, base configuration, variant overrides), if there is one
    that holds a JSON object."""
    try:
        return read_json_object(Path(run_dir) / "spec.json", "a sweep run folder", {})
    except ConfigError:  # none, or not readable: the report says "not recorded"
        return None


def design_lines(summary: dict[str, Any], spec: dict[str, Any] | None) -> list[str]:
    """Seeds, the base configuration that matters, and each variant's overrides."""
    seeds = (summary.get("methods") or {}).get("seeds") or (spec or {}).get("seeds") or []
    per = " (per variant: see the rounds)" if summary.get("adaptive") else f" ({len(seeds)} per variant)"
    lines = [f"Seeds: {seeds_text(seeds)}{per}." if seeds else "Seeds: not recorded."]
    if spec and isinstance(spec.get("base"), dict):
        flat = flatten(spec["base"], depth=1)  # as TrainConfig.flat
        if "model.norm" in flat:  # a spec.json recorded before model.block: its older name
            flat.setdefault("model.block", flat["model.norm"])
        base = ", ".join(f"{label} {flat[key]}" for label, key in BASE_HIGHLIGHTS.items() if key in flat)
        lines.append(f"Base configuration: {base}.")
    if spec and isinstance(spec.get("variants"), dict):
        for name, ov in spec["variants"].items():
            text = ", ".join(f"{k}={v}" for k, v in ov.items()) if ov else "none (the baseline)"
            lines.append(f"Overrides of {name}: {text}.")
    lines += splits_lines(summary) + design_check_lines(summary)
    return lines + numerics_lines(summary) + adaptive_lines(summary) + variance_lines(summary)


def splits_summary(records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """summary.json's ``splits``: the complete cells' split records (``(variant, record)`` each,
    datamodules/splits.py), grouped into the distinct ones. One set when every cell evaluated on
    the same splits (a variant that changes a data key can make more); a set whose ``splits`` is
    empty holds cells that ran before ablate recorded them."""
    sets: list[dict[str, Any]] = []
    for variant, record in records:
        found = next((s for s in sets if s["splits"] == record), None)
        if found is None:
            sets.append(found := {"variants": [], "cells": 0, "splits": record})
        found["cells"] += 1
        if variant not in found["variants"]:
            found["variants"].append(variant)
    return {"min_eval_examples": MIN_EVAL_EXAMPLES, "sets": sets}


def _set_text(s: dict[str, Any]) -> str:
    return (
        describe(s["splits"]) if s["splits"] else "not recorded (the cells ran before ablate recorded them)"
    )


def splits_lines(summary: dict[str, Any]) -> list[str]:
    """What the complete cells were trained and evaluated on: each split's size and how it was
    made, once when every cell agrees; otherwise the range of each size and one line per set."""
    sets = (summary.get("splits") or {}).get("sets") or []
    if not sets:
        return []
    if len(sets) == 1:
        return [f"Data splits (every complete cell): {_set_text(sets[0])}."]
    sizes: dict[str, list[int]] = {}
    for s in sets:
        for name, split in s["splits"].items():
            sizes.setdefault(name, []).append(int(split["n"]))
    ranges = ", ".join(f"{n} {min(v)}–{max(v)}" for n, v in sizes.items() if min(v) != max(v))
    head = f"Data splits differ between cells ({ranges or 'in how they were made'}):"
    return [head] + [
        f"{', '.join(s['variants'])} ({s['cells']} cell{'s' * (s['cells'] != 1)}): {_set_text(s)}."
        for s in sets
    ]


def split_warning_lines(summary: dict[str, Any]) -> list[str]:
    """A warning per set of splits whose validation or test split is below MIN_EVAL_EXAMPLES."""
    sets = (summary.get("splits") or {}).get("sets") or []
    out = []
    for s in sets:
        if warning := small_splits_warning(s["splits"]):
            who = f" ({', '.join(s['variants'])})" if len(sets) > 1 else ""
            out.append(f"Warning{who}: {warning}.")
    return out


def numerics_lines(summary: dict[str, Any]) -> list[str]:
    """What the cells' floats were computed with (CPU, kernel ISA, libraries, threads), and a
    warning when they were not all computed alike: then a difference between cells can come
    from the machines as well as from the seeds (docs: one cell, one number)."""
    settings = summary.get("numerics") or []
    if [s["setting"] for s in settings] == [NOT_RECORDED]:
        return ["Numerics: not recorded (the cells ran before ablate recorded them)."]
    if len(settings) == 1:
        return [
            f"Numerics: every cell ran with {settings[0]['setting']}.",
            rerun_expectation(settings[0]["setting"]),
        ]
    if not settings:
        return []
    each = "; ".join(f"{s['setting']} ({s['cells']} cells)" for s in settings)
    return [
        f"Mixed numerics: the cells ran with {len(settings)} settings, so cells may differ by the "
        f"machine's rounding as well as by seed: {each}."
    ]


def rerun_expectation(setting: str) -> str:
    """What a rerun of cells made with ``setting`` can expect, as far as this project measured it
    (docs/pages/explanations/one-number.md, across machines)."""
    check = "`ablate verify <run folder> --conclusions` says whether the conclusions hold there"
    if "| cuda " in setting:
        return f"Reruns on GPU: bit-identity is not measured by this project; {check}."
    return (
        "A rerun on the same CPU model and torch build gives these cells to the bit (tested). On "
        "another CPU model they may round otherwise (two Intel Xeon models gave the same bits; an "
        f"AMD EPYC and an Intel Xeon did not, and long runs amplify it): {check}."
    )


def variance_lines(summary: dict[str, Any]) -> list[str]:
    """seed_factors: each variant's seed variance split into init, data order[, numerics and
    their interactions] and residual, each share with its interval (``init 12% [0%, 80%]``); a
    component whose ANOVA estimate was negative says so (``(clipped)``), and an interval that
    covered less than its level in simulation (sweeps/stats/variance.py MEASURED_COVERAGE)
    carries the coverage measured."""
    f = summary.get("seed_factors")
    if not f:
        return []
    numerics = f" x {f['numerics']} numerics levels" if f.get("numerics") else ""
    model = (
        "three-way random effects, one run per cell; dropout, keyed by (init, order), is in init x data "
        "order; residual = the three-way interaction"
        if numerics
        else "two-way random effects; residual = dropout, numerics and their interaction"
    )
    lines = [
        f"Seed factors: {f['init']} init seeds x {f['data_order']} data orders{numerics}, crossed ({model}):"
    ]
    variance = summary.get("variance", {})
    level = next((v["level"] for v in variance.values() if v.get("level")), None)
    if level is not None:
        lines.append(
            f'each share with its {level:.0%} interval (generalized pivotal quantities); "clipped": the '
            "ANOVA estimate was below 0 and is shown as 0."
        )

    def share(component: str, v: dict[str, Any]) -> str:
        label = component.replace("_", " ").replace(":", " x ")
        if v["share"][component] is None:
            return f"{label} -"
        text = f"{label} {v['share'][component]:.0%}"
        text += " (clipped)" if (v.get("clipped") or {}).get(component) else ""
        ci = ((v.get("ci") or {}).get(component) or {}).get("share")
        if ci is None:
            return text
        covered = (v.get("coverage") or {}).get(component)
        low = covered is not None and covered < v["level"] - 0.01
        note = f"; covered {covered:.0%} in simulation" if low else ""
        return f"{text} [{ci[0]:.0%}, {ci[1]:.0%}{note}]"

    for name, v in variance.items():
        if not v.get("complete"):
            lines.append(f"{name}: incomplete grid, no decomposition.")
            continue
        lines.append(f"{name}: sd {v['sd_total']:.4f}; {', '.join(share(k, v) for k in v['share'])}.")
    return lines


def adaptive_lines(summary: dict[str, Any]) -> list[str]:
    """Adaptive seeds: the rule, each round's seeds and undecided variants, the stop reason."""
    a = summary.get("adaptive")
    if not a:
        return []
    looks = a["looks"]
    rule = (
        f"p Holm <= 0.05, with p = p_seq = min(1, {looks} x the exact p) (Bonferroni over the {looks} looks)"
        if a["stop"] == "separated"
        else f"its interval (at {1 - a['alpha_per_look']:.4f}) is narrower than {a['width']}"
    )
    lines = [
        f"Adaptive seeds: {a['min']} to {a['max']} per variant in steps of {a['step']}; a comparison is "
        f"decided when {rule}; every interval is at level 1 - 0.05 / {looks}."
    ]
    for i, r in enumerate(summary.get("rounds") or [], 1):
        seeds = ", ".join(f"{v} {n}" for v, n in r["seeds"].items())
        lines.append(f"Round {i}: seeds {seeds}; undecided: {', '.join(r['undecided']) or 'none'}.")
    lines.append(f"Stopped: {summary.get('stop_reason') or 'not yet (rerun the sweep to go on)'}.")
    if a["stop"] == "separated":
        lines.append(
            "A comparison that stopped early has a Δ biased away from 0 (it stopped because it looked large)."
        )
    return lines
