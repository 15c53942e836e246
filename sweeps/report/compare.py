"""Compare two run folders: medians side by side, and what changed in the archived attention.

Typical use: the same study before and after a change (another PE scale, another data
seed, a code fix). Attention is compared only where both archives hold the same variant,
seed and layer with the same shape; anything else is listed as not comparable, because a
difference of two differently shaped maps has no meaning.
"""

from __future__ import annotations

import csv
import dataclasses
import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ablate.errors import ConfigError
from ablate.files import atomic_write, output_folder
from ablate.sweeps.ledger.run_folder import read_summary
from ablate.sweeps.report.files import figure_png, list_html, page_html, png_data_uri, table_html, table_md
from ablate.sweeps.report.text import fmt
from ablate.sweeps.stats.equivalence import adjust as adjust_equivalence
from ablate.sweeps.stats.equivalence import tost
from ablate.sweeps.stats.rows import CellRow

TOP_K = 5


def attention_changes(npz_a: Path, npz_b: Path) -> dict[str, dict[str, np.ndarray] | str]:
    """Per layer name: {"a", "b", "diff"} of probe example 0, cropped to its real tokens, each
    (H, L0, L0) with diff = b - a, and "head_change" (H,): the mean |b - a| per head over every
    probe example and every (query, key) pair of real tokens. A layer whose shapes or padding
    masks differ maps to a string saying why it is not comparable.
    """
    with np.load(npz_a) as fa, np.load(npz_b) as fb:
        a_files, b_files = dict(fa), dict(fb)
    ma, mb = a_files.pop("attention_mask", None), b_files.pop("attention_mask", None)
    out: dict[str, dict[str, np.ndarray] | str] = {}
    layers = sorted(set(a_files) & set(b_files), key=lambda k: int(k[5:]) if k[5:].isdigit() else -1)
    for name in (k for k in layers if re.fullmatch(r"layer\d+", k)):
        a, b = a_files[name].astype(np.float64), b_files[name].astype(np.float64)  # (N, H, L, L)
        if a.shape != b.shape or a.ndim != 4:
            out[name] = f"shapes differ: A {a.shape} vs B {b.shape}"
            continue
        n, _, length, _ = a.shape
        mask = np.ones((n, length), bool) if ma is None else ma.astype(bool)
        if mb is not None and (mb.shape != mask.shape or not np.array_equal(mb.astype(bool), mask)):
            out[name] = "probe padding masks differ (different probe batch)"
            continue
        pair = mask[:, :, None] & mask[:, None, :]  # (N, L, L) real query x real key
        absdiff = np.abs(b - a) * pair[:, None]  # (N, H, L, L)
        head_change = absdiff.sum(axis=(0, 2, 3)) / max(int(pair.sum()), 1)  # (H,)
        keep = np.flatnonzero(mask[0])
        crop = np.ix_(range(a.shape[1]), keep, keep)
        out[name] = {
            "a": a[0][crop],
            "b": b[0][crop],
            "diff": (b[0] - a[0])[crop],
            "head_change": head_change,
        }
    return out


def _figure(title: str, a: np.ndarray, b: np.ndarray, diff: np.ndarray) -> bytes:
    """One PNG: a row per head with A, B and B - A (symmetric diverging scale so 0 is white)."""
    heads = a.shape[0]
    fig = Figure(figsize=(7.5, 2.4 * heads + 0.4), layout="constrained")
    axes = fig.subplots(heads, 3, squeeze=False)
    lim = max(float(np.abs(diff).max()), 1e-6)
    ims: dict[int, Any] = {}
    for h in range(heads):
        for col, (m, label) in enumerate(((a[h], "A"), (b[h], "B"), (diff[h], "B - A"))):
            ax = axes[h, col]
            kw = (
                {"cmap": "RdBu_r", "vmin": -lim, "vmax": lim}
                if col == 2
                else {"cmap": "viridis", "vmin": 0, "vmax": 1}
            )
            ims[col] = ax.imshow(m, **kw)
            ax.set_title(f"head {h}: {label}", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
    # One colour bar per scale, spanning all rows, so every panel keeps the same size.
    fig.colorbar(ims[1], ax=axes[:, :2], shrink=0.6)
    fig.colorbar(ims[2], ax=axes[:, 2], shrink=0.6)
    fig.suptitle(title)
    return figure_png(fig)


def _archives(run: Path) -> dict[tuple[str, int], Path]:
    found = {}
    for p in Path(run).glob("heatmaps/*/seed*/attention.npz"):
        m = re.fullmatch(r"seed(\d+)", p.parent.name)
        if m:
            found[(p.parent.parent.name, int(m.group(1)))] = p
    return found


@dataclass(frozen=True)
class Comparison:
    """What ``compare`` found: the medians side by side, the largest per-head attention changes,
    the archives that could not be compared, and a figure per compared (variant, seed, layer)."""

    title: str
    notes: list[str]
    medians: list[list[str]]  # MEDIAN_HEADER rows
    top: list[list[str]]  # TOP_HEADER rows, the TOP_K largest changes
    not_comparable: list[str]
    figures: list[tuple[str, str, bytes]]  # ("<variant>/seed<k>/layer<i>", file name, PNG)
    margin: float | None = None
    equivalence: list[list[str]] = dataclasses.field(default_factory=list)  # EQUIVALENCE_HEADER rows

    @property
    def equivalence_title(self) -> str:
        return f"B equivalent to A within ±{self.margin:g}? (two one-sided tests at 1 - 2 x 0.05)"


MEDIAN_HEADER = ["variant", "A median", "B median", "B - A"]
TOP_HEADER = ["variant", "seed", "layer", "head", "mean abs Δ attention"]


def _medians(sa: dict[str, Any], sb: dict[str, Any]) -> list[list[str]]:
    """A row per variant of either summary (A's order, then B's new ones): A, B and B - A."""
    names = list(sa["variants"]) + [n for n in sb["variants"] if n not in sa["variants"]]
    rows = []
    for n in names:
        ma, mb = sa["variants"].get(n, {}).get("median"), sb["variants"].get(n, {}).get("median")
        rows.append(
            [n, fmt(ma), fmt(mb), fmt(mb - ma if ma is not None and mb is not None else None, "+.4g")]
        )
    return rows


EQUIVALENCE_HEADER = ["variant", "seeds", "B - A [interval] (confidence)", "within the margin?"]


def run_cells(run: Path, metric: str) -> dict[str, dict[int, float]]:
    """variant -> seed -> the metric of each complete cell in a run folder's results.csv."""
    path = Path(run) / "results.csv"
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing: --margin compares the cells; write it with `ablate report {run}`"
        )
    with open(path, newline="", encoding="utf-8") as f:
        rows = [CellRow.from_csv(r) for r in csv.DictReader(f)]
    out: dict[str, dict[int, float]] = {}
    for r in rows:
        if r.state == "complete" and (value := r.metric(metric)) is not None:
            out.setdefault(r.variant, {})[r.seed] = value
    return out


def equivalence_rows(run_a: Path, run_b: Path, metric: str, margin: float) -> list[list[str]]:
    """Per variant both runs hold: is B equivalent to A within ±margin? The two one-sided tests
    (sweeps/stats/equivalence.py) on the per-seed differences B − A of the seeds both ran (the
    same study before and after a change: a seed indexes the same data), Mann-Whitney's interval
    when they share fewer than two; Holm over the variants."""
    a, b = run_cells(run_a, metric), run_cells(run_b, metric)
    tests, seeds = {}, {}
    for name in [v for v in a if v in b]:
        shared = sorted(set(a[name]) & set(b[name]))
        if len(shared) >= 2:
            tests[name] = tost([b[name][s] - a[name][s] for s in shared], None, margin)
            seeds[name] = f"{len(shared)} paired"
        else:
            tests[name] = tost(list(b[name].values()), list(a[name].values()), margin)
            seeds[name] = f"{len(b[name])} vs {len(a[name])} unpaired"
    adjust_equivalence(tests)
    rows = []
    for name, t in tests.items():
        ci = "no interval at these seeds" if t["ci"] is None else f"[{t['ci'][0]:+.4g}, {t['ci'][1]:+.4g}]"
        conf = "" if t["confidence"] is None else f" ({100 * t['confidence']:.1f} %)"
        answer = "equivalent" if t["equivalent"] else "not shown"
        rows.append([name, seeds[name], ci + conf, f"{answer} (p TOST Holm {fmt(t['p_holm'], '.3g')})"])
    return rows


def compare(run_a: Path, run_b: Path, margin: float | None = None) -> Comparison:
    """Compare the run folders ``run_a`` (A) and ``run_b`` (B): their summary.json medians and
    every heatmap archive (variant, seed) both hold; with ``margin``, whether B is equivalent to
    A within ±margin per variant (``equivalence_rows``); nothing is written."""
    sa, sb = read_summary(Path(run_a)), read_summary(Path(run_b))
    notes = []
    if (sa["metric"], sa["direction"]) != (sb["metric"], sb["direction"]):
        notes.append(
            f"metrics differ: A {sa['metric']} ({sa['direction']}) vs B {sb['metric']} ({sb['direction']})"
        )
    arch_a, arch_b = _archives(run_a), _archives(run_b)
    changes: list[tuple[float, str, int, str, int]] = []  # (mean |Δ|, variant, seed, layer, head)
    not_comparable: list[str] = []
    figures: list[tuple[str, str, bytes]] = []
    for variant, seed in sorted(set(arch_a) & set(arch_b)):
        for layer, res in attention_changes(arch_a[(variant, seed)], arch_b[(variant, seed)]).items():
            key = f"{variant}/seed{seed}/{layer}"
            if isinstance(res, str):
                not_comparable.append(f"{key}: {res}")
                continue
            changes += [(float(c), variant, seed, layer, h) for h, c in enumerate(res["head_change"])]
            png = _figure(f"{key}, probe example 0", res["a"], res["b"], res["diff"])
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{variant}_seed{seed}_{layer}")
            figures.append((key, f"attention_{safe}.png", png))
    changes.sort(key=lambda c: -c[0])
    return Comparison(
        title=f"Compare {Path(run_a).name} (A) with {Path(run_b).name} (B): {sb['metric']}",
        notes=notes,
        medians=_medians(sa, sb),
        top=[[v, str(s), layer, str(h), f"{c:.4g}"] for c, v, s, layer, h in changes[:TOP_K]],
        not_comparable=not_comparable,
        figures=figures,
        margin=margin,
        equivalence=equivalence_rows(run_a, run_b, sb["metric"], margin) if margin is not None else [],
    )


def markdown(c: Comparison) -> str:
    """compare.md: the medians, the largest changes, what is not comparable, the figures' files."""
    md = [f"# {c.title}", "", *[f"**Note:** {n}" for n in c.notes], "", *table_md(MEDIAN_HEADER, c.medians)]
    if c.margin is not None:
        md += ["", f"## {c.equivalence_title}", "", *table_md(EQUIVALENCE_HEADER, c.equivalence)]
    md += ["", f"## Largest per-head attention changes (top {TOP_K})", ""]
    if c.top:
        md += table_md(TOP_HEADER, c.top)
    else:
        md.append("No heatmap archive (variant, seed, layer) is present and comparable in both runs.")
    if c.not_comparable:
        md += ["", "## Not comparable", "", *[f"- {x}" for x in c.not_comparable]]
    md += ["", *[f"- figure {key}: {name}" for key, name, _ in c.figures], ""]
    return "\n".join(md)


def page(c: Comparison) -> str:
    """compare.html: what compare.md says, with the figures inline (one self-contained file)."""
    body = [
        f"<h1>{html.escape(c.title)}</h1>",
        *[f"<p class='warn'>{html.escape(n)}</p>" for n in c.notes],
        table_html(MEDIAN_HEADER, c.medians),
    ]
    if c.margin is not None:
        body += [
            f"<h2>{html.escape(c.equivalence_title)}</h2>",
            table_html(EQUIVALENCE_HEADER, c.equivalence),
        ]
    body.append(f"<h2>Largest per-head attention changes (top {TOP_K})</h2>")
    body.append(
        table_html(TOP_HEADER, c.top) if c.top else "<p>No comparable heatmap archive in both runs.</p>"
    )
    if c.not_comparable:
        body.append("<h2>Not comparable</h2>" + list_html(c.not_comparable))
    body += [
        f"<h3>{html.escape(key)}</h3><img src='{png_data_uri(png)}' alt='{html.escape(key)}'>"
        for key, _, png in c.figures
    ]
    return page_html(c.title, body)


def write_comparison(c: Comparison, out: Path) -> dict[str, Path]:
    """Write the figures, compare.md and compare.html into ``out`` (created; a file or an
    unwritable place is a ConfigError naming it). Returns {"<variant>/seed<k>/layer<i>": figure
    path, ..., "markdown": ..., "html": ...}."""
    out = Path(out)
    output_folder(out)
    paths = {key: atomic_write(out / name, png) for key, name, png in c.figures}
    paths["markdown"] = atomic_write(out / "compare.md", markdown(c))
    paths["html"] = atomic_write(out / "compare.html", page(c))
    return paths


def compare_runs(run_a: Path, run_b: Path, out: Path, margin: float | None = None) -> dict[str, Path]:
    """``ablate compare [--margin M]``: compare.md, compare.html and one PNG per compared
    (variant, seed, layer) in ``out``; returns their paths (``write_comparison``)."""
    return write_comparison(compare(run_a, run_b, margin), out)
