"""``python -m docs._gen.equivalence [--json F] [--write]``: the equivalence tables of
docs/pages/explanations/statistics.md (the block between ``<!-- equivalence -->`` and
``<!-- /equivalence -->``), rendered from ``python -m ablate.benchmarks.equivalence_calibration``'s
JSON (benchmarks/results/equivalence-calibration.json). tests/unit/docs/test_calibration.py fails
when the page's block differs from what this renders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.sweeps.ledger.run_folder import read_json_object
from docs._gen.blocks import REPO, DocsError, shown, write_block

RESULT = REPO / "benchmarks" / "results" / "equivalence-calibration.json"
PAGE = REPO / "docs" / "pages" / "explanations" / "statistics.md"
TAG = "equivalence"
FIELDS: dict[str, tuple[type, ...]] = {
    "meta": (dict,),
    "models": (dict,),
    "checks": (list,),
    "margin": (float,),
}


def read_result(path: Path = RESULT) -> dict[str, Any]:
    return read_json_object(Path(path), "the equivalence benchmark's results", FIELDS)


def render(res: dict[str, Any]) -> str:
    """Type-I of the claim at a true Δ of ±m per model and seed count, its power at Δ = 0, and
    the check, with the command and the machine."""
    ns = list(next(iter(res["models"].values()))["type_one"])
    head = ["| model | " + " | ".join(f"n = {n}" for n in ns) + " |", "|---|" + "---|" * len(ns)]
    lines = [
        f'Share of studies called "equivalent within ±{res["margin"]:g}" when the true Δ is at the margin '
        f"(the larger of +m and −m; must be at most α = {res['alpha']}):",
        "",
        *head,
    ]
    for model, e in res["models"].items():
        lines.append(f"| {model} | " + " | ".join(f"{100 * e['type_one'][n]:.1f} %" for n in ns) + " |")
    lines += ["", "Power of the claim when the variant changes nothing (Δ = 0):", "", *head]
    for model, e in res["models"].items():
        if "power_at_zero" in e:
            lines.append(
                f"| {model} | " + " | ".join(f"{100 * e['power_at_zero'][n]:.0f} %" for n in ns) + " |"
            )
    m = res["meta"]
    lines += ["", f"`{m['command']}`: {res['replicates']} studies per cell, {m['machine']}, {m['date']}."]
    for c in res["checks"]:
        w = c["worst"]
        lines.append(
            f"{'Passed' if c['passed'] else 'Failed'}: {c['check']} (worst {100 * w['rate']:.1f} %, {w['model']}, "
            f"{w['seeds']} seeds)."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m docs._gen.equivalence", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--json", type=Path, default=RESULT, help=f"the benchmark's result (default {shown(RESULT)})"
    )
    ap.add_argument("--write", action="store_true", help=f"replace the equivalence block of {shown(PAGE)}")
    args = ap.parse_args(argv)
    try:
        body = render(read_result(args.json))
        if args.write:
            changed = write_block(PAGE, TAG, body)
            print(f"{shown(PAGE)}: equivalence {'updated' if changed else 'unchanged'}", file=sys.stderr)
        else:
            sys.stdout.write(body)
    except (DocsError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
