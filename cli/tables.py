"""The tables ``ablate`` prints: one run's metrics, a sweep's statistics, a search's bests.

stdout holds the tables (readable when piped: rich would assume 80 columns); stderr the notes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# Notes: wrapped to a terminal's width, but not in a log or a pipe (rich would break them at 80).
console = Console(stderr=True, soft_wrap=not Console(stderr=True).is_terminal)
out_console = Console() if Console().is_terminal else Console(width=160)


class WarningLines(logging.Handler):
    """ablate's warnings (a small evaluation split, seeds that cannot reach p Holm) on stderr, as
    the command line shows them; the API leaves them to the user's logging (api.quiet_logs)."""

    def emit(self, record: logging.LogRecord) -> None:
        console.print(self.format(record), markup=False, style="yellow", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def shown_warnings() -> Iterator[None]:
    """While a command runs: ablate's warnings printed on stderr (one WarningLines on the
    ``ablate`` logger, taken off afterwards, so an API call in the same process stays quiet)."""
    library, handler = logging.getLogger("ablate"), WarningLines(logging.WARNING)
    library.addHandler(handler)
    try:
        yield
    finally:
        library.removeHandler(handler)


def print_results(out: Path, results: list[tuple[str, Any]]) -> None:
    """One column per run (several for seed-parallel training); diverged runs are named."""
    # No path in a title: a long one wraps it; print_folder puts the folder on its own line.
    table = Table(title=f"{results[0][1].config.data.task}: metrics")
    table.add_column("metric")
    for name, _ in results:
        table.add_column(name, justify="right")
    rows = [r.to_dict() for _, r in results]
    for key in (k for k in rows[0] if k not in ("numerics", "splits")):  # metrics.json has the records
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


def print_plan(spec: Any, run_dir: Path, runs: str) -> None:
    """``--dry-run``: every variant with its overrides and seeds, what would run (``runs``: "12
    cells"), the reach warning; nothing is run or written."""
    from ablate.sweeps.drivers.grid import reach_warning
    from ablate.sweeps.stats.summary import seeds_text

    table = Table(title=f"{spec.name}: variants and seeds")
    for col in ("variant", "overrides", "seeds", "cells"):
        table.add_column(col, justify="right" if col == "cells" else "left")
    cells = spec.cells()
    for name, overrides in spec.variants.items():
        seeds = [s for v, s in cells if v == name]
        text = ", ".join(f"{k}={v}" for k, v in overrides.items()) or "(the baseline)"
        table.add_row(name, text, seeds_text(seeds), str(len(seeds)))
    out_console.print(table)
    console.print(
        f"{runs} ({len(spec.variants)} variants x {len(spec.seeds)} seeds); metric {spec.metric} "
        f"({spec.direction}); run folder {run_dir}; dry run: nothing was run or written",
        markup=False,
        soft_wrap=True,
    )
    if warning := reach_warning(spec):
        console.print(f"{warning}.", markup=False, style="yellow", soft_wrap=True)


# The report's statistics columns (sweeps/report/text.py HEADER) that the terminal shows: all but
# the mean ± std, which report.md keeps, so that the table fits a 160-column log.
TERMINAL_SKIP = ("mean ± std",)


def stats_table(summary: dict) -> Table:
    """The report's statistics table (``text.stat_rows``: the same cells as report.md)."""
    from ablate.sweeps.report.text import HEADER, stat_rows

    keep = [i for i, col in enumerate(HEADER) if col not in TERMINAL_SKIP]
    table = Table(title=f"{summary['experiment']}: {summary['metric']} over seeds")
    for i in keep:  # Text: "[q1, q3]" is words, not rich markup
        table.add_column(Text(HEADER[i]), justify="left" if HEADER[i] in ("variant", "test") else "right")
    for row in stat_rows(summary["variants"], summary["baseline"], summary["metric"]):
        table.add_row(*(Text(row[i]) for i in keep))
    return table


def print_summary(summary: dict, run_dir: Path) -> None:
    from ablate.sweeps.report.text import holm_line, params_text, reach_text, status_line, verdict_lines

    baseline = summary["baseline"]
    for line in verdict_lines(summary):  # the headline first: who wins, by how much
        console.print(line, markup=False, style="bold")
    out_console.print(stats_table(summary))
    reach = reach_text(summary)
    console.print(
        "Δ: the effect estimate, the one the verdict uses: the Hodges-Lehmann estimate of the design's "
        "primary test (signed-rank on the per-seed differences when paired, mann-whitney otherwise); "
        "its interval inverts that test, at the confidence shown"
        + (f" ({reach}). " if reach else ". ")
        + holm_line(summary["variants"], baseline, summary.get("comparisons")),
        markup=False,
    )
    for name, v in summary["variants"].items():
        if name != baseline and v.get("pairing") and not v.get("paired"):
            console.print(f"{name}: {v['pairing']}", markup=False)
    if summary["cells"]["missing"]:
        console.print(status_line(summary), markup=False, style="yellow")
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
    table = Table(title=f"{summary['experiment']}: search on {metric}")
    for col in ("variant", "complete", "pruned", "failed", f"best {metric}", "best parameters"):
        table.add_column(col, justify="left" if col in ("variant", "best parameters") else "right")
    for name, v in summary["variants"].items():
        params = params_text(v["best_params"] or {})
        best = "-" if v["best_value"] is None else f"{v['best_value']:.4f}"
        table.add_row(name, str(v["complete"]), str(v["pruned"]), str(v["errors"]), best, params or "-")
    out_console.print(table)
    print_folder(run_dir)


def print_power(table: dict, run_dir: Path) -> None:
    """``ablate power``: per comparison, the seeds that detect Δ = the margin and the seeds that
    show equivalence within it, each with the share of pilots in which they are enough."""
    t = Table(
        title=f"{table['experiment']}: seeds per side for power {table['power']} at alpha {table['alpha']} "
        f"(Holm over {table['comparisons']}: {table['alpha_per_comparison']:.4g} each, equivalence "
        f"{table['equivalence_alpha_per_comparison']:.4g}; {table['metric']})"
    )
    for col in ("comparison", "test", "σ", "pilot seeds", "margin", "detect Δ", "show equivalence"):
        t.add_column(col, justify="left" if col in ("comparison", "test") else "right")
    for name, v in table["variants"].items():
        detect = power_cell(v["detect"], "effect", table["max_seeds"])
        t.add_row(
            name,
            v["test"],
            "–" if v["sigma"] is None else f"{v['sigma']:.3g}",
            str(v["pilot_seeds"]),
            "–" if v["margin"] is None else f"{v['margin']:.4g}",
            detect,
            power_cell(v["equivalence"], "margin", table["max_seeds"]),
        )
    out_console.print(t)
    for name, v in table["variants"].items():
        if v["note"]:
            console.print(f"{name}: {v['note']}", markup=False, style="yellow")
    console.print(
        f"model: {table['model']}; measured: docs, statistics, calibration; power.json: {run_dir / 'power.json'}",
        markup=False,
    )
    print_folder(run_dir)


def power_cell(d: dict | None, key: str, max_seeds: int) -> str:
    """A claim's seeds as a cell: "N (Δ, enough in S %)", "more than MAX", or – without an effect."""
    if d is None:
        return "–"
    if d["seeds"] is None:
        return "–" if d[key] == 0 else f"more than {max_seeds}"
    return f"{d['seeds']} (±{d[key]:.4g}: enough in {100 * d['share']:.0f} %)"


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
        ci = f" [{e['iqm_ci95'][0]:.3f}, {e['iqm_ci95'][1]:.3f}]" if "iqm_ci95" in e else " (normaliser)"
        t.add_row(name, str(e["runs"]), f"{e['iqm']:.3f}{ci}", pi)
    out_console.print(t)
