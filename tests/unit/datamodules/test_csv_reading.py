"""Reading a CSV/TSV is bounded (datamodules/sources.py ``_csv_header``, ``_Lines``): a file that is
one huge line (a sparse file, an unclosed quote without line breaks) is refused after a bounded
read with the file, the line and the limit, not after reading the whole line into memory."""

from __future__ import annotations

import csv
import os
import tracemalloc
from pathlib import Path

import pytest

from ablate.datamodules import DataError, sources

HEADER = "sentence,label\n"


def sparse(path: Path, head: str, size: int = 64 * 2**20) -> Path:
    """``head``, then NUL bytes up to ``size`` (what ``truncate -s`` makes: no line break)."""
    path.write_text(head)
    os.truncate(path, size)
    return path


def refusal(path: Path, tmp_path: Path) -> tuple[str, int]:
    """The DataError reading ``path`` raises, and the peak of Python's allocations while reading."""
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as info:
            sources._load_file(path, str(tmp_path / "hf"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return str(info.value), peak


def test_a_64_mib_single_field_file_is_refused_from_a_bounded_read(tmp_path: Path) -> None:
    """The issue's sparse file at 1/16 of its size: refused at its second line, naming the file
    and the limit, having held a few MB of it (the whole line was 2.7 GB at 1 GiB)."""
    big = sparse(tmp_path / "big.csv", HEADER)
    message, peak = refusal(big, tmp_path)
    assert peak < 24 * 2**20, f"reading peaked at {peak / 2**20:.0f} MiB"
    assert message.startswith(f"{big} line 2: longer than 4,000,006 characters"), message
    assert "a line of 2 field(s)" in message and "at most 1,000,000 characters" in message


def test_a_header_without_a_line_break_is_refused_from_a_bounded_read(tmp_path: Path) -> None:
    big = sparse(tmp_path / "big.tsv", "sentence\tlabel")
    message, peak = refusal(big, tmp_path)
    assert peak < 16 * 2**20, f"reading peaked at {peak / 2**20:.0f} MiB"
    assert message.startswith(f"{big} line 1: longer than 1,000,000 characters, the most the header line")


def test_the_line_bound_accepts_every_row_the_field_limit_allows(tmp_path: Path) -> None:
    """The longest line a 2-column row can have: two fields of MAX_FIELD quotes, each quote written
    twice and the field quoted (4,000,006 characters with the line break) is read; one more
    character is refused by the bound."""
    quotes = '"' + '""' * sources.MAX_FIELD + '"'
    longest = f"{quotes},{quotes}\n"
    path = tmp_path / "wide.csv"
    path.write_text(HEADER + longest + "short,0\n")
    header, lines = sources._csv_header(path, ",", csv.QUOTE_MINIMAL)
    assert header == ["sentence", "label"] and lines == [2, 3] and len(longest) == 4_000_006
    path.write_text(HEADER + longest[:-1] + " \n" + "short,0\n")
    with pytest.raises(DataError, match="line 2: longer than 4,000,006 characters"):
        sources._csv_header(path, ",", csv.QUOTE_MINIMAL)
