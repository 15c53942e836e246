"""What a run folder is, read with the one careful JSON reader (sweeps/ledger/run_folder.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.errors import ConfigError
from ablate.sweeps.ledger.run_folder import (
    RUN_MARKER,
    check_run_folder,
    mark_run_folder,
    read_json_object,
    recorded_run,
)


def test_a_marked_folder_is_its_kind_and_study(tmp_path: Path) -> None:
    mark_run_folder(tmp_path, "sweep", "tiny")
    assert recorded_run(tmp_path) == ("sweep", "tiny")
    check_run_folder(tmp_path, "sweep", "tiny")  # the same study may write again


def test_an_old_folder_is_read_from_its_spec_json(tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps({"name": "tiny"}))
    assert recorded_run(tmp_path) == ("sweep", "tiny")
    (tmp_path / "search.json").write_text("{}")
    assert recorded_run(tmp_path) == ("search", "tiny")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (RUN_MARKER, "{truncated"),
        (RUN_MARKER, json.dumps({"kind": "sweep"})),  # no study
        (RUN_MARKER, json.dumps(["sweep", "tiny"])),
        ("spec.json", json.dumps({"name": 3})),
        ("spec.json", "\udcff"),
    ],
)
def test_an_unreadable_marker_or_spec_is_an_unreadable_run_folder(
    tmp_path: Path, name: str, text: str
) -> None:
    (tmp_path / name).write_text(text, errors="surrogateescape")
    assert recorded_run(tmp_path) == ("unreadable", "?")
    with pytest.raises(ConfigError, match="is an unreadable run folder, not the sweep of 'tiny'"):
        check_run_folder(tmp_path, "sweep", "tiny")


def test_the_reader_names_the_file_and_what_it_should_be(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"is not a sweep run folder: no summary.json \(no such folder\)"):
        read_json_object(tmp_path / "absent" / "summary.json", "a sweep run folder", {})
    (tmp_path / "summary.json").write_text(json.dumps({"metric": 1}))
    with pytest.raises(ConfigError, match="missing or wrong metric, variants"):
        read_json_object(tmp_path / "summary.json", "x", {"metric": (str,), "variants": (dict,)})
