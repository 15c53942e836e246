"""The words and cells that report.md, report.html and the terminal tables share: number
formats, the statistics table's header and rows, the status, design, seed-factor and adaptive-seed
lines, and the head digest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ablate.sweeps.stats.summary import seeds_text


def fmt(x: float | None, spec: str = ".4g") -> str:
    return "–" if x is None else format(x, spec)


def params_text(params: dict[str, Any]) -> str:
    """``optim.lr=0.001295, model.norm=post``: floats to 4 significant digits."""
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
    "norm": "model.norm",
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


def row_cells(name: str, v: dict[str, Any], baseline: str, d: int = 3) -> list[str]:
    """One table row; ``d`` = decimals of the metric's values (see ``decimals``)."""
    f, s = f".{d}f", f"+.{d}f"
    std = f" ± {fmt(v['std'], f)}" if v["std"] is not None else ""
    if name == baseline:
        delta, paired = "0 (baseline)", ""
    else:
        delta = fmt(v["delta_median"], s) + _ci(v["ci95"], d, "+")
        paired = (
            fmt(v.get("delta_paired_median"), s) + _ci(v.get("ci95_paired"), d, "+")
            if v.get("paired")
            else "–"
        )
    return [
        name,
        str(v["n"]),
        str(v["n_diverged"]),
        f"{fmt(v['median'], f)} [{fmt(v['q1'], f)}, {fmt(v['q3'], f)}]",
        fmt(v.get("iqm"), f) + _ci(v.get("iqm_ci95"), d),
        f"{fmt(v['min'], f)}–{fmt(v['max'], f)}",
        f"{fmt(v['mean'], f)}{std}",
        delta,
        paired,
        v.get("test") or "–",
        fmt_p(v["p_value"]),
        fmt_p(v.get("p_holm")),
        fmt_p(v.get("p_mwu")),
        fmt(v["p_improve"], ".2f"),
    ]


HEADER = [
    "variant",
    "n",
    "diverged",
    "median [q1, q3]",
    "IQM [95% CI]",
    "min–max",
    "mean ± std",
    "Δ median [95% CI]",
    "Δ paired [95% CI]",
    "test",
    "p",
    "p Holm",
    "p MWU",
    "P(improve)",
]


def status_line(summary: dict[str, Any]) -> str:
    c = summary["cells"]
    if not c["missing"]:
        return f"All {c['total']} cells complete."
    return f"Partial study: {c['complete']} of {c['total']} cells complete; missing: " + ", ".join(
        c["missing"]
    )


NOTES = (
    "Median over seeds with IQR; IQM: interquartile mean (trim 25 % each end) with a percentile "
    "bootstrap 95% CI over seeds; Δ median: difference of medians vs the baseline with a percentile "
    "bootstrap 95% CI (samples resampled independently); Δ paired: median of the per-seed differences "
    "with a bootstrap CI over seeds (paired variants only). "
    "p: the exact two-sided permutation test named in 'test': paired-permutation = sign flips of the "
    "per-seed differences, used when the baseline has a complete value for every seed of the variant "
    "(it cannot go below 2/2^n: 0.0625 at 5 seeds); mwu-exact = Mann-Whitney U with ties, otherwise. "
    "p MWU: the unpaired exact test, shown for every variant. "
    "P(improve): P(variant better than baseline) + ½ P(tie). "
    "Diverged seeds are included (a diverged NaN counts as the worst value)."
)


def holm_line(variants: dict[str, dict[str, Any]], baseline: str) -> str:
    """The one line that says p Holm is adjusted, across how many comparisons, and which p leads."""
    k = sum(v.get("p_value") is not None for n, v in variants.items() if n != baseline)
    return (
        f"p Holm: p Holm-adjusted across the k = {k} comparisons with the baseline. "
        "p (the exact test of the design, named in 'test') leads."
    )


def pairing_lines(variants: dict[str, dict[str, Any]], baseline: str) -> list[str]:
    return [f"{n}: {v['pairing']}" for n, v in variants.items() if n != baseline and v.get("pairing")]


def read_design(run_dir: Path) -> dict[str, Any] | None:
    """The run folder's spec.json (seeds, base configuration, variant overrides), if there is one."""
    try:
        spec = json.loads((Path(run_dir) / "spec.json").read_text())
    except (OSError, ValueError):
        return None
    return spec if isinstance(spec, dict) else None


def _flat(tree: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, values in tree.items():
        if isinstance(values, dict):
            out.update({f"{section}.{k}": v for k, v in values.items()})
        else:
            out[section] = values
    return out


def design_lines(summary: dict[str, Any], spec: dict[str, Any] | None) -> list[str]:
    """Seeds, the base configuration that matters, and each variant's overrides."""
    seeds = (summary.get("methods") or {}).get("seeds") or (spec or {}).get("seeds") or []
    per = " (per variant: see the rounds)" if summary.get("adaptive") else f" ({len(seeds)} per variant)"
    lines = [f"Seeds: {seeds_text(seeds)}{per}." if seeds else "Seeds: not recorded."]
    if spec and isinstance(spec.get("base"), dict):
        flat = _flat(spec["base"])
        base = ", ".join(f"{label} {flat[key]}" for label, key in BASE_HIGHLIGHTS.items() if key in flat)
        lines.append(f"Base configuration: {base}.")
    if spec and isinstance(spec.get("variants"), dict):
        for name, ov in spec["variants"].items():
            text = ", ".join(f"{k}={v}" for k, v in ov.items()) if ov else "none (the baseline)"
            lines.append(f"Overrides of {name}: {text}.")
    return lines + adaptive_lines(summary) + variance_lines(summary)


def variance_lines(summary: dict[str, Any]) -> list[str]:
    """seed_factors: each variant's seed variance split into init, data order and residual."""
    f = summary.get("seed_factors")
    if not f:
        return []
    lines = [
        f"Seed factors: {f['init']} init seeds x {f['data_order']} data orders, crossed (two-way "
        "random effects; residual = dropout, numerics and their interaction):"
    ]
    for name, v in summary.get("variance", {}).items():
        if not v.get("complete"):
            lines.append(f"{name}: incomplete grid, no decomposition.")
            continue
        parts = ", ".join(
            f"{k.replace('_', ' ')} {v['share'][k]:.0%}" if v["share"][k] is not None else f"{k} -"
            for k in ("init", "data_order", "residual")
        )
        lines.append(f"{name}: sd {v['sd_total']:.4f}; {parts}.")
    return lines


def adaptive_lines(summary: dict[str, Any]) -> list[str]:
    """Adaptive seeds: the rule, each round's seeds and undecided variants, the stop reason."""
    a = summary.get("adaptive")
    if not a:
        return []
    rule = (
        "the CI of Δ excludes 0" if a["stop"] == "separated" else f"the CI of Δ is narrower than {a['width']}"
    )
    lines = [
        f"Adaptive seeds: {a['min']} to {a['max']} per variant in steps of {a['step']}; a comparison is "
        f"decided when {rule}, at CI level {a['level']:.4f} (0.05 split over {a['looks']} looks)."
    ]
    for i, r in enumerate(summary.get("rounds") or [], 1):
        seeds = ", ".join(f"{v} {n}" for v, n in r["seeds"].items())
        lines.append(f"Round {i}: seeds {seeds}; undecided: {', '.join(r['undecided']) or 'none'}.")
    lines.append(f"Stopped: {summary.get('stop_reason') or 'not yet (rerun the sweep to go on)'}.")
    return lines
