"""A finished sweep run again reuses its report: the run folder's report files are rebuilt only
when what they are made from changed.

``report.stamp.json`` (STAMP_FILE) records, when ``ablate sweep`` writes the report, the key of
everything the report is made from (``report_key``: the study's trials and attributes, the spec,
the run folder's spec.json and heatmaps, the storage, the code's commit, versions and source)
and the SHA-256 of every report file it wrote. A rerun whose key is the same and whose files all
still hold those bytes prints the stored summary.json and writes nothing; any difference (a
cell's result, a changed spec or plugin, another commit or edited code, a report file missing,
edited or rewritten by ``ablate report --margin``) rebuilds the report as before (sweeps/report/
build.py ``report``, every file written atomically), then the stamp, last. Content, never
modification times, decides.

The W&B summary run is logged again only when its report or its target (project, mode, entity,
run id) changed since it was logged: the stamp's ``wandb`` record.

This module imports neither matplotlib nor the report's writers unless a rebuild needs them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ablate.experiments.specs.spec import ExperimentSpec
from ablate.files import atomic_write
from ablate.sweeps.ledger.cells import CellStore
from ablate.sweeps.ledger.secrets import shown
from ablate.sweeps.report.provenance import ROOT, provenance

STAMP_FILE = "report.stamp.json"
STAMP_VERSION = 1
# The package folders whose code makes a report (its statistics, texts, files and the rows read
# from the study); with the package's top-level modules. Their source is part of the key, so an
# edit in a checkout (the commit still "<sha>-dirty") rebuilds the report.
CODE_FOLDERS = ("sweeps", "experiments", "datamodules")
# Every file ``report`` may write into the run folder (build.py, files.py write_report and
# study_views.publish_report); those present after a build are stamped.
REPORT_FILES = (
    "summary.json",
    "results.csv",
    "report.md",
    "report.html",
    "differences.png",
    "curves.png",
    "metric.png",
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def code_hash(root: Path = ROOT) -> str:
    """SHA-256 over the source of the package's report-making code (CODE_FOLDERS, top-level
    modules), by relative path."""
    files = sorted([*root.glob("*.py"), *(p for d in CODE_FOLDERS for p in (root / d).rglob("*.py"))])
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def folder_inputs(run_dir: Path) -> dict[str, str]:
    """The run folder's files a report reads (spec.json, the heatmaps' heads.json and layer
    PNGs): relative path -> SHA-256."""
    paths = [run_dir / "spec.json", *run_dir.glob("heatmaps/*/seed*/heads.json")]
    paths += run_dir.glob("heatmaps/*/seed*/layer*.png")
    return {p.relative_to(run_dir).as_posix(): _sha(p.read_bytes()) for p in sorted(paths) if p.is_file()}


def study_content(store: CellStore) -> dict[str, Any]:
    """Every trial of the study (number, state, values, parameters, attributes) and the study's
    attributes: all a report reads from the study."""
    trials = [
        {
            "number": t.number,
            "state": t.state.name,
            "values": t.values,
            "params": t.params,
            "user_attrs": t.user_attrs,
        }
        for t in store.study.get_trials(deepcopy=False)
    ]
    return {"trials": trials, "attrs": store.study.user_attrs}


def report_key(spec: ExperimentSpec, store: CellStore, run_dir: Path, url: str) -> str:
    """The key of everything ``report(spec, store, run_dir)`` is made from (see the module)."""
    payload = {
        "version": STAMP_VERSION,
        "spec": spec.to_dict(),
        "identity": spec.identity(),
        "plugins": spec.plugin_records(),
        "study": study_content(store),
        "folder": folder_inputs(run_dir),
        "storage": shown(url),  # another study (another --storage): its note and artifacts too
        "provenance": provenance(),
        "code": code_hash(),
    }
    return _sha(json.dumps(payload, sort_keys=True, default=str).encode())


def read_stamp(run_dir: Path) -> dict[str, Any] | None:
    """The run folder's stamp, or None (none, unreadable, not an object of this version)."""
    try:
        stamp = json.loads((run_dir / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    ok = isinstance(stamp, dict) and stamp.get("version") == STAMP_VERSION
    return stamp if ok and isinstance(stamp.get("files"), dict) else None


def stored_summary(run_dir: Path, key: str) -> dict[str, Any] | None:
    """The stored summary.json when the stamp holds ``key`` and every stamped file is there with
    the bytes it had; else None (the report must be rebuilt)."""
    stamp = read_stamp(run_dir)
    if stamp is None or stamp.get("key") != key or "summary.json" not in stamp["files"]:
        return None
    for name, digest in stamp["files"].items():
        try:
            if _sha((run_dir / name).read_bytes()) != digest:
                return None
        except OSError:
            return None
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return summary if isinstance(summary, dict) else None


def stamp_files(run_dir: Path) -> dict[str, str]:
    """The report files now in ``run_dir``: name -> SHA-256."""
    return {n: _sha((run_dir / n).read_bytes()) for n in REPORT_FILES if (run_dir / n).is_file()}


def write_stamp(run_dir: Path, key: str, files: dict[str, str], wandb: dict[str, Any] | None = None) -> None:
    """Stamp ``files`` (``stamp_files``) as the report of ``key``, with the W&B record, if any."""
    stamp: dict[str, Any] = {"version": STAMP_VERSION, "key": key, "files": files}
    if wandb is not None:
        stamp["wandb"] = wandb
    atomic_write(run_dir / STAMP_FILE, json.dumps(stamp, indent=1, sort_keys=True) + "\n")


def current_report(
    spec: ExperimentSpec, store: CellStore, run_dir: Path, url: str
) -> tuple[dict[str, Any], str, bool]:
    """(summary, key, rebuilt): the stored report when it is current, else ``report`` written
    again and stamped (its W&B record dropped: the summary run shows the old report)."""
    key = report_key(spec, store, run_dir, url)
    if (summary := stored_summary(run_dir, key)) is not None:
        return summary, key, False
    from ablate.sweeps.report.build import report

    (run_dir / STAMP_FILE).unlink(missing_ok=True)  # a crash mid-build leaves no stale stamp
    summary = report(spec, store, run_dir)
    write_stamp(run_dir, key, stamp_files(run_dir))
    return summary, key, True


def log_summary_once(run_dir: Path, key: str, target: dict[str, Any], log: Callable[[], Any]) -> bool:
    """Call ``log`` (the W&B summary run) unless the stamp says it was logged for the report
    ``key`` to ``target``; record it after. Whether it was called."""
    record = {"key": key, **target}
    stamp = read_stamp(run_dir)
    if stamp is not None and stamp.get("key") == key and stamp.get("wandb") == record:
        return False
    log()
    if stamp is not None and stamp.get("key") == key:  # the report is still the one stamped
        write_stamp(run_dir, key, stamp["files"], record)
    return True
