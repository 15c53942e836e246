"""The study report: summary.json, results.csv, report.md and a self-contained report.html.

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
import re
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ablate.files import atomic_write
from ablate.sweeps.ledger.run_folder import read_json_object
from ablate.sweeps.report.text import (
    HEAD_HEADER,
    HEADER,
    NOTES,
    design_lines,
    head_rows,
    holm_line,
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

CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}.gallery{display:flex;gap:1em;flex-wrap:wrap}
figure{margin:0;max-width:100%}figure img{max-width:100%}figcaption{font-size:12px}
.warn{color:#a40}.small{font-size:12px;color:#555}"""


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
    summary: dict[str, Any], heads: dict[str, Any], tuned: dict[str, Any] | None, spec: dict[str, Any] | None
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
    lines += ["", holm_line(summary["variants"], base), ""]
    lines += [f"- {line}" for line in pairing_lines(summary["variants"], base)]
    lines += ["", NOTES, ""]
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
    spec: dict[str, Any] | None = None,
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
    body.append(f"<p>{esc(holm_line(summary['variants'], base))}</p>")
    pairing = pairing_lines(summary["variants"], base)
    if pairing:
        body.append(list_html(pairing, "small"))
    body.append(f"<p class='small'>{esc(NOTES)}</p>")
    body.append(f"<img src='{png_data_uri(plot_metric(summary, rows))}' alt='metric per variant'>")
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
    """Write summary.json, results.csv, report.md and report.html into run_dir; returns their paths."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    heads = load_heads(run_dir)
    spec = read_design(run_dir)  # seeds, base configuration and overrides for report.md/html
    # allow_nan=False: a NaN that slipped into the summary is a bug, not something to write.
    text = json.dumps(summary, indent=2, allow_nan=False)
    return {
        "summary": atomic_write(run_dir / "summary.json", text + "\n"),
        "csv": atomic_write(run_dir / "results.csv", results_csv(rows)),
        "markdown": atomic_write(run_dir / "report.md", _markdown(summary, heads, tuned, spec)),
        "html": atomic_write(run_dir / "report.html", _html(run_dir, summary, rows, heads, tuned, spec)),
    }
