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

from ablate.experiments.io import atomic_write_bytes
from ablate.sweeps.stats import collect, seeds_text

CELL_COLUMNS = ("variant", "seed", "state", "diverged", "wall_s", "trial", "wandb_id", "error")
CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}.gallery{display:flex;gap:1em;flex-wrap:wrap}
figure{margin:0;max-width:100%}figure img{max-width:100%}figcaption{font-size:12px}
.warn{color:#a40}.small{font-size:12px;color:#555}"""


def atomic_write(path: Path, data: str | bytes) -> Path:
    """Write ``data`` atomically (temp file + rename, see ``experiments.io``); return ``path``."""
    atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def figure_png(fig: Figure) -> bytes:
    # Figure without pyplot renders with Agg and touches no global backend state (thread-safe).
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def fmt(x: float | None, spec: str = ".4g") -> str:
    return "–" if x is None else format(x, spec)


def params_text(params: dict[str, Any]) -> str:
    """``optim.lr=0.001295, model.norm=post``: floats to 4 significant digits."""
    return ", ".join(f"{k}={p:.4g}" if isinstance(p, float) else f"{k}={p}" for k, p in params.items())


def plot_metric(summary: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
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
            out.setdefault(path.parent.parent.name, {})[int(m.group(1))] = json.loads(path.read_text())
    return out


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


def _row_cells(name: str, v: dict[str, Any], baseline: str, d: int = 3) -> list[str]:
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


def _status_line(summary: dict[str, Any]) -> str:
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


def _pairing_lines(variants: dict[str, dict[str, Any]], baseline: str) -> list[str]:
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


def _markdown(
    summary: dict[str, Any], heads: dict[str, Any], tuned: dict[str, Any] | None, spec: dict[str, Any] | None
) -> str:
    base, d = summary["baseline"], decimals(summary["metric"])
    lines = [
        f"# {summary['experiment']}: {summary['metric']} ({summary['direction']})",
        "",
        _status_line(summary),
        "",
        *(f"- {line}" for line in design_lines(summary, spec)),
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    for name, v in summary["variants"].items():
        lines.append("| " + " | ".join(_row_cells(name, v, base, d)) + " |")
    lines += ["", holm_line(summary["variants"], base), ""]
    lines += [f"- {line}" for line in _pairing_lines(summary["variants"], base)]
    lines += ["", NOTES, ""]
    for metric, variants in summary.get("extra_metrics", {}).items():
        lines += [f"## {metric}", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        lines += [
            "| " + " | ".join(_row_cells(n, v, base, decimals(metric))) + " |" for n, v in variants.items()
        ]
        lines += ["", holm_line(variants, base), ""]
    if heads:
        lines += [
            "## Attention heads",
            "",
            "| variant | mean entropy (nats) | most important head (Δ metric) |",
            "|---|---|---|",
        ]
        for name, seeds in heads.items():
            ent, top = head_digest(seeds)
            lines.append(f"| {name} | {ent:.3f} | {top} |")
        lines.append("")
    if tuned:
        lines += ["## Tuned parameters", ""]
        lines += [f"- {name}: {params_text(params)}" for name, params in tuned.items()]
        lines.append("")
    return "\n".join(lines)


def _table_html(header: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><tr>{head}</tr>{rows}</table>"


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
    rows: list[dict[str, Any]],
    heads: dict[str, Any],
    tuned: dict[str, Any] | None,
    spec: dict[str, Any] | None = None,
) -> str:
    esc = html.escape
    body = [f"<h1>{esc(summary['experiment'])}: {esc(summary['metric'])} ({esc(summary['direction'])})</h1>"]
    cls = "warn" if summary["cells"]["missing"] else "small"
    body.append(f"<p class='{cls}'>{esc(_status_line(summary))}</p>")
    base, d = summary["baseline"], decimals(summary["metric"])
    body.append(
        "<ul class='small'>" + "".join(f"<li>{esc(x)}</li>" for x in design_lines(summary, spec)) + "</ul>"
    )
    body.append(_table_html(HEADER, [_row_cells(n, v, base, d) for n, v in summary["variants"].items()]))
    body.append(f"<p>{esc(holm_line(summary['variants'], base))}</p>")
    pairing = _pairing_lines(summary["variants"], base)
    if pairing:
        body.append("<ul class='small'>" + "".join(f"<li>{esc(x)}</li>" for x in pairing) + "</ul>")
    body.append(f"<p class='small'>{esc(NOTES)}</p>")
    body.append(f"<img src='{png_data_uri(plot_metric(summary, rows))}' alt='metric per variant'>")
    for metric, variants in summary.get("extra_metrics", {}).items():
        body.append(f"<h2>{esc(metric)}</h2>")
        body.append(
            _table_html(HEADER, [_row_cells(n, v, base, decimals(metric)) for n, v in variants.items()])
        )
        body.append(f"<p>{esc(holm_line(variants, base))}</p>")
    if heads:
        digest = [[n, f"{e:.3f}", top] for n, (e, top) in ((n, head_digest(s)) for n, s in heads.items())]
        body.append(
            "<h2>Attention heads</h2>"
            + _table_html(["variant", "mean entropy (nats)", "most important head (Δ metric)"], digest)
        )
    if tuned:
        body.append(
            "<h2>Tuned parameters</h2>"
            + _table_html(
                ["variant", "parameters"],
                [[n, params_text(ps)] for n, ps in tuned.items()],
            )
        )
    body.append(_gallery_html(run_dir, list(summary["variants"]), heads))
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(summary['experiment'])}</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )


def _csv(rows: list[dict[str, Any]]) -> str:
    metrics = sorted({k for r in rows for k in r} - set(CELL_COLUMNS))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CELL_COLUMNS, *metrics])
    for r in rows:
        vals = [r.get(k) for k in (*CELL_COLUMNS, *metrics)]
        # NaN and None both mean "no value": an empty field, which pandas reads back as NaN.
        writer.writerow(["" if v is None or (isinstance(v, float) and v != v) else v for v in vals])
    return buf.getvalue()


def write_report(
    run_dir: Path, summary: dict[str, Any], rows: list[dict[str, Any]], *, tuned: dict[str, Any] | None = None
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
        "csv": atomic_write(run_dir / "results.csv", _csv(rows)),
        "markdown": atomic_write(run_dir / "report.md", _markdown(summary, heads, tuned, spec)),
        "html": atomic_write(run_dir / "report.html", _html(run_dir, summary, rows, heads, tuned, spec)),
    }
