"""``python -m ablate.benchmarks.readme_tables``: the README's result tables, generated from run folders.

The inputs are committed copies of the run folders' ``summary.json`` (the statistics) and
``spec.json`` (the data set and the step count) of a preset's experiments::

    benchmarks/results/<preset>/<experiment>.json        = runs/<experiment>/summary.json
    benchmarks/results/<preset>/<experiment>.spec.json   = runs/<experiment>/spec.json

Usage::

    python -m ablate.benchmarks.readme_tables                   # print the table block of the preset
    python -m ablate.benchmarks.readme_tables --write           # replace that block in README.md
    python -m ablate.benchmarks.readme_tables --collect runs/   # copy the run folders' files into results/

After ``./ablate reproduce remove-pe-single-head``: ``--collect runs/ --write`` (or the two in turn).
In README.md the block sits between ``<!-- table:<preset> -->`` and ``<!-- /table -->``;
tests/test_readme_tables.py fails when it differs from what this module prints.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
RESULTS = Path(__file__).resolve().parent / "results"
EXPERIMENTS = REPO / "experiments"
DEFAULT_PRESET = "remove-pe-single-head"

MINUS = "\u2212"  # the README's minus sign
HEADER = (
    "| data set (steps) | variant | median [IQR] | IQM | min–max | Δ [95 % CI] | p | p Holm | p MWU | P(improve) |",
    "|---|---|---|---|---|---|---|---|---|---|",
)
# data.task, or for task "text" the last part of data.source -> the name the README uses.
DATASET_LABELS = {"order": "order-only", "lookup": "multi-lookup", "listops": "ListOps", "sst2": "SST-2"}
BLOCK = re.compile(r"(<!-- table:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.DOTALL)


class TableError(Exception):
    """A user error: missing inputs or README markers (exit code 2, one message)."""


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


def dataset_label(spec: dict[str, Any]) -> str:
    data = spec["base"]["data"]
    key = data["task"]
    if key == "text" and data.get("source"):
        key = str(data["source"]).rstrip("/").rsplit("/", 1)[-1].lower()
    return DATASET_LABELS.get(key, key)


def variant_cells(name: str, v: dict[str, Any], baseline: str) -> list[str]:
    """variant | median [IQR] | IQM | min–max | Δ [95 % CI] | p | p Holm | p MWU | P(improve).

    Δ is the median of the per-seed differences with its CI when the variant is paired with the
    baseline, else the difference of medians; p is the exact test of that design (``test``).
    """
    if v["median"] is None:  # no complete cell
        spread = ["–", "–", "–"]
    else:
        spread = [
            f"{number(v['median'])} [{number(v['q1'])}, {number(v['q3'])}]",
            number(v.get("iqm")),
            f"{number(v['min'])}–{number(v['max'])}",
        ]
    if name == baseline:
        return [name, *spread, "", "", "", "", ""]
    paired = bool(v.get("paired"))
    d, ci = (v["delta_paired_median"], v["ci95_paired"]) if paired else (v["delta_median"], v["ci95"])
    delta = signed(d) + (f" [{signed(ci[0])}, {signed(ci[1])}]" if ci else "")
    improve = "–" if v["p_improve"] is None else f"{v['p_improve']:.2f}"
    p_mwu = v.get("p_mwu", v["p_value"])
    return [name, *spread, delta, p_text(v["p_value"]), p_text(v.get("p_holm")), p_text(p_mwu), improve]


def experiment_rows(summary: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """The rows of one experiment: the data set (steps) on its first row, baseline first."""
    baseline = summary["baseline"]
    names = [baseline, *(n for n in summary["variants"] if n != baseline)]
    first = f"{dataset_label(spec)} ({spec['base']['trainer']['max_steps']})"
    return [
        md_row([first if i == 0 else "", *variant_cells(n, summary["variants"][n], baseline)])
        for i, n in enumerate(names)
    ]


def _commit_text(commit: str | None) -> str:
    if commit is None:
        return "commit not recorded"
    sha, dirty, _ = commit.partition("-dirty")
    return f"commit `{sha[:12]}{'-dirty' if dirty else ''}`"


def footer(inputs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """The line under the table: the command, the commit(s) of the inputs, partial studies and the
    base overrides of each run besides trainer.max_steps (a profile's or the command line's)."""
    commits = [(s.get("provenance") or {}).get("commit") for s, _ in inputs]
    if len(set(commits)) == 1:
        where = "at " + _commit_text(commits[0])
    else:  # inputs from different code: name each one
        where = "at " + ", ".join(
            f"{_commit_text(c)} ({dataset_label(sp)})" for c, (_, sp) in zip(commits, inputs, strict=True)
        )
    tests = sorted({v["test"] for s, _ in inputs for v in s["variants"].values() if v.get("test")})
    line = f"Generated by `python -m ablate.benchmarks.readme_tables` from summaries produced {where}."
    if tests:
        line += f" p: {', '.join(f'`{t}`' for t in tests)}; Holm over each data set's comparisons."
    partial = [
        f"{dataset_label(sp)} {s['cells']['complete']}/{s['cells']['total']}"
        for s, sp in inputs
        if s["cells"]["complete"] < s["cells"]["total"]
    ]
    if partial:
        line += " Partial studies (cells complete): " + ", ".join(partial) + "."
    overrides = [
        f"{dataset_label(sp)} `{' '.join(f'{k}={v}' for k, v in extra.items())}`"
        for _, sp in inputs
        if (extra := {k: v for k, v in sp.get("base_overrides", {}).items() if k != "trainer.max_steps"})
    ]
    if overrides:  # a profile's or the command line's, besides the step count the table shows
        line += " Overrides: " + "; ".join(overrides) + "."
    return line


def render(inputs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """The README block (without its markers) for (summary, spec) pairs, in the preset's order."""
    lines = list(HEADER)
    for summary, spec in inputs:
        lines += experiment_rows(summary, spec)
    return "\n".join(lines) + "\n\n" + footer(inputs) + "\n"


# ---- inputs -----------------------------------------------------------------------------------


def experiment_names(preset: str) -> list[str]:
    """The experiments a preset runs (experiments/presets/<preset>.yaml), in its order."""
    path = EXPERIMENTS / "presets" / f"{preset}.yaml"
    if not path.is_file():
        names = sorted(p.stem for p in (EXPERIMENTS / "presets").glob("*.yaml"))
        raise TableError(f"no preset {preset!r}; choose one of {', '.join(names)}")
    rels = yaml.safe_load(path.read_text())["experiments"]
    return [yaml.safe_load((EXPERIMENTS / rel).read_text())["name"] for rel in rels]


def load_inputs(preset: str, results: Path = RESULTS) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(summary, spec) of each experiment of the preset from results/<preset>/."""
    folder = results / preset
    out = []
    for name in experiment_names(preset):
        paths = (folder / f"{name}.json", folder / f"{name}.spec.json")
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise TableError(
                f"no committed inputs {', '.join(missing)}; run `python -m ablate.benchmarks.readme_tables "
                f"--preset {preset} --collect runs/` after `ablate reproduce {preset}`"
            )
        out.append(tuple(json.loads(p.read_text()) for p in paths))
    return out  # type: ignore[return-value]


def collect(preset: str, runs: Path, results: Path = RESULTS) -> list[Path]:
    """Copy runs/<experiment>/{summary,spec}.json of every experiment into results/<preset>/.

    Nothing is copied unless every experiment's run folder has both files.
    """
    pairs = []
    for name in experiment_names(preset):
        run_dir = Path(runs) / name
        src = (run_dir / "summary.json", run_dir / "spec.json")
        missing = [str(p) for p in src if not p.is_file()]
        if missing:
            raise TableError(
                f"{', '.join(missing)} missing: run `ablate reproduce {preset}` (or its sweeps) first"
            )
        experiment = json.loads(src[0].read_text()).get("experiment")
        if experiment != name:
            raise TableError(f"{src[0]} is the summary of {experiment!r}, not of {name!r}")
        pairs.append((src, (results / preset / f"{name}.json", results / preset / f"{name}.spec.json")))
    (results / preset).mkdir(parents=True, exist_ok=True)
    copied = []
    for src, dst in pairs:
        for s, d in zip(src, dst, strict=True):
            shutil.copyfile(s, d)
            copied.append(d)
    return copied


# ---- README -----------------------------------------------------------------------------------


def readme_blocks(text: str) -> dict[str, str]:
    """Preset name -> the body between its markers in the README text."""
    return {m["name"]: m["body"] for m in BLOCK.finditer(text)}


def replace_block(text: str, preset: str, body: str) -> str:
    if preset not in readme_blocks(text):
        raise TableError(f"README.md has no block <!-- table:{preset} --> ... <!-- /table -->")
    return BLOCK.sub(lambda m: m.group(1) + body + m.group(4) if m["name"] == preset else m.group(0), text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.readme_tables", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "--preset", default=DEFAULT_PRESET, help=f"the preset whose table to make (default {DEFAULT_PRESET})"
    )
    ap.add_argument(
        "--collect", metavar="RUNS", help="first copy RUNS/<experiment>/{summary,spec}.json into the inputs"
    )
    ap.add_argument("--write", action="store_true", help="replace the preset's block in README.md")
    args = ap.parse_args(argv)
    try:
        if args.collect:
            for path in collect(args.preset, Path(args.collect)):
                print(
                    f"copied {path.relative_to(REPO) if path.is_relative_to(REPO) else path}", file=sys.stderr
                )
        body = render(load_inputs(args.preset))
        if args.write:
            old = README.read_text()
            new = replace_block(old, args.preset, body)
            if new != old:
                README.write_text(new)
            print(
                f"README.md: table {args.preset} {'updated' if new != old else 'unchanged'}", file=sys.stderr
            )
        else:
            sys.stdout.write(body)
    except TableError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
