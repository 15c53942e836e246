"""``ablate verify``'s check of the files a run vouches for: each against what it was written from.

The study (the Optuna storage, the ledger) is where every number starts; the files are views of it.
``check_files`` reads the reference, the study in the run folder's ``study.db`` (a committed result
prefix has none, nor a run folder whose study lives elsewhere: then results.csv is the reference,
which a note says), and compares:

- ``summary.json`` (a committed prefix: ``<prefix>.json``, the file the README tables come from)
  with the summary recomputed from the reference's rows by the report's own code
  (sweeps/report/build.py ``run_summary``, files.py ``cost``), every value of both, JSON round
  tripped, to the bit: the same code computes the same floats from the same rows;
- results.csv with the study's rows as the report writes them (files.py ``results_csv``), field by
  field as text;
- each complete cell's ``cells/<variant>-s<seed>/metrics.json`` (what the worker wrote) with the
  study's record of the cell: its metrics, outcome, steps, wall time, parameters and numerics.

A file that is absent is noted, not failed: it claims nothing. Every value that differs is a
``Mismatch`` naming its file, its key, the recorded value and the reference's.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.schema.machine import numerics_key
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.stats.rows import CellRow

# Keys of summary.json not recomputed: they describe the code and environment that wrote the file
# (the git commit, the package versions), not the cells, and verify runs under other code by design
# (a later checkout, another machine). The plugins' code is checked against its recorded hashes
# before anything runs (verify.check_plugins).
NOT_RECOMPUTED = ("versions", "provenance")
# What metrics.json shares with the study's record of a cell, besides the metrics (experiments/
# runner/cells.py TrialResult.to_dict; sweeps/drivers/worker.py record). ``steps`` is no column
# of results.csv, so it is compared only against the study.
CELL_FIELDS = ("diverged", "steps", "wall_s", "n_params", "numerics")
MISSING = object()  # a key one side lacks
SHOWN = 12  # mismatch lines printed per file; the rest are counted


@dataclass(frozen=True)
class Mismatch:
    """One value a file records that is not its reference's (``MISSING`` where a side has none)."""

    file: str  # relative to the run folder: summary.json, results.csv, cells/<cell>/metrics.json
    key: str  # dotted in summary.json; "<variant>/s<seed> <column>" in results.csv
    recorded: Any
    expected: Any
    against: str  # "recomputed", "study" or "results.csv"

    def line(self) -> str:
        got, want = _shown_pair(self.recorded, self.expected)
        return f"{self.file}: {self.key}: recorded {got}, {self.against} {want}"


@dataclass
class FilesCheck:
    """What ``check_files`` compared (``checked``, for the verdict), what differs, and notes."""

    reference: str  # "the study" or "results.csv"
    checked: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.mismatches

    def lines(self) -> list[str]:
        """A line per mismatch (SHOWN per file, then a count), the notes, and the verdict."""
        out: list[str] = []
        by_file: dict[str, list[Mismatch]] = {}
        for m in self.mismatches:
            by_file.setdefault(m.file, []).append(m)
        for name, ms in by_file.items():
            out += [m.line() for m in ms[:SHOWN]]
            if len(ms) > SHOWN:
                out.append(f"{name}: ... and {len(ms) - SHOWN} more value(s) that differ")
        out += self.notes
        what = ", ".join(self.checked) or "nothing"
        if self.equal:
            out.append(f"files agree with {self.reference}: {what}")
        else:
            files = len(by_file)
            out.append(
                f"{len(self.mismatches)} recorded value(s) in {files} file(s) differ from {self.reference} "
                f"(checked {what})"
            )
        return out


def same_float(recorded: float | None, now: float | None) -> bool:
    """Bit-identical, where NaN and no value are the same (results.csv writes NaN as empty)."""
    none_a = recorded is None or math.isnan(recorded)
    none_b = now is None or math.isnan(now)
    if none_a or none_b:
        return none_a and none_b
    return struct.pack("<d", recorded) == struct.pack("<d", now)


WIDTH = 80  # characters of a value a mismatch line shows


def _shown_pair(a: Any, b: Any) -> tuple[str, str]:
    """Both values as text, each cut to WIDTH around where they first differ (two long verdicts
    that differ late show that part, not their common start)."""
    ta, tb = (_text(v) for v in (a, b))
    if max(len(ta), len(tb)) <= WIDTH:
        return ta, tb
    first = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), min(len(ta), len(tb)))
    start = max(0, first - WIDTH // 4)
    return _cut(ta, start), _cut(tb, start)


def _text(value: Any) -> str:
    if value is MISSING:
        return "nothing"
    return value if isinstance(value, str) else json.dumps(value)


def _cut(text: str, start: int) -> str:
    if text == "nothing":
        return text
    part = text[start : start + WIDTH]
    return ("..." if start else "") + part + ("..." if start + WIDTH < len(text) else "")


# ---- the reference --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """The rows every file is compared with, and what only the study holds."""

    name: str  # "the study" or "results.csv"
    spec: ExperimentSpec
    rows: list[CellRow]
    splits: dict[str, Any] | None  # summary.json's splits (the trials' split records); None: read the file's
    attrs: dict[str, Any] | None  # the study's user attributes; None without a study
    steps: dict[tuple[str, int], Any]  # each complete cell's steps (the study only)


def study_reference(run_dir: Path) -> Reference:
    """The run folder's study: its rows as the report reads them (``collect_rows``)."""
    from ablate.sweeps.ledger.cells import collect_rows
    from ablate.sweeps.ledger.run_folder import open_run
    from ablate.sweeps.report.build import study_splits

    spec, store = open_run(run_dir)
    states = store.states()
    steps = {
        (c.variant, c.seed): c.trial.user_attrs.get("steps")
        for c in states.values()
        if c.state == "complete" and c.trial is not None
    }
    return Reference(
        "the study", spec, collect_rows(store), study_splits(store), dict(store.study.user_attrs), steps
    )


def csv_reference(spec: ExperimentSpec, text_rows: list[dict[str, str]], results: Path) -> Reference:
    """results.csv as the reference, where there is no study to read."""
    try:
        rows = [CellRow.from_csv(r) for r in text_rows]
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{results}: a row that is not a cell ({err})") from None
    return Reference("results.csv", spec, rows, None, None, {})


# ---- the checks -----------------------------------------------------------------------------


def check_files(
    spec: ExperimentSpec, spec_path: Path, results: Path, text_rows: list[dict[str, str]]
) -> FilesCheck:
    """Check summary.json, results.csv and the cells' metrics.json of the run of ``spec_path`` (a
    run folder's spec.json or a committed ``<prefix>.spec.json``) against its study, or against
    results.csv (``text_rows``, as verify.read_rows read them) where there is none."""
    run_folder = spec_path.name == "spec.json"
    root = spec_path.parent
    if run_folder and (root / "study.db").is_file():
        ref = study_reference(root)
    else:
        ref = csv_reference(spec, text_rows, results)
    check = FilesCheck(ref.name)
    if ref.attrs is None:
        check.notes.append(
            f"no study.db in {root}: its files are checked against results.csv, not the study"
            if run_folder
            else "a committed result (no study): its summary is checked against its results.csv"
        )
    else:
        _check_results_csv(check, results, text_rows, ref)
    _check_summary(check, summary_file(spec_path), root, ref, run_folder)
    if run_folder:
        _check_metrics(check, root, ref)
    return check


def summary_file(spec_path: Path) -> Path:
    """The summary beside a run folder's spec.json (summary.json) or a committed
    ``<prefix>.spec.json`` (``<prefix>.json``)."""
    if spec_path.name == "spec.json":
        return spec_path.with_name("summary.json")
    return spec_path.with_name(spec_path.name.removesuffix(".spec.json") + ".json")


def _check_results_csv(
    check: FilesCheck, results: Path, text_rows: list[dict[str, str]], ref: Reference
) -> None:
    """results.csv, field by field, against ``results_csv`` of the study's rows (the same code
    wrote it, so the same text)."""
    from ablate.sweeps.report.files import results_csv

    expected = {_row_key(r): r for r in csv.DictReader(io.StringIO(results_csv(ref.rows)))}
    recorded = {_row_key(r): r for r in text_rows}
    name = results.name
    for key in [*expected, *(k for k in recorded if k not in expected)]:  # the study's order
        cell = f"{key[0]}/s{key[1]}"
        if key not in recorded or key not in expected:
            has = (MISSING, "a row") if key not in recorded else ("a row", MISSING)
            check.mismatches.append(Mismatch(name, cell, *has, "study"))
            continue
        a, b = recorded[key], expected[key]
        for column in [*b, *(c for c in a if c not in b)]:
            got, want = a.get(column, MISSING), b.get(column, MISSING)
            if got != want:
                check.mismatches.append(Mismatch(name, f"{cell} {column}", got, want, "study"))
    check.checked.append(f"{name} ({len(recorded)} cells)")


def _row_key(row: dict[str, str]) -> tuple[str, int | str]:
    seed = row.get("seed") or ""
    return row.get("variant") or "", int(seed) if seed.lstrip("-").isdigit() else seed


def _check_summary(check: FilesCheck, path: Path, root: Path, ref: Reference, run_folder: bool) -> None:
    """summary.json against ``recompute_summary``: every value of both but NOT_RECOMPUTED."""
    shown = str(path.relative_to(root))
    if not path.is_file():
        check.notes.append(f"no {shown}: no statistics to check")
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        check.mismatches.append(Mismatch(shown, "(the file)", f"unreadable ({err})", "JSON", "recomputed"))
        return
    if not isinstance(stored, dict):
        check.mismatches.append(Mismatch(shown, "(the file)", stored, "an object", "recomputed"))
        return
    recomputed = recompute_summary(ref, stored)
    before = len(check.mismatches)
    compared = _compare(
        {k: v for k, v in stored.items() if k not in NOT_RECOMPUTED},
        {k: v for k, v in recomputed.items() if k not in NOT_RECOMPUTED},
        "",
        lambda key, got, want: check.mismatches.append(Mismatch(shown, key, got, want, "recomputed")),
    )
    check.checked.append(f"{shown} ({compared} values)")
    wrote = stored["provenance"].get("commit") if isinstance(stored.get("provenance"), dict) else None
    here = recomputed["provenance"]["commit"]
    if len(check.mismatches) > before and wrote != here:
        again = (
            f"`ablate report {root}` writes it again with this code"
            if run_folder
            else "`ablate report` of its run folder, then `python -m docs._gen.readme_tables --collect "
            "RUNS`, write it again with this code"
        )
        check.notes.append(
            f"{shown} was written by other code (commit {wrote}; here {here}): a change of the "
            f"report's code since then shows as values that differ; {again}"
        )


def recompute_summary(ref: Reference, stored: dict[str, Any]) -> dict[str, Any]:
    """summary.json as ``ablate report`` writes it from ``ref``'s rows, JSON round tripped.

    Two inputs are taken from the stored file, as they are choices or records, not statistics: the
    equivalence margins (``ablate report --margin M`` reads a study with a margin its spec lacks),
    and, without a study, the trials' split records and an adaptive study's rounds."""
    from ablate.sweeps.report.build import run_summary
    from ablate.sweeps.report.files import cost

    spec = _with_stored_margins(ref.spec, stored.get("equivalence"))
    splits = ref.splits if ref.splits is not None else stored.get("splits")
    if not isinstance(splits, dict) or not isinstance(splits.get("sets"), list):
        splits = {"sets": []}
    attrs = (
        ref.attrs
        if ref.attrs is not None
        else {
            "rounds": stored.get("rounds", []),
            "stop_reason": stored.get("stop_reason"),
        }
    )
    summary = run_summary(spec, ref.rows, splits, attrs)
    summary["cost"] = cost(ref.rows, list(summary["variants"]))  # as files.write_report adds it
    return json.loads(json.dumps(summary, allow_nan=False))


def _with_stored_margins(spec: ExperimentSpec, equivalence: Any) -> ExperimentSpec:
    """``spec`` with the margins the stored summary's equivalence tests used, when they are not the
    spec's: one margin for all (``report --margin M``) as ``default``."""
    if not isinstance(equivalence, dict):
        return spec
    margins = {
        name: e["margin"]
        for name, e in equivalence.items()
        if isinstance(e, dict)
        and isinstance(e.get("margin"), (int, float))
        and not isinstance(e["margin"], bool)
    }
    if not margins or all(spec.margin_for(n) == m for n, m in margins.items()):
        return spec
    given = {"default": next(iter(margins.values()))} if len(set(margins.values())) == 1 else margins
    try:
        return dataclasses.replace(spec, margin=given)
    except (ConfigError, ValueError, TypeError):
        return spec  # not a margin the spec takes: compared as the spec has it


def _compare(got: Any, want: Any, key: str, report: Any) -> int:
    """Report each leaf where ``got`` and ``want`` differ (type included: 1 is not 1.0 or True);
    returns how many leaves were compared."""
    if isinstance(got, dict) and isinstance(want, dict):
        n = 0
        for k in [*want, *(k for k in got if k not in want)]:
            sub = f"{key}.{k}" if key else str(k)
            if k not in got or k not in want:
                report(sub, got.get(k, MISSING), want.get(k, MISSING))
                n += 1
            else:
                n += _compare(got[k], want[k], sub, report)
        return n
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return sum(
            _compare(a, b, f"{key}[{i}]", report) for i, (a, b) in enumerate(zip(got, want, strict=True))
        )
    if type(got) is not type(want) or got != want:
        report(key, got, want)
    return 1


def _check_metrics(check: FilesCheck, root: Path, ref: Reference) -> None:
    """Each complete cell's metrics.json against the reference's record of that cell."""
    done = [r for r in ref.rows if r.state == "complete"]
    absent = []
    for row in done:
        shown = f"cells/{row.variant}-s{row.seed}/metrics.json"
        path = root / shown
        if not path.is_file():
            absent.append(row.name)
            continue
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            check.mismatches.append(Mismatch(shown, "(the file)", f"unreadable ({err})", "JSON", ref.name))
            continue
        if not isinstance(recorded, dict):
            check.mismatches.append(Mismatch(shown, "(the file)", recorded, "an object", ref.name))
            continue
        for key, got, want in _cell_diffs(recorded, row, ref.steps.get((row.variant, row.seed), MISSING)):
            check.mismatches.append(
                Mismatch(shown, key, got, want, "study" if ref.attrs is not None else ref.name)
            )
    if absent:
        named = ", ".join(absent[:5]) + (", ..." if len(absent) > 5 else "")
        check.notes.append(f"no metrics.json for {len(absent)} complete cell(s) ({named}): not checked")
    check.checked.append(f"metrics.json of {len(done) - len(absent)} cell(s)")


def _cell_diffs(recorded: dict[str, Any], row: CellRow, steps: Any) -> list[tuple[str, Any, Any]]:
    """(key, metrics.json's value, the reference's) for each that differs; ``steps`` MISSING (no
    study) is not compared."""
    metrics = sorted({*row.metrics, *(k for k in recorded if "/" in k)})  # study_views.is_metric
    out = [
        (m, recorded.get(m, MISSING), row.metrics.get(m, MISSING))
        for m in metrics
        if not _same_metric(recorded.get(m, MISSING), row.metrics.get(m, MISSING))
    ]
    numerics = recorded.get("numerics")
    have = {
        "diverged": recorded.get("diverged"),
        "steps": recorded.get("steps"),
        "wall_s": recorded.get("wall_s"),
        "n_params": recorded.get("n_params"),
        "numerics": numerics_key(numerics) if isinstance(numerics, dict) else numerics,
    }
    want = {
        "diverged": row.diverged,
        "steps": steps,
        "wall_s": row.wall_s,
        "n_params": row.n_params,
        "numerics": row.numerics,
    }
    return out + [
        (k, have[k], want[k])
        for k in CELL_FIELDS
        if want[k] is not MISSING and not _same_field(have[k], want[k])
    ]


def _same_metric(got: Any, want: Any) -> bool:
    """Numbers to the bit, where null, NaN and no value are the same (metrics.json writes a NaN
    as null, results.csv as an empty field)."""
    a, b = (None if v is MISSING else v for v in (got, want))
    if not all(v is None or _number(v) for v in (a, b)):
        return False
    return same_float(None if a is None else float(a), None if b is None else float(b))


def _same_field(a: Any, b: Any) -> bool:
    """Numbers to the bit (an int parameter count read back as 2450.0 is the same); else equal."""
    if _number(a) and _number(b):
        return same_float(float(a), float(b))
    return type(a) is type(b) and a == b


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)
