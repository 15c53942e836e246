"""The study report: summary.json, results.csv, report.md and a self-contained report.html.

Beside the verdicts: what each variant cost (summary.json ``cost``: its trainable parameters and
wall seconds per cell), the per-seed differences of every paired comparison, and the validation
curves; report.md shows the two plots from PNG files beside it (``differences.png``,
``curves.png``), report.html embeds them.

Every file is written atomically (temp file in the same folder, then os.replace) so that a
crash or a full disk never leaves a half-written summary.json that a resumed sweep or the
W&B summary run would read. The HTML embeds everything (CSS inline, PNGs as data URIs) so
it can be mailed or archived as one file and opened offline.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ablate.files import atomic_write
from ablate.sweeps.ledger.run_folder import read_json_object
from ablate.sweeps.report.text import (
    HEAD_HEADER,
    HEADER,
    PAIR_HEADER,
    conf_text,
    design_lines,
    head_rows,
    holm_line,
    notes,
    pair_rows,
    pairing_lines,
    params_text,
    read_design,
    split_warning_lines,
    stat_rows,
    status_line,
    verdict_lines,
)
from ablate.sweeps.stats.rows import CELL_COLUMNS, CellRow
from ablate.sweeps.stats.summary import collect

if TYPE_CHECKING:  # matplotlib (0.5 s of imports) loads when a plot is drawn, not for a reader of the report
    from matplotlib.figure import Figure

CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}.gallery{display:flex;gap:1em;flex-wrap:wrap}
figure{margin:0;max-width:100%}figure img{max-width:100%}figcaption{font-size:12px}
.warn{color:#a40}.small{font-size:12px;color:#555}
.plots{display:flex;gap:1em;flex-wrap:wrap;align-items:flex-start}.plots img{max-width:100%}"""
# The plots beside report.md (report.html embeds them) and their alt texts. The review page's CSS
# (sweeps/integrations/dashboard.py) places report.html's parts by their classes: div.plots holds
# the metric plot and the differences, div.cost the cost table.
DIFF_PLOT, DIFF_ALT = "differences.png", "per-seed differences to the baseline"
CURVE_PLOT, CURVE_ALT = "curves.png", "validation curves"
COST_HEADER = ["variant", "parameters", "wall s per cell: median", "min–max"]
COST_NOTE = (
    "Parameters: the model's trainable parameters (the change to the baseline's in brackets). "
    "Wall seconds per cell: training and evaluation of one (variant, seed) cell, on whatever "
    "machine ran it; a stacked cell (trainer.seed_parallel) counts its share of the stack."
)


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def figure_png(fig: Figure) -> bytes:
    # Figure without pyplot renders with Agg and touches no global backend state (thread-safe).
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def plot_metric(summary: dict[str, Any], rows: list[CellRow]) -> bytes:
    """PNG of the metric per variant: a box plot plus one point per seed (diverged seeds as red x)."""
    names = list(summary["variants"])
    cells, _, _ = collect(rows, metric=summary["metric"], direction=summary["direction"], variants=names)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4.0, 1.3 * len(names) + 1.5), 3.8))
    ax = fig.add_subplot()
    filled = [i for i, n in enumerate(names) if cells[n]]
    if filled:
        ax.boxplot(
            [[v for _, v, _ in cells[names[i]]] for i in filled],
            positions=filled,
            widths=0.5,
            showfliers=False,
            medianprops={"color": "black"},
        )
    jitter = np.random.default_rng(0)  # fixed so the same study always draws the same picture
    for i, name in enumerate(names):
        for _, value, diverged in cells[name]:
            x = i + jitter.uniform(-0.12, 0.12)
            if diverged:
                ax.plot(x, value, "x", color="tab:red", ms=8, mew=2, zorder=3)
            else:
                ax.plot(x, value, "o", color="tab:blue", alpha=0.7, zorder=3)
    ax.set_xticks(range(len(names)), names, rotation=20)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylabel(summary["metric"])
    ax.set_title(f"{summary['experiment']}: {summary['metric']} per seed (red x = diverged)")
    ax.grid(axis="y", alpha=0.3)
    return figure_png(fig)


def cost(rows: list[CellRow], variants: list[str]) -> dict[str, dict[str, Any]]:
    """summary.json's ``cost``: per variant, over its complete cells, the trainable parameter count
    (one number; ``[min, max]`` if its seeds disagree; None where no cell recorded one) and the wall
    seconds per cell (median, min, max; None without a record). A stacked cell's wall time is its
    share of the stack's (experiments/runner/cells.py)."""
    out: dict[str, dict[str, Any]] = {}
    for name in variants:
        done = [r for r in rows if r.variant == name and r.state == "complete"]
        params = sorted({int(r.n_params) for r in done if r.n_params is not None})
        walls = [float(r.wall_s) for r in done if r.wall_s is not None and math.isfinite(r.wall_s)]
        n_params: int | list[int] | None = None
        if params:
            n_params = params[0] if len(params) == 1 else [params[0], params[-1]]
        wall = {"median": None, "min": None, "max": None}
        if walls:
            wall = {"median": round(float(np.median(walls)), 3), "min": min(walls), "max": max(walls)}
        out[name] = {"n_params": n_params, "wall_s": wall}
    return out


def cost_rows(costs: dict[str, dict[str, Any]], baseline: str) -> list[list[str]]:
    """The cost table (COST_HEADER), a row per variant: its parameters (with the change to the
    baseline's) and its wall seconds per cell."""
    base = costs.get(baseline, {}).get("n_params")
    rows = []
    for name, c in costs.items():
        p, w = c["n_params"], c["wall_s"]
        if p is None:
            params = "–"
        elif isinstance(p, list):
            params = f"{p[0]:,}–{p[1]:,} (seeds differ)"
        else:
            change = f" ({(p - base) / base:+.1%})" if isinstance(base, int) and base and p != base else ""
            params = f"{p:,}{change}"
        median = "–" if w["median"] is None else f"{w['median']:.2f}"
        span = "–" if w["min"] is None else f"{w['min']:.2f}–{w['max']:.2f}"
        rows.append([name, params, median, span])
    return rows


def paired_differences(
    summary: dict[str, Any], rows: list[CellRow]
) -> dict[str, list[tuple[int, float, bool]]]:
    """Per variant whose comparison is paired (its summary entry says ``paired: true``): (seed,
    variant − baseline, either side diverged) for each seed both have, from the values the
    statistics used (``collect``: a diverged NaN is the worst value)."""
    names, base = list(summary["variants"]), summary["baseline"]
    cells, _, _ = collect(rows, metric=summary["metric"], direction=summary["direction"], variants=names)
    by_seed = {s: (v, d) for s, v, d in cells.get(base, [])}
    out = {}
    for name in names:
        if name == base or summary["variants"][name].get("paired") is not True:
            continue
        diffs = [(s, v - by_seed[s][0], d or by_seed[s][1]) for s, v, d in cells[name] if s in by_seed]
        if diffs:
            out[name] = diffs
    return out


def plot_differences(summary: dict[str, Any], diffs: dict[str, list[tuple[int, float, bool]]]) -> bytes:
    """PNG of the paired comparisons: per variant its per-seed differences to the baseline (a red x
    where a side diverged), the zero line, and Δ with the interval of the primary test when the
    seeds allow one (its achieved confidence under the name)."""
    names, metric = list(diffs), summary["metric"]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4.0, 1.3 * len(names) + 1.5), 3.8))
    ax = fig.add_subplot()
    ax.axhline(0.0, color="black", lw=1, ls="--", zorder=1)
    jitter = np.random.default_rng(0)  # fixed so the same study always draws the same picture
    labels = []
    for i, name in enumerate(names):
        for _, d, diverged in diffs[name]:
            x = i - 0.08 + jitter.uniform(-0.1, 0.1)
            style = (
                {"color": "tab:red", "ms": 8, "mew": 2} if diverged else {"color": "tab:blue", "alpha": 0.7}
            )
            ax.plot(x, d, "x" if diverged else "o", zorder=3, **style)
        v = summary["variants"][name]
        ci = v.get("ci")
        if ci is not None and None not in ci:
            ax.vlines(i + 0.22, ci[0], ci[1], color="black", lw=2, zorder=2)
            ax.hlines(ci, i + 0.17, i + 0.27, color="black", lw=2, zorder=2)
        if v.get("delta") is not None:
            ax.plot(i + 0.22, v["delta"], "D", color="black", ms=6, zorder=4)
        interval = f"CI {conf_text(v.get('ci_confidence'))}" if ci is not None else "no CI"
        labels.append(f"{name}\n{interval}")
    ax.set_xticks(range(len(names)), labels)
    ax.set_xlim(-0.6, len(names) - 0.4)
    better = "higher" if summary["direction"] == "maximize" else "lower"
    ax.set_ylabel(f"Δ {metric} ({better} is better)")
    ax.set_title(
        f"{metric}: variant − {summary['baseline']} per seed (paired); ◆ Δ and its interval", fontsize=10
    )
    ax.grid(axis="y", alpha=0.3)
    return figure_png(fig)


@dataclass(frozen=True)
class ReportPlot:
    """A plot of the report: its file beside report.md, its alt text, a title naming what it shows."""

    file: str
    alt: str
    title: str
    png: bytes

    def img(self) -> str:
        """The HTML image, the PNG embedded."""
        esc = html.escape
        return f"<img src='{png_data_uri(self.png)}' alt='{esc(self.alt)}' title='{esc(self.title)}'>"


def report_plots(summary: dict[str, Any], rows: list[CellRow]) -> list[ReportPlot]:
    """The per-seed differences (if a comparison is paired) and the validation curves (if cells
    recorded them)."""
    plots = []
    if diffs := paired_differences(summary, rows):
        title = f"paired per-seed differences to {summary['baseline']}: {', '.join(diffs)}"
        plots.append(ReportPlot(DIFF_PLOT, DIFF_ALT, title, plot_differences(summary, diffs)))
    metric, bands = curve_bands(rows, list(summary["variants"]))
    if bands:
        title = f"{metric} during training: {', '.join(bands)}"
        plots.append(ReportPlot(CURVE_PLOT, CURVE_ALT, title, plot_curves(metric, bands)))
    return plots


def curve_bands(rows: list[CellRow], names: list[str]) -> tuple[str, dict[str, tuple[int, np.ndarray]]]:
    """The validation curves of the complete cells, per variant: (seeds, array (4, steps) of step,
    q1, median, q3 across its seeds at each step). The metric is the one most cells recorded."""
    curves = [(r.variant, r.curve) for r in rows if r.state == "complete" and r.curve and r.variant in names]
    metrics = [c["metric"] for _, c in curves]
    metric = max(set(metrics), key=metrics.count) if metrics else ""
    out = {}
    for name in names:
        mine = [c for v, c in curves if v == name and c["metric"] == metric]
        at: dict[int, list[float]] = {}
        for c in mine:
            for step, value in zip(c["steps"], c["values"], strict=True):
                if value is not None and math.isfinite(value):
                    at.setdefault(int(step), []).append(float(value))
        if at:
            steps = sorted(at)
            quartiles = np.array([np.percentile(at[s], [25, 50, 75]) for s in steps])  # (steps, 3)
            out[name] = (len(mine), np.vstack([np.asarray(steps, dtype=float), quartiles.T]))
    return metric, out


def plot_curves(metric: str, bands: dict[str, tuple[int, np.ndarray]]) -> bytes:
    """PNG of the validation curves: per variant the median across seeds at each step, its IQR shaded."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.add_subplot()
    for i, (name, (n, (steps, q1, med, q3))) in enumerate(bands.items()):
        color = f"C{i % 10}"
        ax.plot(steps, med, "-o", color=color, ms=3, label=f"{name} ({n} seeds)")
        ax.fill_between(steps, q1, q3, color=color, alpha=0.2, lw=0)
    ax.set_xlabel("step")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} during training: median across seeds, IQR shaded", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return figure_png(fig)


def load_heads(run_dir: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """heatmaps/<variant>/seed<k>/heads.json of every archived seed: variant -> seed -> heads."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for path in sorted(Path(run_dir).glob("heatmaps/*/seed*/heads.json")):
        m = re.fullmatch(r"seed(\d+)", path.parent.name)
        if m:
            heads = read_json_object(path, "a heatmap archive", {})
            out.setdefault(path.parent.parent.name, {})[int(m.group(1))] = heads
    return out


def _markdown(
    summary: dict[str, Any],
    heads: dict[str, Any],
    tuned: dict[str, Any] | None,
    spec: dict[str, Any] | None,
    plots: list[ReportPlot],
) -> str:
    base = summary["baseline"]
    lines = [
        f"# {summary['experiment']}: {summary['metric']} ({summary['direction']})",
        "",
        *(f"- **{line}**" for line in verdict_lines(summary)),
        "",
        status_line(summary),
        "",
        *(f"**{line}**\n" for line in split_warning_lines(summary)),
        *(f"- {line}" for line in design_lines(summary, spec)),
        "",
        *table_md(HEADER, stat_rows(summary["variants"], base, summary["metric"])),
    ]
    if pairs := summary.get("comparisons"):
        lines += ["", "## Between variants", "", *table_md(PAIR_HEADER, pair_rows(pairs, summary["metric"]))]
    lines += ["", holm_line(summary["variants"], base, summary.get("comparisons")), ""]
    lines += [f"- {line}" for line in pairing_lines(summary["variants"], base)]
    lines += ["", notes(summary), ""]
    lines += _cost_and_plots_md(summary, plots)
    for metric, variants in summary.get("extra_metrics", {}).items():
        lines += [f"## {metric}", "", *table_md(HEADER, stat_rows(variants, base, metric))]
        lines += ["", holm_line(variants, base), ""]
    if heads:
        lines += ["## Attention heads", "", *table_md(HEAD_HEADER, head_rows(heads)), ""]
    if tuned:
        lines += ["## Tuned parameters", ""]
        lines += [f"- {name}: {params_text(params)}" for name, params in tuned.items()]
        lines.append("")
    return "\n".join(lines)


def _cost_and_plots_md(summary: dict[str, Any], plots: list[ReportPlot]) -> list[str]:
    """report.md's cost table and its plots (PNG files beside it)."""
    lines = [
        "## Cost per variant",
        "",
        *table_md(COST_HEADER, cost_rows(summary["cost"], summary["baseline"])),
    ]
    lines += ["", COST_NOTE, ""]
    for plot in plots:
        lines += [f'![{plot.alt}]({plot.file} "{plot.title}")', ""]
    return lines


def table_md(header: list[str], body: list[list[str]]) -> list[str]:
    """A markdown table's lines: the header, the rule, a line per row."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(r) + " |" for r in body),
    ]


def table_html(header: list[str], body: list[list[str]]) -> str:
    """The same table as HTML, every cell escaped."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><tr>{head}</tr>{rows}</table>"


def list_html(items: list[str], cls: str = "") -> str:
    """A bulleted list, every item escaped."""
    return (
        (f"<ul class='{cls}'>" if cls else "<ul>")
        + "".join(f"<li>{html.escape(x)}</li>" for x in items)
        + "</ul>"
    )


def page_html(title: str, body: list[str]) -> str:
    """A self-contained page: the CSS inline, ``body`` (HTML parts) in order."""
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )


def _gallery_html(run_dir: Path, names: list[str], heads: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Per heatmap seed and layer: the variants side by side for probe example 0."""
    root = Path(run_dir) / "heatmaps"
    variants = [n for n in names if n in heads] + [n for n in heads if n not in names]
    seeds = sorted({s for v in variants for s in heads[v]})
    parts = ["<h2>Attention heatmaps (probe example 0)</h2>"] if seeds else []
    for seed in seeds:
        layers = sorted(
            {
                int(p.stem[5:])
                for v in variants
                for p in (root / v / f"seed{seed}").glob("layer*.png")
                if p.stem[5:].isdigit()
            }
        )
        any_heads = next(heads[v][seed] for v in variants if seed in heads[v])
        tokens = " ".join(any_heads.get("tokens", [[]])[0])
        parts.append(f"<h3>seed {seed}</h3><p class='small'>tokens: {html.escape(tokens)}</p>")
        for layer in layers:
            figs = []
            for v in variants:
                png, h = root / v / f"seed{seed}" / f"layer{layer}.png", heads[v].get(seed)
                if not png.exists() or h is None:
                    figs.append(f"<figure><figcaption>{html.escape(v)}: no heatmap</figcaption></figure>")
                    continue
                ent = ", ".join(f"{x:.2f}" for x in h["entropy"][layer])
                imp = ", ".join(f"{x:+.3f}" for x in h["importance"][layer])
                figs.append(
                    f"<figure><img src='{png_data_uri(png.read_bytes())}' alt='{html.escape(v)}'>"
                    f"<figcaption><b>{html.escape(v)}</b><br>entropy per head: {ent}<br>"
                    f"importance per head (Δ {html.escape(str(h.get('metric', '')))}): {imp}"
                    "</figcaption></figure>"
                )
            parts.append(f"<h4>layer {layer}</h4><div class='gallery'>{''.join(figs)}</div>")
    return "".join(parts)


def _html(
    run_dir: Path,
    summary: dict[str, Any],
    rows: list[CellRow],
    heads: dict[str, Any],
    tuned: dict[str, Any] | None,
    spec: dict[str, Any] | None,
    plots: list[ReportPlot],
) -> str:
    esc = html.escape
    body = [f"<h1>{esc(summary['experiment'])}: {esc(summary['metric'])} ({esc(summary['direction'])})</h1>"]
    body += [f"<p class='verdict'><strong>{esc(line)}</strong></p>" for line in verdict_lines(summary)]
    cls = "warn" if summary["cells"]["missing"] else "small"
    body.append(f"<p class='{cls}'>{esc(status_line(summary))}</p>")
    body += [f"<p class='warn'><strong>{esc(line)}</strong></p>" for line in split_warning_lines(summary)]
    base = summary["baseline"]
    body.append(list_html(design_lines(summary, spec), "small"))
    body.append(table_html(HEADER, stat_rows(summary["variants"], base, summary["metric"])))
    if pairs := summary.get("comparisons"):
        body.append(
            "<h2>Between variants</h2>" + table_html(PAIR_HEADER, pair_rows(pairs, summary["metric"]))
        )
    body.append(f"<p>{esc(holm_line(summary['variants'], base, summary.get('comparisons')))}</p>")
    pairing = pairing_lines(summary["variants"], base)
    if pairing:
        body.append(list_html(pairing, "small"))
    body.append(f"<p class='small'>{esc(notes(summary))}</p>")
    # The per-seed values and, for paired comparisons, their differences: side by side when they fit.
    metric_img = f"<img src='{png_data_uri(plot_metric(summary, rows))}' alt='metric per variant'>"
    diff_img = "".join(p.img() for p in plots if p.file == DIFF_PLOT)
    body.append(f"<div class='plots' id='plots'>{metric_img}{diff_img}</div>")
    cost_table = table_html(COST_HEADER, cost_rows(summary["cost"], base))
    note = f"<p class='small'>{esc(COST_NOTE)}</p>"
    body.append(f"<div class='cost' id='cost'><h2>Cost per variant</h2>{cost_table}{note}</div>")
    body += [f"<h2 id='curves'>Validation curves</h2>{p.img()}" for p in plots if p.file == CURVE_PLOT]
    for metric, variants in summary.get("extra_metrics", {}).items():
        body.append(f"<h2>{esc(metric)}</h2>")
        body.append(table_html(HEADER, stat_rows(variants, base, metric)))
        body.append(f"<p>{esc(holm_line(variants, base))}</p>")
    if heads:
        body.append("<h2>Attention heads</h2>" + table_html(HEAD_HEADER, head_rows(heads)))
    if tuned:
        params = [[n, params_text(ps)] for n, ps in tuned.items()]
        body.append("<h2>Tuned parameters</h2>" + table_html(["variant", "parameters"], params))
    body.append(_gallery_html(run_dir, list(summary["variants"]), heads))
    return page_html(summary["experiment"], body)


def results_csv(rows: list[CellRow]) -> str:
    """results.csv: the cell columns (stats/rows.py CELL_COLUMNS), then the metrics by name; an
    empty field is no value."""
    records = [r.csv_fields() for r in rows]
    metrics = sorted({k for r in rows for k in r.metrics})
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CELL_COLUMNS, *metrics])
    for r in records:
        vals = [r.get(k) for k in (*CELL_COLUMNS, *metrics)]
        # NaN and None both mean "no value": an empty field, which pandas reads back as NaN.
        writer.writerow(["" if v is None or (isinstance(v, float) and v != v) else v for v in vals])
    return buf.getvalue()


def write_report(
    run_dir: Path, summary: dict[str, Any], rows: list[CellRow], *, tuned: dict[str, Any] | None = None
) -> dict[str, Path]:
    """Write summary.json, results.csv, report.md, report.html and the plots report.md shows
    (``differences.png`` when a comparison is paired, ``curves.png`` when cells recorded curves; an
    old one that no longer applies is removed) into run_dir; returns their paths.

    ``summary`` gets its ``cost`` here (``cost``, from the rows), so the caller's summary is the file's.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    heads = load_heads(run_dir)
    spec = read_design(run_dir)  # seeds, base configuration and overrides for report.md/html
    summary["cost"] = cost(rows, list(summary["variants"]))
    if "provenance" in summary:  # it stays last
        summary["provenance"] = summary.pop("provenance")
    plots = report_plots(summary, rows)
    # allow_nan=False: a NaN that slipped into the summary is a bug, not something to write.
    text = json.dumps(summary, indent=2, allow_nan=False)
    files = {
        "summary": atomic_write(run_dir / "summary.json", text + "\n"),
        "csv": atomic_write(run_dir / "results.csv", results_csv(rows)),
        "markdown": atomic_write(run_dir / "report.md", _markdown(summary, heads, tuned, spec, plots)),
        "html": atomic_write(
            run_dir / "report.html", _html(run_dir, summary, rows, heads, tuned, spec, plots)
        ),
    }
    written = {p.file: p for p in plots}
    for key, name in (("differences", DIFF_PLOT), ("curves", CURVE_PLOT)):
        if name in written:
            files[key] = atomic_write(run_dir / name, written[name].png)
        else:
            (run_dir / name).unlink(missing_ok=True)
    return files
