"""``ablate verify PATH [--cells N] [--seed S]``: rerun a few finished cells here and check that
every metric comes out bit-identical to the one recorded.

PATH is a sweep run folder (``spec.json`` and ``results.csv``) or a committed result prefix
(``results/X/X-task``: ``X-task.spec.json`` and ``X-task.results.csv``). N complete
cells are drawn with ``numpy.random.default_rng(S)`` and each is trained again in this process
by ``run_cells``, as a sweep worker runs it (``spec.cell_config(variant, seed)``). A cell is equal
when every metric of its results.csv row is the same float to the bit (no value on both sides
counts as equal); otherwise its check lists each metric that moved. Floats agree only on the
same numerics (experiments/schema/machine.py), so each check also carries the numerics the cell
recorded (results.csv's ``numerics`` column; "not recorded" without one) and those of here.
Before anything is imported, every plugin the study recorded must have the code it ran with
(``check_plugins``): an edited one is exit 2 naming its file. The files the run vouches for are
checked too (verify_files.py): summary.json against the summary recomputed from the study's cells,
results.csv and each cell's metrics.json against the study; a value that differs is exit 1.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ablate.errors import ConfigError
from ablate.experiments.schema.machine import NOT_RECORDED, numerics_key, numerics_record
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.sweeps.drivers.verify_files import FilesCheck, check_files, same_float

NUMERICS_COLUMN = "numerics"  # results.csv: the cell's numerics_key (or its record as JSON)
PREFIX_SUFFIXES = (".spec.json", ".results.csv", ".json")

Diff = tuple[float | None, float | None]


@dataclass(frozen=True)
class CellCheck:
    """One cell rerun: ``diffs`` maps each metric that moved to (recorded, now); None is no value."""

    variant: str
    seed: int
    equal: bool
    diffs: dict[str, Diff]
    recorded_numerics: str  # the cell's numerics key, or "not recorded"
    local_numerics: str  # this process's, after the rerun
    metrics: int = 0  # how many metrics were compared

    @property
    def name(self) -> str:
        return f"{self.variant}/s{self.seed}"

    @property
    def worst(self) -> tuple[str, float] | None:
        """(metric, |recorded - now|) of the largest difference; inf where one side has no value."""
        if not self.diffs:
            return None
        return max(((m, _abs_diff(a, b)) for m, (a, b) in self.diffs.items()), key=lambda x: x[1])

    @property
    def numerics_match(self) -> bool | None:
        """Whether the recorded numerics are these; None when the cell recorded none."""
        if self.recorded_numerics == NOT_RECORDED:
            return None
        return self.recorded_numerics == self.local_numerics


@dataclass(frozen=True)
class Verification:
    """What ``ablate verify`` found: the cells rerun, and the files checked against the study."""

    cells: list[CellCheck]
    files: FilesCheck


def _abs_diff(a: float | None, b: float | None) -> float:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b)


# ---- reading PATH ----------------------------------------------------------------------


def locate(path: str | Path) -> tuple[Path, Path]:
    """(spec.json, results.csv) of a run folder or a committed result prefix; else a ConfigError
    that names what is missing."""
    path = Path(path)
    if path.is_dir() and (path / "spec.json").is_file():
        spec, results = path / "spec.json", path / "results.csv"
        if not results.is_file():
            raise ConfigError(
                f"{path} is a run folder without results.csv; write it with `ablate report {path}`"
            )
        return spec, results
    stem = path / path.name if path.is_dir() else path  # a folder of committed results: its own
    for suffix in PREFIX_SUFFIXES:
        if path.name.endswith(suffix):
            stem = path.with_name(path.name[: -len(suffix)])
            break
    spec, results = stem.with_name(stem.name + ".spec.json"), stem.with_name(stem.name + ".results.csv")
    if spec.is_file() and results.is_file():
        return spec, results
    if spec.is_file():
        raise ConfigError(f"{stem} is a committed result without {results.name}: no {results}")
    if path.is_dir() and (held := sorted(p.name[: -len(".spec.json")] for p in path.glob("*.spec.json"))):
        raise ConfigError(
            f"{path} is not a run folder (no spec.json) but holds committed results; give one of them "
            f"as the prefix: {', '.join(str(path / h) for h in held)}"
        )
    raise ConfigError(
        f"{path} is neither a run folder (no {path / 'spec.json'}) nor a committed result prefix "
        f"(no {spec}); give a sweep run folder or a prefix like "
        "results/remove-pe-single-head/remove-pe-single-head-lookup"
    )


def read_spec(spec_path: Path) -> ExperimentSpec:
    """The resolved spec in a run folder's spec.json or a committed ``<prefix>.spec.json``, to train
    its cells again: its plugins checked against the hashes it recorded (``check_plugins``), then
    imported."""
    from ablate.experiments.specs.spec import spec_from_resolved
    from ablate.sweeps.ledger.run_folder import OPTIONAL, SPEC_FIELDS, read_json_object, read_run_spec

    run_folder = spec_path.name == "spec.json"
    raw = read_json_object(
        spec_path, "a sweep run folder" if run_folder else "a committed result", SPEC_FIELDS
    )
    check_plugins(raw)
    if run_folder:
        return read_run_spec(spec_path.parent, reading=False)
    # A committed prefix: the same checks as read_run_spec, on <prefix>.spec.json.
    if sum(not ov for ov in raw["variants"].values() if isinstance(ov, dict)) != 1:
        raise ConfigError(f"{spec_path}: variants must map names to overrides, exactly one of them empty")
    try:
        return spec_from_resolved(
            {k: v for k, v in raw.items() if not (k in OPTIONAL and v is None)}, reading=False
        )
    except (KeyError, TypeError) as err:
        raise ConfigError(f"{spec_path} is not the spec.json of a sweep ({err!r})") from None


def check_plugins(raw: dict) -> None:
    """Every plugin a spec.json recorded (``plugin_sources``) must have the code its cells ran with,
    checked before anything imports it: else a ConfigError naming its file (plugins.check_unchanged),
    as a rerun with other code would say nothing about the recorded numbers."""
    from ablate.lit_modules.components import plugins

    entries = raw["base"].get("plugins")
    declared = [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
    for name, recorded in (raw.get("plugin_sources") or {}).items():
        plugins.check_unchanged(plugins.entry_of(name, declared) or name, recorded)


def read_rows(results: Path) -> tuple[list[dict[str, str]], list[str]]:
    """results.csv's rows as text, and its metric columns (``<stage>/<name>``)."""
    try:
        with results.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = list(reader.fieldnames or [])
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ConfigError(f"cannot read {results}: {err}") from None
    missing = [c for c in ("variant", "seed", "state") if c not in columns]
    if missing:
        raise ConfigError(f"{results} is not a results.csv: no column {', '.join(missing)}")
    metrics = [c for c in columns if "/" in c]  # study_views.is_metric: metrics are <stage>/<name>
    if not metrics:
        raise ConfigError(f"{results} has no metric columns (<stage>/<name>, e.g. test/acc)")
    return rows, metrics


def _value(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def recorded_numerics(row: dict[str, str]) -> str:
    """The cell's numerics key from its ``numerics`` field (a key, or a record as JSON)."""
    text = (row.get(NUMERICS_COLUMN) or "").strip()
    if not text:
        return NOT_RECORDED
    if text.startswith("{"):
        try:
            record = json.loads(text)
        except json.JSONDecodeError:
            return text
        return numerics_key(record) if isinstance(record, dict) else text
    return text


def complete_cells(spec: ExperimentSpec, rows: list[dict[str, str]], results: Path) -> list[dict[str, str]]:
    """The complete rows of cells the spec has, in results.csv's order."""
    cells = set(spec.cells())
    out = []
    for row in rows:
        try:
            key = (row["variant"], int(row["seed"]))
        except (TypeError, ValueError):
            raise ConfigError(f"{results}: seed={row.get('seed')!r} is not an integer") from None
        if row.get("state") == "complete" and key in cells:
            out.append(row)
    return out


# ---- verify ----------------------------------------------------------------------------


def check_cell(row: dict[str, str], metrics: list[str], now: dict[str, float], local: str) -> CellCheck:
    """Compare a results.csv row with a rerun's metrics (``now``)."""
    diffs: dict[str, Diff] = {}
    for m in metrics:
        recorded, value = _value(row.get(m)), now.get(m)
        if not same_float(recorded, value):
            diffs[m] = (recorded, value)
    return CellCheck(
        variant=row["variant"],
        seed=int(row["seed"]),
        equal=not diffs,
        diffs=diffs,
        recorded_numerics=recorded_numerics(row),
        local_numerics=local,
        metrics=len(metrics),
    )


def verify(path: str | Path, *, cells: int = 2, seed: int = 0, progress: bool = False) -> Verification:
    """Check PATH's files against its study (verify_files.check_files), then rerun ``cells``
    complete cells (drawn with ``default_rng(seed)``) and compare each with its results.csv row;
    one CellCheck per cell, in results.csv's order."""
    import numpy as np

    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise ConfigError(f"--cells {cells!r}: give a whole number of cells, 1 or more")
    spec_path, results = locate(path)
    spec = read_spec(spec_path)
    rows, metrics = read_rows(results)
    complete = complete_cells(spec, rows, results)
    if cells > len(complete):
        raise ConfigError(
            f"--cells {cells}: {results} has {len(complete)} complete cell(s) of {spec.name}; "
            f"choose --cells {len(complete)} or fewer" + (" (none to verify)" if not complete else "")
        )
    picked = sorted(np.random.default_rng(seed).choice(len(complete), size=cells, replace=False).tolist())
    configs = [spec.cell_config(complete[i]["variant"], int(complete[i]["seed"])) for i in picked]
    for cfg in configs:
        cfg.trainer.check_machine()  # before training anything: a GPU cell on a CPU machine
    files = check_files(spec, spec_path, results, rows)  # before training: seconds, not minutes

    from ablate.experiments.runner.cells import run_cells

    out = []
    for i, cfg in zip(picked, configs, strict=True):
        (result,) = run_cells(cfg, [cfg.seed], progress=progress)  # as sweeps/drivers/worker.py runs it
        local = numerics_key(numerics_record())  # after the run: its thread count
        out.append(check_cell(complete[i], metrics, result.metrics, local))
    return Verification(out, files)


# ---- the CLI's lines -------------------------------------------------------------------


def _num(x: float | None) -> str:
    return "no value" if x is None or math.isnan(x) else repr(x)


def format_checks(found: Verification) -> list[str]:
    """What ``ablate verify`` prints: a line per cell (and per metric that moved), the numerics,
    the cells' verdict, then the files' lines and verdict (FilesCheck.lines)."""
    return format_cells(found.cells) + found.files.lines()


def format_cells(checks: list[CellCheck]) -> list[str]:
    """A line per cell rerun (and per metric that moved), the numerics, and their verdict."""
    lines: list[str] = []
    for c in checks:
        if c.equal:
            lines.append(f"{c.name}: bit-identical ({c.metrics} metrics)")
        else:
            metric, gap = c.worst  # type: ignore[misc]
            lines.append(
                f"{c.name}: DIFFERS in {len(c.diffs)} of {c.metrics} metrics; "
                f"max |diff| {gap:.3g} in {metric}"
            )
            for m, (a, b) in c.diffs.items():
                lines.append(f"  {m}: recorded {_num(a)}, now {_num(b)}")
    recorded = sorted({c.recorded_numerics for c in checks})
    local = sorted({c.local_numerics for c in checks})
    lines.append(f"numerics recorded: {'; '.join(recorded) or NOT_RECORDED}")
    lines.append(f"numerics here:     {'; '.join(local)}")
    differ = [c for c in checks if not c.equal]
    if not differ:
        lines.append(f"all {len(checks)} cell(s) bit-identical")
    else:
        lines.append(f"{len(differ)} of {len(checks)} cell(s) differ")
        if any(c.numerics_match is False for c in differ):
            lines.append(
                "  the numerics differ: another CPU model, kernel ISA, library version or thread "
                "count changes the floats; rerun where the cells ran, or run the study pinned "
                "(trainer.cpu_isa, docs: one cell, one number)"
            )
        elif all(c.numerics_match for c in differ):
            lines.append("  with the same numerics: the code or the data changed since the cells ran")
    return lines


def exit_code(found: Verification) -> int:
    """0 when every cell is bit-identical and every file agrees with the study, 1 otherwise."""
    return 0 if all(c.equal for c in found.cells) and found.files.equal else 1
