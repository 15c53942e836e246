"""The tables ``ablate`` prints: one run's metrics, a sweep's statistics, a search's bests.

stdout holds the tables (readable when piped: rich would assume 80 columns); stderr the notes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console(stderr=True)
out_console = Console() if Console().is_terminal else Console(width=160)


def print_results(out: Path, results: list[tuple[str, Any]]) -> None:
    """One column per run (several for seed-parallel training); diverged runs are named."""
    # Titles are rich markup: a path is escaped, so that a "[" in it is printed as is.
    table = Table(title=f"{results[0][1].config.data.task}: {escape(str(out))}")
    table.add_column("metric")
    for name, _ in results:
        table.add_column(name, justify="right")
    rows = [r.to_dict() for _, r in results]
    for key in rows[0]:
        cells = [row.get(key) for row in rows]
        table.add_row(key, *(f"{v:.4f}" if isinstance(v, float) else str(v) for v in cells))
    out_console.print(table)
    for name, result in results:
        if result.diverged:
            console.print(
                f"[yellow]{name}: run diverged (non-finite loss) at step {result.steps}; "
                "recorded in metrics.json"
            )
    print_folder(out)


def print_summary(summary: dict, run_dir: Path) -> None:
    from ablate.sweeps.report.text import decimals, fmt_p, holm_line, params_text

    metric, baseline = summary["metric"], summary["baseline"]
    table = Table(title=f"{summary['experiment']}: {metric} over seeds ({escape(str(run_dir))})")
    for col in (
        "variant",
        "n",
        "div",
        "median [IQR]",
        "IQM",
        "min-max",
        "Δ [95% CI]",
        "test",
        "p",
        "p Holm",
        "P(improve)",
    ):
        table.add_column(col, justify="left" if col in ("variant", "test") else "right")

    d = decimals(metric)

    def f(x: float | None, spec: str = f".{d}f") -> str:
        return "-" if x is None else format(x, spec)

    def with_ci(x: float | None, ci: list | None) -> str:
        return f(x, f"+.{d}f") + (f" [{f(ci[0], f'+.{d}f')}, {f(ci[1], f'+.{d}f')}]" if ci else "")

    for name, v in summary["variants"].items():
        if v.get("paired"):  # the median of the per-seed differences, CI over seeds
            delta = with_ci(v.get("delta_paired_median"), v.get("ci95_paired"))
        else:  # the difference of medians
            delta = with_ci(v["delta_median"], v["ci95"])
        table.add_row(
            name + (" (baseline)" if name == baseline else ""),
            str(v["n"]),
            str(v["n_diverged"]),
            f"{f(v['median'])} [{f(v['q1'])}-{f(v['q3'])}]",
            f(v.get("iqm")),
            f"{f(v['min'])}-{f(v['max'])}",
            delta,
            v.get("test") or "-",
            fmt_p(v["p_value"]).replace("–", "-"),
            fmt_p(v.get("p_holm")).replace("–", "-"),
            f(v["p_improve"], ".2f"),
        )
    out_console.print(table)
    console.print(
        "Δ: median of per-seed differences for paired variants (test paired-permutation), "
        "difference of medians otherwise. " + holm_line(summary["variants"], baseline),
        markup=False,
    )
    for name, v in summary["variants"].items():
        if name != baseline and v.get("pairing") and not v.get("paired"):
            console.print(f"{name}: {v['pairing']}", markup=False)
    cells = summary["cells"]
    if cells["complete"] < cells["total"]:
        console.print(
            f"partial: {cells['complete']}/{cells['total']} cells complete; missing: "
            + ", ".join(cells["missing"]),
            markup=False,
            style="yellow",
        )
    for name, params in (summary.get("tuned") or {}).items():
        console.print(f"tuned {name}: {params_text(params)}", markup=False)
    console.print(f"report: {run_dir / 'report.html'}", markup=False)
    print_folder(run_dir)


def print_folder(folder: Path) -> None:
    """The output folder, absolute, alone on a stdout line: what a script reads after a command."""
    print(Path(folder).resolve(), flush=True)


def print_search(summary: dict, run_dir: Path) -> None:
    from ablate.sweeps.report.text import params_text

    metric = summary["metric"]
    table = Table(title=f"{summary['experiment']}: search on {metric} ({escape(str(run_dir))})")
    for col in ("variant", "complete", "pruned", "failed", f"best {metric}", "best parameters"):
        table.add_column(col, justify="left" if col in ("variant", "best parameters") else "right")
    for name, v in summary["variants"].items():
        params = params_text(v["best_params"] or {})
        best = "-" if v["best_value"] is None else f"{v['best_value']:.4f}"
        table.add_row(name, str(v["complete"]), str(v["pruned"]), str(v["errors"]), best, params or "-")
    out_console.print(table)
    print_folder(run_dir)


def print_power(table: dict, run_dir: Path) -> None:
    """``ablate power``: per variant, the seeds needed for the target power, and the curve."""
    t = Table(
        title=f"{table['experiment']}: seeds per side for power {table['power']} at alpha {table['alpha']} "
        f"({table['metric']}, delta {table['delta']})"
    )
    for col in ("variant", "test", "Δ", "pilot seeds", "seeds needed", "power by seeds"):
        t.add_column(col, justify="left" if col in ("variant", "test", "power by seeds") else "right")
    for name, v in table["variants"].items():
        needed = str(v["seeds_needed"]) if v["seeds_needed"] is not None else f"> {v['curve'][-1]['seeds']}"
        curve = "  ".join(f"{p['seeds']}:{p['power']:.2f}" for p in v["curve"])
        t.add_row(name, v["test"], f"{v['delta']:+.3f}", str(v["pilot_seeds"]), needed, curve)
    out_console.print(t)
    console.print(
        f"power: {run_dir / 'power.json'} ({table['resamples']} resamples per seed count)", markup=False
    )
    print_folder(run_dir)


def print_aggregate(agg: dict) -> None:
    """``ablate aggregate`` / the end of ``ablate reproduce``: IQM and P(improve) across tasks."""
    t = Table(title=f"across {len(agg['tasks'])} tasks: {agg['metric']} / the baseline's median per task")
    for col in ("variant", "runs", "IQM [95% CI]", "P(improve) [95% CI]"):
        t.add_column(col, justify="left" if col == "variant" else "right")
    for name, e in agg["variants"].items():
        pi = (
            f"{e['p_improve']:.2f} [{e['p_improve_ci95'][0]:.2f}, {e['p_improve_ci95'][1]:.2f}]"
            if "p_improve" in e
            else "-"
        )
        t.add_row(
            name, str(e["runs"]), f"{e['iqm']:.3f} [{e['iqm_ci95'][0]:.3f}, {e['iqm_ci95'][1]:.3f}]", pi
        )
    out_console.print(t)
