"""``python -m docs._gen.calibration [--json F] [--write]``: the calibration tables of
docs/pages/explanations/statistics.md, rendered from the calibration benchmark's result.

``python -m ablate.benchmarks.stats_calibration`` measures and writes its JSON
(benchmarks/results/stats-calibration.json); this renders that JSON as the page's block
between ``<!-- calibration -->`` and ``<!-- /calibration -->``::

    python -m docs._gen.calibration                   # print the block of the committed result
    python -m docs._gen.calibration --write           # replace the block in the page
    python -m docs._gen.calibration --json cal.json   # another result (a --quick run's)

tests/unit/docs/test_calibration.py fails when the page's block differs from what this renders.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.sweeps.ledger.run_folder import read_json_object
from docs._gen.blocks import REPO, DocsError, shown, write_block

RESULT = REPO / "benchmarks" / "results" / "stats-calibration.json"
PAGE = REPO / "docs" / "pages" / "explanations" / "statistics.md"
TAG = "calibration"
# The benchmark's refinement of the true power near the target (benchmarks/stats_calibration.py
# REFINE, REFINE_FACTOR; its JSON does not record them): within 1.5 pt of 0.8, 5x the studies.
REFINE, REFINE_FACTOR = 0.015, 4
RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "meta": (dict,),
    "replicates": (dict,),
    "printed_confidence": (dict,),
    "models": (dict,),
    "checks": (list,),
}


def _keys_to_int(x: object) -> object:
    """JSON's string keys "3".."15" back to the ints the tables index by."""
    if isinstance(x, dict):
        return {(int(k) if k.isdigit() else k): _keys_to_int(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_keys_to_int(v) for v in x]
    return x


def read_result(path: Path = RESULT) -> dict[str, Any]:
    """The benchmark's JSON, its seed counts as ints; a ConfigError naming a file that is not one."""
    res = read_json_object(Path(path), "the calibration benchmark's results", RESULT_FIELDS)
    return _keys_to_int(res)  # type: ignore[return-value]


def _mc_sd(p: float, reps: int) -> str:
    return f"{100 * math.sqrt(p * (1 - p) / reps):.1f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _measured(res: dict[str, Any]) -> list[str]:
    """The first paragraph: the command, the machine, the replicates, the Monte Carlo error."""
    meta, reps = res["meta"], res["replicates"]
    return [
        f"Measured by `{meta['command']}` on {meta['machine']}, {meta['date']} "
        f"({meta['seconds'] / 60:.0f} min; Python {meta['python']}, NumPy {meta['numpy']}"
        + ("; **--quick: smoke, not data**" if meta["quick"] else "")
        + f"). Replicates: {reps['interval']} studies per coverage cell, {reps['type_one']} per type-I cell, "
        f"{reps['sequential']} adaptive studies per schedule, {reps['aggregate']} aggregates, "
        f"{reps['pilots']} pilots (true power from {reps['true_power']} studies per n, {(1 + REFINE_FACTOR) * reps['true_power']} within {100 * REFINE:.1f} pt of 0.8). The effect is "
        f"{res['effect_latent_sd']} latent sd; numbers are percentages (Monte Carlo sd of a cell: "
        f"{_mc_sd(0.95, reps['interval'])} pt at 95 %, {_mc_sd(0.05, reps['type_one'])} pt at 5 %, "
        f"{_mc_sd(0.5, reps['pilots'])} pt for a share of pilots near 50 %).",
    ]


def _coverage(res: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "**Coverage of the printed intervals.** Paired: the signed-rank test's interval of the "
        "pseudomedian of the differences; unpaired: Mann-Whitney's interval of the shift; printed: the "
        "confidence the report prints beside them (–: these seeds cannot reach 95 %, no interval is "
        "printed); IQM: Yuen's interval at nominal 95 %, kept in summary.json but not printed by the reports "
        "(it is below 94 % here). The done-when checks at the end hold the intervals and power to the "
        "normal, skewed and ceiling models; the bimodal (solved / stuck) model is shown beside them.",
        "",
        "| model | n | paired printed | paired, no effect | paired, effect | unpaired printed | unpaired, no effect | unpaired, effect | IQM (Yuen, 95) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model, m in res["models"].items():
        for n, c in m["coverage"].items():
            p = res["printed_confidence"][n]
            lines.append(
                f"| {model} | {n} | {_pct(p['paired'])} | {_pct(c['paired_null'])} | {_pct(c['paired_effect'])} "
                f"| {_pct(p['unpaired'])} | {_pct(c['unpaired_null'])} | {_pct(c['unpaired_effect'])} | {_pct(c['iqm'])} |"
            )
    return lines


def _type_one(res: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "**Type-I error at α = 5 %** (no effect; Holm over two variants sharing a baseline):",
        "",
        "| model | n | paired | unpaired | Holm, per comparison | Holm, family-wise |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for model, m in res["models"].items():
        for n, t in m["type_one"].items():
            lines.append(
                f"| {model} | {n} | {_pct(t['paired'])} | {_pct(t['unpaired'])} | {_pct(t['holm_per'])} | {_pct(t['holm_family'])} |"
            )
    return lines


def _adaptive(res: dict[str, Any]) -> list[str]:
    reps = res["replicates"]
    names = list(next(iter(res["models"].values()))["sequential"])  # the schedules, as run
    lines = [
        "",
        "**Adaptive seeds** (`seeds: {min, max, step, stop: separated}`, two variants and a baseline, no "
        f"effect, {reps['sequential']} studies per schedule, the real look / verdicts / grow; a false "
        "positive: p Holm ≤ 0.05 in the final report) and **the aggregate** (`ablate aggregate` of 3 tasks "
        f"of 5 seeds, {reps['aggregate']} replicates, effect present, printed 95 %):",
        "",
        "| model | "
        + " | ".join(f"{s}: per comparison | {s}: family-wise | {s}: stopped early" for s in names)
        + " | aggregate IQM coverage | aggregate P(improve) coverage |",
        "|---|" + "---:|" * (3 * len(names) + 2),
    ]
    for model, m in res["models"].items():
        seq = " | ".join(
            f"{_pct(m['sequential'][s]['per'])} | {_pct(m['sequential'][s]['family'])} | {_pct(m['sequential'][s]['stopped_early'])}"
            for s in names
        )
        a = m["aggregate_n5"]
        lines.append(f"| {model} | {seq} | {_pct(a['iqm'])} | {_pct(a['p_improve'])} |")
    return lines


def _power(res: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"**`ablate power`** ({res['replicates']['pilots']} pilots of 5 paired seeds per model, `--delta` = the true "
        "pseudomedian, target power 0.8, the search up to "
        f"{next(iter(res['models'].values()))['power']['max_seeds']} seeds; true power by simulation of the signed-rank test):",
        "",
        "| model | seeds truly needed | recommended: median (10–90 %) | true power at the median answer | answers with true power ≥ 0.8 | the same, an answer above the max counted as enough | truly needed n inside the printed 80 % range | answers above the max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model, m in res["models"].items():
        p = m["power"]
        q = p["recommended_p10_p90"]
        med = (
            "–"
            if p["recommended_median"] is None
            else f"{p['recommended_median']:.0f} ({q[0]:.0f}–{q[1]:.0f})"
        )
        true_n = p["true_n"] if p["true_n"] is not None else f"> {p['max_seeds']}"
        lines.append(
            f"| {model} | {true_n} | {med} | {_pct(p['true_power_at_recommended_median'])} | {_pct(p['share_reaching_target'])} "
            f"| {_pct(p['share_reaching_target_all'])} | {_pct(p['share_true_n_in_range'])} | {p['answers_above_max']} |"
        )
    return lines


def _checks(res: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "**Checks** (worst cell of each):",
        "",
        "| criterion | worst cell | value | bound | pass |",
        "|---|---|---:|---:|---|",
    ]
    for c in res["checks"]:
        lines.append(
            f"| {c['criterion']} | {c['worst']} | {_pct(c['value'])} | {_pct(c['bound'])} | {'yes' if c['pass'] else '**no**'} |"
        )
    return lines


def render(res: dict[str, Any]) -> str:
    """The page's block (without its markers): coverage against the printed confidence, type-I,
    adaptive seeds and the aggregate, power, and the done-when checks."""
    sections = (_measured, _coverage, _type_one, _adaptive, _power, _checks)
    return "\n".join(line for section in sections for line in section(res)) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m docs._gen.calibration", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--json", type=Path, default=RESULT, help=f"the benchmark's result (default {shown(RESULT)})"
    )
    ap.add_argument("--write", action="store_true", help=f"replace the calibration block of {shown(PAGE)}")
    args = ap.parse_args(argv)
    try:
        body = render(read_result(args.json))
        if args.write:
            changed = write_block(PAGE, TAG, body)
            print(f"{shown(PAGE)}: calibration {'updated' if changed else 'unchanged'}", file=sys.stderr)
        else:
            sys.stdout.write(body)
    except (DocsError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
