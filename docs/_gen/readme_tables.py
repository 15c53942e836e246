"""``python -m docs._gen.readme_tables``: the result tables of the docs and the README, generated
from run folders.

The inputs are committed copies of the run folders' ``summary.json`` (the statistics),
``spec.json`` (the data set and the step count) and ``results.csv`` (per-cell values and wall
times) of a preset's experiments::

    results/<preset>/<experiment>.json          = runs/<experiment>/summary.json
    results/<preset>/<experiment>.spec.json     = runs/<experiment>/spec.json
    results/<preset>/<experiment>.results.csv   = runs/<experiment>/results.csv

and the same three files of the experiment's companion runs, when they exist:
``<experiment>-lr0.5x``, ``<experiment>-lr2x`` (``ablate lr-check``: the
per-variant lr rows, docs/_gen/tuned_rows.py) and ``<experiment>-tuned`` (``ablate search
--then-evaluate``: the rows tuned by search).

Usage::

    python -m docs._gen.readme_tables                   # print the table block of the preset
    python -m docs._gen.readme_tables --write           # replace that block in the pages that hold it
    python -m docs._gen.readme_tables --preset all --write          # every preset's block
    python -m docs._gen.readme_tables --collect runs/   # copy the run folders' files into results/

After ``./ablate reproduce remove-pe-single-head``: ``--collect runs/ --write`` (or the two in turn).
A block sits between ``<!-- table:<preset> -->`` and ``<!-- /table -->``: every preset's in
docs/pages/results/index.md, the main job's (remove-pe-single-head) in README.md as well;
tests/unit/docs/test_readme_tables.py fails when one differs from what this module prints.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from ablate.errors import ConfigError
from ablate.experiments.schema.machine import NOT_RECORDED, mixed_numerics
from ablate.sweeps.drivers.lr_check import SHARED
from ablate.sweeps.ledger.run_folder import SPEC_FIELDS, SUMMARY_FIELDS, read_json_object
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import summarize
from docs._gen.blocks import DocsError, blocks, shown, write_block
from docs._gen.tuned_rows import (
    LR_LABEL,
    TUNED_LABEL,
    cell_time_note,
    companion_problem,
    companions,
    factor_label,
    lr_note,
    per_variant_lr,
    read_results_csv,
    tuned_note,
)

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
RESULTS_PAGE = REPO / "docs" / "pages" / "results" / "index.md"
RESULTS = REPO / "results"
EXPERIMENTS = REPO / "experiments" / "configs"
DEFAULT_PRESET = "remove-pe-single-head"
README_PRESETS = (DEFAULT_PRESET, "block")  # the presets whose table README.md holds too
ALL = "all"  # --preset all: every preset of experiments/configs/presets/

MINUS = "\u2212"  # the README's minus sign
HEADER = "| data set (steps) | variant | median [IQR] | IQM | min–max | Δ [CI] (confidence) | p | p Holm | P(improve) |"
# data.task, or for task "text" the last part of data.source -> the name the README uses.
DATASET_LABELS = {"order": "order-only", "lookup": "multi-lookup", "listops": "ListOps", "sst2": "SST-2"}
# The keys of a committed spec.json that the tables read (their JSON types: a run folder's).
SPEC_KEYS = {k: SPEC_FIELDS[k] for k in ("name", "base", "variants", "seeds", "metric", "direction")}
TAG = "table"  # a preset's block: <!-- table:<preset> --> ... <!-- /table --> (docs/_gen/blocks.py)


class TableError(DocsError):
    """A user error: missing inputs (exit code 2, one message); a missing block is a DocsError."""


@dataclass(frozen=True)
class Run:
    """One run folder's files; ``rows`` is None for inputs committed without results.csv."""

    summary: dict[str, Any]
    spec: dict[str, Any]
    rows: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Experiment:
    """An experiment's shared-lr run, its lr check's runs (factor -> run) and its search-tuned run."""

    main: Run
    lr_runs: dict[float, Run] = field(default_factory=dict)
    tuned: Run | None = None

    @property
    def label(self) -> str:
        return dataset_label(self.main.spec)

    def runs(self) -> Iterator[tuple[str, Run]]:
        """(label, run) of every run, the shared one first: how the footer names them."""
        yield self.label, self.main
        for factor, run in self.lr_runs.items():
            yield f"{self.label} {factor_label(factor)}", run
        if self.tuned is not None:
            yield f"{self.label} tuned", self.tuned

    @cached_property
    def lr_summary(self) -> dict[str, Any] | None:
        """The per-variant lr rows (tuned_rows.per_variant_lr); None without an lr check."""
        if not self.lr_runs:
            return None
        rows = {SHARED: self.main.rows or [], **{f: r.rows or [] for f, r in self.lr_runs.items()}}
        return per_variant_lr(rows, self.main.summary, self.main.spec, shown_metrics([self]))


# ---- formatting -------------------------------------------------------------------------------


def number(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def signed(x: float | None) -> str:
    """``+0.003`` / ``−0.125`` (a real minus sign)."""
    return "–" if x is None else format(x, "+.3f").replace("-", MINUS)


def p_text(p: float | None) -> str:
    """Two significant digits (``0.69``, ``1``); one below 0.01 (``0.008``); ``<0.001`` below that."""
    if p is None:
        return "–"
    if p < 0.001:
        return "<0.001"
    return format(p, ".1g" if p < 0.01 else ".2g")


def md_row(cells: list[str]) -> str:
    # An empty cell is "| |", as in the hand-written tables.
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def spread_text(v: dict[str, Any] | None) -> str:
    """``0.873 [0.863, 0.952]``: median [q1, q3], or – without a value."""
    if v is None or v.get("median") is None:
        return "–"
    return f"{number(v['median'])} [{number(v['q1'])}, {number(v['q3'])}]"


def dataset_label(spec: dict[str, Any]) -> str:
    data = spec["base"]["data"]
    key = data["task"]
    if key == "text" and data.get("source"):
        key = str(data["source"]).rstrip("/").rsplit("/", 1)[-1].lower()
    return DATASET_LABELS.get(key, key)


def shown_metrics(inputs: list[Experiment]) -> list[str]:
    """The extra metrics that get a column: all but validation ones, which only choose."""
    out: list[str] = []
    for e in inputs:
        out += [m for m in e.main.spec.get("extra_metrics", []) if not m.startswith("val/") and m not in out]
    return out


def header(extra: list[str]) -> list[str]:
    """The header and rule rows: HEADER, then a median [IQR] column per extra metric."""
    row = HEADER + "".join(f" {m} median [IQR] |" for m in extra)
    return [row, "|" + "---|" * row.count(" |")]


def variant_cells(label: str, v: dict[str, Any], *, is_baseline: bool) -> list[str]:
    """variant | median [IQR] | IQM | min–max | Δ [CI] (confidence) | p | p Holm | P(improve).

    Δ, its interval and p are the primary test of the design (``test``): the Hodges-Lehmann
    estimate and the interval that inverts the test, at its achieved confidence.
    """
    if v["median"] is None:  # no complete cell
        spread = ["–", "–", "–"]
    else:
        spread = [spread_text(v), number(v.get("iqm")), f"{number(v['min'])}–{number(v['max'])}"]
    if is_baseline:
        return [label, *spread, "", "", "", ""]
    ci = v.get("ci")
    if ci:
        delta = f"{signed(v['delta'])} [{signed(ci[0])}, {signed(ci[1])}] ({100 * v['ci_confidence']:.1f} %)"
    else:
        delta = signed(v.get("delta")) + (" (no interval at these seeds)" if v.get("test") else "")
    improve = "–" if v["p_improve"] is None else f"{v['p_improve']:.2f}"
    p = v["p_seq"] if v.get("p_seq") is not None else v.get("p_value")
    return [label, *spread, delta, p_text(p), p_text(v.get("p_holm")), improve]


def summary_rows(first: str, summary: dict[str, Any], extra: list[str]) -> list[str]:
    """The rows of one grid study's summary, baseline first; ``first`` in the first column."""
    baseline = summary["baseline"]
    names = [baseline, *(n for n in summary["variants"] if n != baseline)]
    by_metric = summary.get("extra_metrics") or {}
    return [
        md_row(
            [
                first if i == 0 else "",
                *variant_cells(n, summary["variants"][n], is_baseline=n == baseline),
                *(spread_text(by_metric.get(m, {}).get(n)) for m in extra),
            ]
        )
        for i, n in enumerate(names)
    ]


def chose_shared(e: Experiment) -> bool:
    """Every variant's per-variant lr is the shared one: those rows would repeat the shared rows."""
    return e.lr_summary is not None and all(f == SHARED for f in e.lr_summary["factors"].values())


def experiment_rows(e: Experiment, extra: list[str]) -> list[str]:
    """The rows of one experiment: the shared run's (the data set and steps on its first row), each
    lr check run's (with descriptive columns only), the per-variant lr rows, the search-tuned rows."""
    first = f"{e.label} ({e.main.spec['base']['trainer']['max_steps']})"
    rows = summary_rows(first, e.main.summary, extra)
    if shown_metrics([e]):  # the per-variant choice reads val/acc only: these columns at every lr
        for factor, run in e.lr_runs.items():
            rows += summary_rows(factor_label(factor), run.summary, extra)
    if e.lr_summary is not None and not chose_shared(e):
        rows += summary_rows(LR_LABEL, e.lr_summary, extra)
    if e.tuned is not None:
        rows += summary_rows(TUNED_LABEL, e.tuned.summary, extra)
    return rows


def _commit_text(commit: str | None) -> str:
    if commit is None:
        return "commit not recorded"
    sha, dirty, _ = commit.partition("-dirty")
    return f"commit `{sha[:12]}{'-dirty' if dirty else ''}`"


def _overrides_text(spec: dict[str, Any]) -> str:
    """The run's base overrides but trainer.max_steps (the table shows it): ``k=v k=v``."""
    return " ".join(f"{k}={v}" for k, v in spec.get("base_overrides", {}).items() if k != "trainer.max_steps")


def footer(inputs: list[Experiment]) -> str:
    """The line under the table: the command, the commit(s) of the inputs, partial studies, the
    base overrides of each run besides trainer.max_steps (a profile's or the command line's), the
    cells' wall times and how the tuned rows were chosen."""
    runs = [labelled for e in inputs for labelled in e.runs()]
    commits = [(r.summary.get("provenance") or {}).get("commit") for _, r in runs]
    if len(set(commits)) == 1:
        where = "at " + _commit_text(commits[0])
    else:  # inputs from different code: name each one
        where = "at " + ", ".join(
            f"{_commit_text(c)} ({lbl})" for c, (lbl, _) in zip(commits, runs, strict=True)
        )
    summaries = [r.summary for _, r in runs] + [e.lr_summary for e in inputs if e.lr_summary]
    tests = {v["test"] for s in summaries for v in s["variants"].values() if v.get("test")}
    line = f"Generated by `python -m docs._gen.readme_tables` from summaries produced {where}."
    if tests:
        line += f" p: {', '.join(f'`{t}`' for t in sorted(tests))}; Holm over each data set's comparisons."
    partial = [
        f"{lbl} {r.summary['cells']['complete']}/{r.summary['cells']['total']}"
        for lbl, r in runs
        if r.summary["cells"]["complete"] < r.summary["cells"]["total"]
    ]
    if partial:
        line += " Partial studies (cells complete): " + ", ".join(partial) + "."
    overrides = [
        f"{e.label} `{_overrides_text(e.main.spec)}`" for e in inputs if _overrides_text(e.main.spec)
    ]
    if overrides:  # a profile's or the command line's, besides the step count the table shows
        line += " Overrides: " + "; ".join(overrides) + "."
    line += equivalence_note(inputs)
    line += numerics_note([r for _, r in runs])
    line += cell_time_note([(lbl, r.rows) for lbl, r in runs if r.rows is not None])
    if checked := [e for e in inputs if e.lr_runs]:
        line += lr_note([e.label for e in checked], [f for e in checked for f in e.lr_runs])
    if same := [e for e in checked if chose_shared(e)]:
        line += (
            f" {', '.join(e.label for e in same)}: that choice is ×1 for every variant, so its rows would"
            " repeat the shared rows and are left out."
        )
    if each := [e for e in checked if shown_metrics([e])]:
        labels = ", ".join(factor_label(f) for f in sorted({f for e in each for f in e.lr_runs}))
        line += (
            f" Rows {labels} ({', '.join(e.label for e in each)}): every variant at that lr, because the"
            f" per-variant choice does not look at {', '.join(shown_metrics(each))}."
        )
    return line + tuned_note([(e.label, e.tuned.spec) for e in inputs if e.tuned is not None])


def equivalence_note(inputs: list[Experiment]) -> str:
    """`` Equivalence within ±m (TOST, 90.6 % intervals): SST-2 no_pe equivalent, Δ [lo, hi]; ...``
    for each data set whose spec gives a margin (sweeps/stats/equivalence.py)."""
    parts = []
    for e in inputs:
        for name, t in (e.main.summary.get("equivalence") or {}).items():
            ci = (
                "no interval at these seeds"
                if t["ci"] is None
                else f"[{signed(t['ci'][0])}, {signed(t['ci'][1])}]"
            )
            conf = "" if t["confidence"] is None else f" ({100 * t['confidence']:.1f} %)"
            verdict = "equivalent" if t["equivalent"] else "not shown equivalent"
            parts.append(
                f"{e.label} {name} {verdict} within ±{t['margin']:g}: {ci}{conf}, p TOST Holm {p_text(t.get('p_holm'))}"
            )
    if not parts:
        return ""
    return (
        " Equivalence (the spec's `margin:`, two one-sided tests: the interval at 1 − 2α inside ±m, Holm over "
        "the data set's comparisons): " + "; ".join(parts) + "."
    )


def numerics_note(runs: list[Run]) -> str:
    """`` Numerics: <setting> (n cells); ...``: what the cells' floats were computed with, from
    results.csv's numerics column (experiments/schema/machine.py), so that a table names its machine."""
    settings = mixed_numerics([c.numerics for r in runs for c in r.rows or [] if c.state == "complete"])
    if not settings:
        return ""
    if [k for k, _ in settings] == [NOT_RECORDED]:
        return " Numerics: not recorded (the cells ran before ablate recorded them)."
    return " Numerics: " + "; ".join(f"{k} ({n} cells)" for k, n in settings) + "."


def render(inputs: list[Experiment]) -> str:
    """The README block (without its markers) for the preset's experiments, in its order."""
    extra = shown_metrics(inputs)
    lines = header(extra)
    for e in inputs:
        lines += experiment_rows(e, extra)
    return "\n".join(lines) + "\n\n" + footer(inputs) + "\n"


# ---- inputs -----------------------------------------------------------------------------------

Paths = tuple[Path, Path, Path]  # summary.json, spec.json, results.csv of one run


def preset_names() -> list[str]:
    """Every shipped preset (experiments/configs/presets/*.yaml), sorted."""
    return sorted(p.stem for p in (EXPERIMENTS / "presets").glob("*.yaml"))


def shipped_margin(name: str) -> dict[str, float]:
    """The ``margin:`` of the shipped experiment spec named ``name`` (as spec.json holds it:
    comparison -> margin, ``default`` for the rest); empty without one."""
    for path in sorted((EXPERIMENTS / "ablations").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if raw.get("name") == name and raw.get("margin") is not None:
            m = raw["margin"]
            return {k: float(v) for k, v in m.items()} if isinstance(m, dict) else {"default": float(m)}
    return {}


def experiment_names(preset: str) -> list[str]:
    """The experiments a preset runs (experiments/configs/presets/<preset>.yaml), in its order."""
    path = EXPERIMENTS / "presets" / f"{preset}.yaml"
    if not path.is_file():
        raise TableError(f"no preset {preset!r}; choose one of {', '.join(preset_names())} (or {ALL})")
    rels = yaml.safe_load(path.read_text())["experiments"]
    return [yaml.safe_load((EXPERIMENTS / rel).read_text())["name"] for rel in rels]


def run_paths(runs: Path, run: str) -> Paths:
    return (runs / run / "summary.json", runs / run / "spec.json", runs / run / "results.csv")


def result_paths(folder: Path, run: str) -> Paths:
    return (folder / f"{run}.json", folder / f"{run}.spec.json", folder / f"{run}.results.csv")


def read_run(
    paths: Paths,
    name: str,
    *,
    need_rows: bool,
    missing: Callable[[list[str]], str],
    margin: dict[str, float] | None = None,
) -> Run:
    absent = [str(p) for p in (paths if need_rows else paths[:2]) if not p.is_file()]
    if absent:
        raise TableError(missing(absent))
    summary = read_json_object(paths[0], "a run's committed results", SUMMARY_FIELDS)
    spec = read_json_object(paths[1], "a run's committed results", SPEC_KEYS)
    if summary.get("experiment") != name:
        raise TableError(f"{paths[0]} is the summary of {summary.get('experiment')!r}, not of {name!r}")
    if not paths[2].is_file():  # committed without its cells: the statistics as they were written
        return Run(summary, spec)
    rows = read_results_csv(paths[2])
    return Run(restat(summary, spec, rows, spec.get("margin") or margin or {}), spec, rows)


def restat(
    summary: dict[str, Any], spec: dict[str, Any], rows: list[CellRow], margin: dict[str, float] | None = None
) -> dict[str, Any]:
    """The summary with its statistics computed again from the run's cells by today's code
    (sweeps/stats/summary.py), so that a table shows the same tests, intervals and verdicts as
    a report written now; provenance, versions and the rest stay as the run wrote them.
    ``margin`` (the run's spec.json ``margin``, else the shipped spec's: a reading, not part of
    the study) adds the equivalence tests."""
    margin = margin or {}
    others = [v for v, ov in spec["variants"].items() if ov]
    margins = {v: m for v in others if (m := margin.get(v, margin.get("default"))) is not None}
    adaptive = spec.get("adaptive")
    looks = 1 + -(-(adaptive["max"] - adaptive["min"]) // adaptive["step"]) if adaptive else 1

    def stats(metric: str) -> dict[str, Any]:
        return summarize(
            rows,
            experiment=summary["experiment"],
            metric=metric,
            direction=spec["direction"],
            baseline=summary["baseline"],
            variants=list(spec["variants"]),
            seeds=spec["seeds"],
            overrides=spec["variants"],
            looks=looks,
            margins=margins,
        )

    fresh = stats(spec["metric"])
    out = {**summary, **{k: fresh[k] for k in ("cells", "variants", "methods")}}
    if "equivalence" in fresh:
        out["equivalence"] = fresh["equivalence"]
    if spec.get("extra_metrics"):
        out["extra_metrics"] = {m: stats(m)["variants"] for m in spec["extra_metrics"]}
    return out


def read_experiment(
    name: str,
    paths: Callable[[str], Paths],
    present: set[str],
    *,
    need_rows: bool,
    missing: Callable[[list[str]], str],
) -> Experiment:
    """The experiment's shared run, and its companion runs among ``present`` (run names);
    ``missing`` words the error for absent files."""
    main = read_run(paths(name), name, need_rows=need_rows, missing=missing, margin=shipped_margin(name))
    lr_names, tuned_name = companions(name, present)
    lr_runs = {f: read_run(paths(n), n, need_rows=True, missing=missing) for f, n in lr_names.items()}
    tuned = read_run(paths(tuned_name), tuned_name, need_rows=True, missing=missing) if tuned_name else None
    problems = [companion_problem(main.spec, lr_names[f], r.spec, f) for f, r in lr_runs.items()]
    if tuned is not None:
        problems.append(companion_problem(main.spec, f"{name}-tuned", tuned.spec))
    if problem := next((p for p in problems if p), None):
        raise TableError(problem)
    if lr_runs and main.rows is None:
        raise TableError(missing([str(paths(name)[2])]) + " (the per-variant lr rows need its cells)")
    return Experiment(main, lr_runs, tuned)


def load_inputs(preset: str, results: Path = RESULTS) -> list[Experiment]:
    """Each experiment of the preset, with its companion runs, from results/<preset>/."""
    folder = results / preset
    present = {p.name[: -len(".json")] for p in folder.glob("*.json") if not p.name.endswith(".spec.json")}

    def missing(absent: list[str]) -> str:
        return (
            f"no committed inputs {', '.join(absent)}; run `python -m docs._gen.readme_tables "
            f"--preset {preset} --collect runs/` after `ablate reproduce {preset}`"
        )

    return [
        read_experiment(n, lambda run: result_paths(folder, run), present, need_rows=False, missing=missing)
        for n in experiment_names(preset)
    ]


def collect(preset: str, runs: Path, results: Path = RESULTS) -> list[Path]:
    """Copy summary.json, spec.json and results.csv of every experiment's run folder, and of its
    companions (runs/<experiment>-lr<f>x/, runs/<experiment>-tuned/) if any, into results/<preset>/.

    Nothing is copied unless every experiment's run folder has the three files.
    """
    runs = Path(runs)
    present = {p.name for p in runs.iterdir() if p.is_dir()} if runs.is_dir() else set()

    def missing(absent: list[str]) -> str:
        return f"{', '.join(absent)} missing: run `ablate reproduce {preset}` (or its sweeps) first"

    pairs = []
    for name in experiment_names(preset):
        read_experiment(name, lambda run: run_paths(runs, run), present, need_rows=True, missing=missing)
        lr_names, tuned_name = companions(name, present)  # checked by read_experiment
        names = [name, *lr_names.values(), *([tuned_name] if tuned_name else [])]
        pairs += [(run_paths(runs, n), result_paths(results / preset, n)) for n in names]
    (results / preset).mkdir(parents=True, exist_ok=True)
    copied = []
    for src, dst in pairs:
        for s, d in zip(src, dst, strict=True):
            shutil.copyfile(s, d)
            copied.append(d)
    return copied


# ---- the pages --------------------------------------------------------------------------------


def pages_of(preset: str) -> list[Path]:
    """The pages that hold the preset's block: the results page, and README.md for the main job
    and the block preset."""
    return [RESULTS_PAGE, *([README] if preset in README_PRESETS else [])]


def readme_blocks(text: str) -> dict[str, str]:
    """Preset name -> the body between its markers in a page's text (README.md or a docs page)."""
    return blocks(text, TAG)


def write_tables(preset: str, body: str) -> None:
    """Replace the preset's block in every page of ``pages_of``, reporting each on stderr."""
    for page in pages_of(preset):
        changed = write_block(page, TAG, body, preset)
        print(f"{shown(page)}: table {preset} {'updated' if changed else 'unchanged'}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m docs._gen.readme_tables", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--preset",
        default=DEFAULT_PRESET,
        help=f"the preset whose table to make, or {ALL} (default {DEFAULT_PRESET})",
    )
    ap.add_argument(
        "--collect",
        metavar="RUNS",
        help="first copy RUNS/<experiment>/{summary.json,spec.json,results.csv} (and those of "
        "RUNS/<experiment>-lr<f>x/, RUNS/<experiment>-tuned/) into the inputs",
    )
    ap.add_argument(
        "--write",
        action="store_true",
        help="replace the preset's block in docs/pages/results/index.md (and, for the main job, README.md)",
    )
    args = ap.parse_args(argv)
    try:
        presets = preset_names() if args.preset == ALL else [args.preset]
        for preset in presets:
            if args.collect:
                for path in collect(preset, Path(args.collect)):
                    print(f"copied {shown(path)}", file=sys.stderr)
            body = render(load_inputs(preset))
            if args.write:
                write_tables(preset, body)
            else:
                sys.stdout.write(
                    body if len(presets) == 1 else f"<!-- table:{preset} -->\n{body}<!-- /table -->\n"
                )
    except (DocsError, ConfigError) as err:  # ConfigError: a committed JSON file that is not one
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
