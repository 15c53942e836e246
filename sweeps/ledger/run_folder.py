"""Reading a folder another command wrote: a run folder's spec.json and study, a summary.json.

``report``, ``power``, ``aggregate``, ``compare`` and ``dashboard`` take folders by name; a
wrong one (missing, a file, a search folder, a JSON file that is empty, truncated or not ours)
is a ConfigError naming the file and what was expected, never a KeyError or JSONDecodeError.
Reading a study's results imports none of its plugins (``open_run``: a RecordedSpec), so that
nobody's code runs to read numbers and a folder reads the same where its plugins are absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optuna.storages import BaseStorage

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec, spec_from_resolved
from ablate.files import atomic_write
from ablate.sweeps.ledger.cells import CellStore
from ablate.sweeps.ledger.storage import default_storage, open_storage, retry_db, storage_where

NONE = type(None)
# The fields of ExperimentSpec.to_dict() that spec_from_resolved reads, and their JSON types.
SPEC_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "base": (dict,),
    "variants": (dict,),
    "seeds": (list,),
    "heatmap_seeds": (list,),
    "metric": (str,),
    "direction": (str,),
    "extra_metrics": (list, NONE),
    "extra_seeds": (dict, NONE),
    "base_overrides": (dict, NONE),
    "search": (dict, NONE),
    "adaptive": (dict, NONE),
    "seed_factors": (dict, NONE),
    "tuned": (dict, NONE),
    "plugin_sources": (dict, NONE),
    "data_sources": (dict, NONE),
}
OPTIONAL = {k for k, types in SPEC_FIELDS.items() if NONE in types}
SUMMARY_FIELDS: dict[str, tuple[type, ...]] = {"variants": (dict,), "metric": (str,), "direction": (str,)}


def read_json_object(path: Path, what: str, fields: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """The JSON object in ``path``, with ``fields`` of the given types (a key whose types include
    None may be absent); else a ConfigError naming the file. ``what`` names the folder it belongs to."""
    folder = path.parent
    if not path.is_file():
        why = "no such folder" if not folder.exists() else "not a folder" if not folder.is_dir() else ""
        raise ConfigError(f"{folder} is not {what}: no {path.name}" + (f" ({why})" if why else ""))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} is not valid JSON ({err}); it is not the {path.name} of {what}") from None
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a JSON {type(data).__name__}, not the {path.name} of {what}")
    bad = [
        key
        for key, types in fields.items()
        if not isinstance(data.get(key), types) and not (key not in data and NONE in types)
    ]
    if bad:
        raise ConfigError(
            f"{path} is not the {path.name} of {what}: missing or wrong {', '.join(bad)} "
            f"(expected {', '.join(f'{k}: {types_text(fields[k])}' for k in bad)})"
        )
    return data


def types_text(types: tuple[type, ...]) -> str:
    names = {dict: "object", list: "list", str: "string", NONE: "null"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def read_run_spec(run_dir: Path, *, reading: bool | None = None) -> ExperimentSpec:
    """The resolved spec a sweep wrote into ``run_dir/spec.json``: to train its cells (its plugins
    imported), or with ``reading`` (None: inside registry.reading()) to read its results, a
    RecordedSpec that imports none (experiments/specs/spec.py ``spec_from_resolved``)."""
    path = run_dir / "spec.json"
    raw = read_json_object(path, "a sweep run folder", SPEC_FIELDS)
    bad_variants = [v for v, ov in raw["variants"].items() if not isinstance(ov, dict)]
    seeds = [*raw["seeds"], *raw["heatmap_seeds"]]
    if bad_variants or sum(not ov for ov in raw["variants"].values()) != 1:
        raise ConfigError(f"{path}: variants must map names to overrides, exactly one of them empty")
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ConfigError(f"{path}: seeds and heatmap_seeds must be lists of integers")
    if raw["direction"] not in ("maximize", "minimize"):
        raise ConfigError(f"{path}: direction={raw['direction']!r}; expected 'maximize' or 'minimize'")
    # None stands for "not set" in to_dict(); spec_from_resolved reads a missing key the same way.
    return spec_from_resolved(
        {k: v for k, v in raw.items() if not (k in OPTIONAL and v is None)}, reading=reading
    )


def read_summary(run_dir: Path) -> dict[str, Any]:
    """A run folder's summary.json (written by the report)."""
    summary = read_json_object(run_dir / "summary.json", "a sweep run folder with a report", SUMMARY_FIELDS)
    if not all(isinstance(v, dict) for v in summary["variants"].values()):
        raise ConfigError(f"{run_dir / 'summary.json'}: variants must map names to statistics")
    return summary


def require_study(storage: BaseStorage, name: str, where: str, *, search_too: bool = False) -> list[str]:
    """The names of the studies in ``storage``; a ConfigError unless the sweep ``name`` is one of
    them (or, with ``search_too``, one of the ``<name>.search.<variant>`` studies)."""
    names = sorted(s.study_name for s in storage.get_all_studies())
    if name in names or (search_too and any(n.startswith(f"{name}.search.") for n in names)):
        return names
    hint = ""
    if any(n.startswith(f"{name}.search.") for n in names):
        hint = " (an `ablate search` folder: its results are in search.json; `ablate dashboard` shows it)"
    raise ConfigError(f"no study {name!r} in {where}; it holds: {', '.join(names) or 'no studies'}{hint}")


def study_storage(
    run_dir: Path, name: str, storage: str | None = None, *, search_too: bool = False
) -> BaseStorage:
    """The storage of a run folder's study ``name``: ``storage`` or the folder's study.db, which
    must exist and hold the study (with ``search_too``, a search folder's studies count)."""
    url = storage or default_storage(run_dir)
    if url == default_storage(run_dir) and not (run_dir / "study.db").is_file():
        raise ConfigError(f"no study.db in {run_dir}; pass --storage URL if the study lives elsewhere")
    rdb = open_storage(url)
    require_study(rdb, name, storage_where(rdb), search_too=search_too)
    return rdb


def open_run(run_dir: Path, storage: str | None = None) -> tuple[ExperimentSpec, CellStore]:
    """Reopen a sweep's run folder to read its results (``report``, ``power``, ``aggregate``, the
    dashboard): its spec as recorded, no plugin imported; its study must exist."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "Using an existing study" line
    spec = read_run_spec(run_dir, reading=True)
    rdb = study_storage(run_dir, spec.name, storage)
    return spec, retry_db(
        f"cannot open study {spec.name!r} in {storage_where(rdb)}", lambda: CellStore(spec, rdb)
    )


RUN_MARKER = "run.json"  # what a run folder is: {"kind": "sweep" | "search", "study": NAME}


def recorded_run(run_dir: Path) -> tuple[str, str] | None:
    """(kind, study name) of the run folder ``run_dir``, or None when it is not one. Folders made
    before the marker existed are read from spec.json (a finished search's folder has search.json)."""
    marker = run_dir / RUN_MARKER
    try:
        if marker.is_file():
            data = read_json_object(marker, "a run folder", {"kind": (str,), "study": (str,)})
            return data["kind"], data["study"]
        if (run_dir / "spec.json").is_file():
            name = read_json_object(run_dir / "spec.json", "a run folder", {"name": (str,)})["name"]
            return ("search" if (run_dir / "search.json").is_file() else "sweep"), name
    except (ConfigError, OSError):
        return ("unreadable", "?")
    if any(p.name == "study.db" or p.name.startswith(".study.db.") for p in run_dir.iterdir()):
        # Another driver is creating the study (its file is linked into place complete) or one
        # stopped before it wrote its spec: the study's identity decides.
        return ("study", "")
    return None


def check_run_folder(run_dir: Path, kind: str, study: str) -> None:
    """Before a sweep or search writes into ``run_dir``: it must be new, empty, or the run folder
    of this same kind and study; else a ConfigError (another study's folder is never written to,
    nor a folder of the user's that is not a run folder). ``mark_run_folder`` then marks it."""
    if run_dir.exists() and any(run_dir.iterdir()):
        found = recorded_run(run_dir)
        if found is None:
            raise ConfigError(
                f"{run_dir} exists, is not empty and is not a run folder (no {RUN_MARKER} or spec.json); "
                "choose another --runs folder, or another experiment name"
            )
        if found[0] != "study" and found != (kind, study):
            what = (
                f"the {found[0]} of {found[1]!r}" if found[0] != "unreadable" else "an unreadable run folder"
            )
            raise ConfigError(
                f"{run_dir} is {what}, not the {kind} of {study!r}; choose another --runs folder, or another "
                "experiment name (a spec named X-search would share the folder of X's search)"
            )


def mark_run_folder(run_dir: Path, kind: str, study: str) -> None:
    if not (run_dir / RUN_MARKER).is_file():
        atomic_write(run_dir / RUN_MARKER, json.dumps({"kind": kind, "study": study}) + "\n")
