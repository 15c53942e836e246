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
    "power": (dict,),
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
        f"({meta['seconds'] / 60:.0f} min, `ablate power`'s shares {res['power']['seconds'] / 60:.0f} of them; "
        f"Python {meta['python']}, NumPy {meta['numpy']}"
        + ("; **--quick: smoke, not data**" if meta["quick"] else "")
        + f"). Replicates: {reps['interval']} studies per coverage cell, {reps['type_one']} per type-I cell, "
        f"{reps['sequential']} adaptive studies per schedule, {reps['aggregate']} aggregates, "
        f"{reps['pilots']} pilots per power cell (true power from {reps['true_power'] // 4}–{reps['true_power']} "
        f"studies per n, {(1 + REFINE_FACTOR) * reps['true_power']} within {100 * REFINE:.1f} pt of 0.8). The effect is "
        f"{res['effect_latent_sd']} latent sd; numbers are percentages (Monte Carlo sd of a cell: "
        f"{_mc_sd(0.95, reps['interval'])} pt at 95 %, {_mc_sd(0.05, reps['type_one'])} pt at 5 %, "
        f"{_mc_sd(0.6, reps['pilots'])} pt for a share of pilots near 60 %).",
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
    pw = res["power"]
    lines = [
        "",
        f"**`ablate power`'s shares** ({pw['pilots']} pilots per cell; α = {pw['alpha']} per comparison, "
        f"target power {pw['target']}; the margin m: the effect of {res['effect_latent_sd']} latent sd in the "
        "metric's units; **detect**: pilots and data with that effect, **equivalence**: with none). "
        "*Stated*: the mean share printed beside the seeds (pilots told a number); *simulated*: the pilots "
        "whose answer is not too few (its true power, by simulation of the test's own rule, is ≥ 0.8, or it "
        "says more than the max); *told a number*: that share among the pilots told a number. "
        f"Timing: `ablate power`'s computation for a 3-variant × 7-seed study, cold: {pw['timing']['seconds']:.1f} s.",
        "",
        "| model | claim | design | max | seeds truly needed | answers: median (10–90 %) | more than max | stated | simulated | stated − simulated | told a number |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model, m in pw["models"].items():
        for claim, cells in m["cells"].items():
            for design, c in cells.items():
                lines.append(_power_row(model, claim, design, c))
    return lines


def _power_row(model: str, claim: str, design: str, c: dict[str, Any]) -> str:
    q = c["answer_p10_p90"]
    med = "–" if c["answer_median"] is None else f"{c['answer_median']:.0f} ({q[0]:.0f}–{q[1]:.0f})"
    true_n = c["true_n"] if c["true_n"] is not None else f"> {c['max_seeds']}"
    gap = None if c["stated_share"] is None else c["stated_share"] - c["simulated_share"]
    gap_text = "–" if gap is None else f"{100 * gap:+.1f}"
    short = "detect" if claim == "difference" else claim
    return (
        f"| {model} | {short} | {design} | {c['max_seeds']} | {true_n} | {med} | {c['above_max']} "
        f"| {_pct(c['stated_share'])} | {_pct(c['simulated_share'])} | {gap_text} | {_pct(c['simulated_share_answered'])} |"
    )


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
