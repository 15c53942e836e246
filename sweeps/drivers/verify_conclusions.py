"""``ablate verify PATH... --conclusions [--seeds S] [--runs DIR] [--workers N]``: does a finished
study's *finding* hold here, not only its floats?

Each PATH (a sweep run folder, a committed result prefix, or a folder of run folders) is rerun
here as a study of its own, from its recorded spec.json (plugins checked first, as ``ablate
verify`` does): every cell of its seeds, or of ``--seeds`` (a fresh set tests the finding rather
than the floats), in ``DIR/<experiment>`` with the sweep's own workers (``grid.sweep_pool``), so an
interrupted check resumes and a finished one reruns nothing. Both sides' statistics are then
computed by this code from their rows (the recorded side from its results.csv, with the margins
and split records its summary holds: verify_files.recompute_summary), so only the cells differ.

Per comparison the two decisions (text.decision: better, worse, not distinguishable, cannot
answer), Δ, interval and p Holm are put side by side. A conclusion **reproduced** when both
decide the same at the study's alpha (better, worse, or undecided: "cannot answer" and "not
distinguishable" both decide nothing) and, where the study has an equivalence margin, both show
equivalence or both do not. Per metric, the drift of the cells that ran on both sides (how many
are bit-identical, median and largest |recorded - rerun|) measures what the numerics did.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.drivers.verify import locate, read_rows, read_spec
from ablate.sweeps.drivers.verify_files import (
    Reference,
    csv_reference,
    recompute_summary,
    same_float,
    summary_file,
)
from ablate.sweeps.stats.rows import CellRow

UNDECIDED = ("not distinguishable", "cannot answer")
SHOWN_CELLS = 3  # cells named per conclusion that did not reproduce


@dataclass(frozen=True)
class Side:
    """One side's conclusion on one comparison."""

    decision: str  # text.DECISIONS
    delta: float | None
    ci: list[float] | None
    confidence: float | None
    p_holm: float | None
    n: int
    equivalent: bool | None  # None: no equivalence margin

    @property
    def decides(self) -> str:
        """better, worse or undecided: what a reader may conclude at the study's alpha."""
        return "undecided" if self.decision in UNDECIDED else self.decision


@dataclass(frozen=True)
class Conclusion:
    name: str
    recorded: Side
    rerun: Side
    look_at: list[str]  # cells to look at when it did not reproduce

    @property
    def reproduced(self) -> bool:
        a, b = self.recorded, self.rerun
        return a.decides == b.decides and (a.equivalent is None or a.equivalent == b.equivalent)


@dataclass(frozen=True)
class Drift:
    """One metric over the cells that ran on both sides."""

    metric: str
    cells: int
    identical: int
    median: float | None  # of |recorded - rerun| over cells with a value on both sides
    largest: float | None
    worst: str | None  # the cell of the largest


@dataclass
class StudyCheck:
    experiment: str
    metric: str
    recorded: Path
    rerun: Path
    recorded_numerics: list[str]
    rerun_numerics: list[str]
    recorded_cells: int
    rerun_cells: int
    conclusions: list[Conclusion] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    identical_cells: int = 0  # cells on both sides with every metric bit-identical

    @property
    def reproduced(self) -> bool:
        return bool(self.conclusions) and all(c.reproduced for c in self.conclusions)


# ---- what to rerun ------------------------------------------------------------------------------


def targets(paths: list[str | Path]) -> list[Path]:
    """The studies PATHs name: each run folder or committed prefix, and every run folder directly
    inside a folder of run folders (the main job's ``runs/``, a cross-machine folder)."""
    out: list[Path] = []
    for given in map(Path, paths):
        inside = sorted(p for p in given.iterdir() if (p / "spec.json").is_file()) if given.is_dir() else []
        if given.is_dir() and not (given / "spec.json").is_file() and inside:
            out += inside
        else:
            out.append(given)
    return out


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: N (seeds 0..N-1), A-B (A..B inclusive) or a comma list."""
    from ablate.experiments.schema.seeds import parse_seeds as check

    try:
        if "," in text:
            value: Any = [int(s) for s in text.split(",")]
        elif "-" in text.lstrip("-"):
            a, b = (int(s) for s in text.split("-", 1))
            value = list(range(a, b + 1)) if b >= a else None
        else:
            value = int(text)
    except ValueError:
        value = None
    if value is None:
        raise ConfigError(f"--seeds {text!r}: give N (seeds 0..N-1), A-B (A..B) or a list like 7,8,9")
    return check(value, "--seeds")


@dataclass(frozen=True)
class Recorded:
    """A study as PATH recorded it, and the spec its rerun runs."""

    path: Path
    spec: ExperimentSpec
    rows: list[CellRow]
    metrics: list[str]
    stored: dict[str, Any]  # its summary file ({} without one): margins and split records
    rerun: ExperimentSpec


def read_recorded(path: Path, seeds: tuple[int, ...] | None) -> Recorded:
    spec_path, results = locate(path)
    spec = read_spec(spec_path)  # its plugins checked against their recorded code first
    if spec.adaptive is not None or spec.extra_seeds:
        raise ConfigError(
            f"{path}: {spec.name} chose its seeds adaptively (rounds added seeds per variant); "
            "verify --conclusions reruns a fixed set of seeds, so it checks studies with fixed seeds only"
        )
    text_rows, metrics = read_rows(results)
    rows = csv_reference(spec, text_rows, results).rows
    summary = summary_file(spec_path)
    try:
        stored = json.loads(summary.read_text(encoding="utf-8")) if summary.is_file() else {}
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"cannot read {summary}: {err}") from None
    rerun = spec if seeds is None else dataclasses.replace(spec, seeds=seeds)
    return Recorded(path, spec, rows, metrics, stored if isinstance(stored, dict) else {}, here(rerun))


def here(spec: ExperimentSpec) -> ExperimentSpec:
    """``spec`` with a relative data path of its base made absolute against the current folder, as
    a command-line path is (loading.absolute_paths): a spec.json records absolute paths, and one
    rewritten to travel (``../shared/data/...`` in a cross-machine folder) names them from where
    the command runs, so the rerun is the study a sweep from here would be."""
    from ablate.experiments.specs.loading import PATH_KEYS, absolute_paths

    base = spec.base.to_dict()
    given = {k: base[k.split(".")[0]].get(k.split(".")[1]) for k in PATH_KEYS}
    fixed = absolute_paths({k: v for k, v in given.items() if isinstance(v, str)}, Path.cwd())
    changed = {k: v for k, v in fixed.items() if v != given[k]}
    return dataclasses.replace(spec, base=spec.base.override(changed)) if changed else spec


# ---- comparing ---------------------------------------------------------------------------------


def summary_of(spec: ExperimentSpec, rows: list[CellRow], stored: dict[str, Any]) -> dict[str, Any]:
    """The summary this code computes from ``rows``, with the recorded margins and split records."""
    return recompute_summary(Reference("results.csv", spec, rows, None, None, {}), stored)


def side(summary: dict[str, Any], name: str) -> Side:
    from ablate.sweeps.report.text import comparison_entry, decision

    v = comparison_entry(summary, name)
    e = (summary.get("equivalence") or {}).get(name)
    return Side(
        decision=decision(name, summary),
        delta=v.get("delta"),
        ci=v.get("ci"),
        confidence=v.get("ci_confidence"),
        p_holm=v.get("p_holm"),
        n=int(v.get("n") or 0),
        equivalent=bool(e["equivalent"]) if isinstance(e, dict) else None,
    )


def _pairs(a: list[CellRow], b: list[CellRow]) -> list[tuple[CellRow, CellRow]]:
    """The complete cells on both sides, in ``a``'s order."""
    there = {(r.variant, r.seed): r for r in b if r.state == "complete"}
    return [
        (r, there[(r.variant, r.seed)]) for r in a if r.state == "complete" and (r.variant, r.seed) in there
    ]


def _gap(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else abs(a - b)


def drift(recorded: list[CellRow], rerun: list[CellRow], metrics: list[str]) -> list[Drift]:
    """Per metric: of the cells on both sides, how many are bit-identical, and |recorded - rerun|."""
    pairs = _pairs(recorded, rerun)
    out = []
    for m in metrics:
        gaps = [(g, a.name) for a, b in pairs if (g := _gap(a.metric(m), b.metric(m))) is not None]
        same = sum(same_float(a.metrics.get(m), b.metrics.get(m)) for a, b in pairs)
        worst = max(gaps, default=None)
        out.append(
            Drift(
                m,
                len(pairs),
                same,
                statistics.median(g for g, _ in gaps) if gaps else None,
                worst[0] if worst else None,
                worst[1] if worst else None,
            )
        )
    return out


def look_at(recorded: list[CellRow], rerun: list[CellRow], sides: tuple[str, str], metric: str) -> list[str]:
    """The cells of a comparison's two sides that moved most on its metric (both sides ran them)."""
    pairs = [(a, b) for a, b in _pairs(recorded, rerun) if a.variant in sides]
    moved = sorted(
        ((g, a, b) for a, b in pairs if (g := _gap(a.metric(metric), b.metric(metric))) and g > 0),
        key=lambda t: -t[0],
    )
    if not pairs:
        return ["no cell ran on both sides (other seeds): compare the per-seed values of the two results.csv"]
    return [
        f"{a.name} {metric} {a.metric(metric):.4g} -> {b.metric(metric):.4g}"
        for _, a, b in moved[:SHOWN_CELLS]
    ]


def check_study(rec: Recorded, rerun_dir: Path, rerun_rows: list[CellRow]) -> StudyCheck:
    from ablate.sweeps.report.build import comparison_sides

    before = summary_of(rec.spec, rec.rows, rec.stored)
    after = summary_of(rec.rerun, rerun_rows, rec.stored)
    found = StudyCheck(
        experiment=rec.spec.name,
        metric=rec.spec.metric,
        recorded=rec.path,
        rerun=rerun_dir,
        recorded_numerics=sorted({r.numerics or "not recorded" for r in rec.rows if r.state == "complete"}),
        rerun_numerics=sorted({r.numerics or "not recorded" for r in rerun_rows if r.state == "complete"}),
        recorded_cells=sum(r.state == "complete" for r in rec.rows),
        rerun_cells=sum(r.state == "complete" for r in rerun_rows),
        drift=drift(rec.rows, rerun_rows, rec.metrics),
        identical_cells=sum(
            all(same_float(a.metrics.get(m), b.metrics.get(m)) for m in rec.metrics)
            for a, b in _pairs(rec.rows, rerun_rows)
        ),
    )
    for name, pair in comparison_sides(rec.spec).items():
        a, b = side(before, name), side(after, name)
        c = Conclusion(name, a, b, [])
        if not c.reproduced:
            c = dataclasses.replace(c, look_at=look_at(rec.rows, rerun_rows, pair, rec.spec.metric))
        found.conclusions.append(c)
    return found


# ---- rerunning ---------------------------------------------------------------------------------


def verify_conclusions(
    paths: list[str | Path], *, runs: str | Path, seeds: tuple[int, ...] | None = None, workers: int = 1
) -> list[StudyCheck]:
    """Rerun every study PATHs name in ``runs/<experiment>`` (resuming what is there), then compare
    each comparison's recorded and rerun conclusion (``check_study``)."""
    from ablate.sweeps.drivers.grid import sweep_pool
    from ablate.sweeps.drivers.options import RunOptions

    recorded = [read_recorded(p, seeds) for p in targets(paths)]
    names = [r.spec.name for r in recorded]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(
            f"two PATHs hold the same experiment ({', '.join(twice)}): verify them one at a time"
        )
    runs = Path(runs)
    for r in recorded:
        if (runs / r.spec.name).resolve() == r.path.resolve():
            raise ConfigError(
                f"--runs {runs}: the rerun of {r.path} would be written into it; choose another folder"
            )
        for variant in r.rerun.variants:
            r.rerun.cell_config(variant, r.rerun.seeds[0]).trainer.check_machine()
    pool = [(r.rerun, runs / r.spec.name) for r in recorded]
    sweep_pool(pool, title="verify --conclusions", options=RunOptions(workers=workers, use_wandb=False))
    out = []
    for r, (_, run_dir) in zip(recorded, pool, strict=True):
        text_rows, _ = read_rows(run_dir / "results.csv")
        out.append(check_study(r, run_dir, csv_reference(r.rerun, text_rows, run_dir / "results.csv").rows))
    return out


# ---- the CLI's lines ---------------------------------------------------------------------------


def _side_text(s: Side, d: int) -> str:
    from ablate.sweeps.report.text import conf_text, fmt, fmt_p

    if s.delta is None:
        return f"{s.decision:<19}  {s.n} seeds"
    ci = (
        f" [{fmt(s.ci[0] + 0.0, f'+.{d}f')}, {fmt(s.ci[1] + 0.0, f'+.{d}f')}] ({conf_text(s.confidence)})"
        if s.ci
        else ""
    )
    eq = "" if s.equivalent is None else ("; equivalent" if s.equivalent else "; equivalence not shown")
    return f"{s.decision:<19}  Δ {fmt(s.delta, f'+.{d}f')}{ci}, p Holm {fmt_p(s.p_holm)}, {s.n} seeds{eq}"


def format_studies(checks: list[StudyCheck]) -> list[str]:
    """What ``ablate verify --conclusions`` prints: per study, the numerics of both sides, a block
    per comparison, the cells' drift per metric; then the count of conclusions reproduced."""
    from ablate.sweeps.report.text import decimals

    lines: list[str] = []
    for s in checks:
        d = decimals(s.metric)
        lines.append(
            f"{s.experiment} ({s.metric}): recorded {s.recorded_cells} cells in {s.recorded}, "
            f"rerun {s.rerun_cells} here in {s.rerun}"
        )
        lines.append(f"  numerics recorded: {'; '.join(s.recorded_numerics)}")
        lines.append(f"  numerics here:     {'; '.join(s.rerun_numerics)}")
        for c in s.conclusions:
            lines.append(f"  {c.name}:")
            lines.append(f"    recorded  {_side_text(c.recorded, d)}")
            lines.append(f"    rerun     {_side_text(c.rerun, d)}")
            if c.reproduced:
                lines.append("    reproduced")
            else:
                lines.append(f"    NOT REPRODUCED: recorded {c.recorded.decides}, rerun {c.rerun.decides}")
                lines += [f"      look at {cell}" for cell in c.look_at]
        if s.drift and s.drift[0].cells:
            lines.append(
                f"  cell drift: {s.identical_cells} of {s.drift[0].cells} cells on both sides bit-identical "
                "in every metric; per metric, |recorded - rerun|:"
            )
            for dr in s.drift:
                gap = (
                    f"median {dr.median:.3g}, max {dr.largest:.3g} ({dr.worst})"
                    if dr.largest
                    else "every value equal"
                )
                lines.append(f"    {dr.metric}: {dr.identical} of {dr.cells} bit-identical; {gap}")
        else:
            lines.append("  cell drift: no cell ran on both sides (other seeds)")
    total = [c for s in checks for c in s.conclusions]
    failed = [f"{s.experiment} {c.name}" for s in checks for c in s.conclusions if not c.reproduced]
    lines.append(
        f"{len(total) - len(failed)} of {len(total)} conclusion(s) reproduced"
        + (f"; not: {', '.join(failed)}" if failed else "")
    )
    return lines


def exit_code(checks: list[StudyCheck]) -> int:
    """0 when every conclusion reproduced, 1 otherwise."""
    return 0 if checks and all(s.reproduced for s in checks) else 1
