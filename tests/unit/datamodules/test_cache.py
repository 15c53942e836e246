"""The data cache is keyed by content (datamodules/datamodule.py ``cache_key``, sources.py
``fingerprint``): a local file edited in place with its size and timestamp kept is other data;
each file is hashed once per process, streamed."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from ablate.datamodules import ClassificationDataModule, sources
from ablate.datamodules.config import DataConfig
from ablate.datamodules.datamodule import cache_key


def rows(n: int, first: int = 0, flip: bool = False) -> str:
    """``n`` rows of distinct texts; ``flip`` swaps every label (same size, same texts)."""
    lines = (f"w{i} film number {i},{(i % 2) ^ flip}\n" for i in range(first, first + n))
    return "sentence,label\n" + "".join(lines)


def folder(tmp_path: Path) -> Path:
    d = tmp_path / "d"
    d.mkdir()
    (d / "train.csv").write_text(rows(60))
    (d / "test.csv").write_text(rows(20, first=1000))
    return d


def text_cfg(tmp_path: Path, source: Path) -> DataConfig:
    return DataConfig(task="text", source=str(source), cache_dir=str(tmp_path / "cache"), val_fraction=0.1)


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new ``ablate`` process starts from: no file hashed yet."""
    monkeypatch.setattr(sources, "_hashes", {})


def test_a_file_edited_with_its_size_and_mtime_kept_is_read_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: every label of test.csv flipped (same size), its timestamp put back as
    ``touch -r`` does; the next run must train and test on the file as it is now, also through
    ``datasets``' own cache (keyed by path and mtime)."""
    d = folder(tmp_path)
    cfg = text_cfg(tmp_path, d)
    before = ClassificationDataModule(cfg)
    before.setup()
    old, old_path = before.splits["test"]["label"], before.cache_path
    test_csv = d / "test.csv"
    st = test_csv.stat()
    test_csv.write_text(rows(20, first=1000, flip=True))
    os.utime(test_csv, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (test_csv.stat().st_size, test_csv.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    new_process(monkeypatch)
    after = ClassificationDataModule(cfg)
    after.setup()
    assert after.cache_path != old_path
    assert after.splits["test"]["label"] == [1 - y for y in old]
    assert after.splits["train"]["input_ids"] == before.splits["train"]["input_ids"]  # same content


def test_the_same_content_keeps_its_cache_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new timestamp on the same bytes (a fresh checkout, a copy) is the same data: same key."""
    d = folder(tmp_path)
    cfg = text_cfg(tmp_path, d)
    key = cache_key(cfg)
    os.utime(d / "train.csv", ns=(1, 10**18))
    new_process(monkeypatch)
    assert cache_key(cfg) == key
    (d / "train.csv").write_text(rows(60, first=1))  # same size, other text
    assert cache_key(cfg) != key


def test_a_file_is_hashed_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The study's data_sources and the cache key read the same hash; the file is read once."""
    d = folder(tmp_path)
    new_process(monkeypatch)
    reads: list[str] = []
    real = hashlib.file_digest

    def counted(fh: object, digest: str) -> object:
        reads.append(fh.name)  # type: ignore[attr-defined]
        return real(fh, digest)  # type: ignore[arg-type]

    monkeypatch.setattr(sources.hashlib, "file_digest", counted)
    hashes = sources.content_hashes(str(d))
    dm = ClassificationDataModule(text_cfg(tmp_path, d))
    dm.setup()
    cache_key(dm.cfg)
    assert sorted(reads) == sorted(hashes) == [str(d / "test.csv"), str(d / "train.csv")]
    assert hashes[str(d / "test.csv")] == hashlib.sha256((d / "test.csv").read_bytes()).hexdigest()


def test_hashing_a_large_file_is_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 64 MiB file costs a bounded buffer, not its size (a 1 GB file: the same few hundred KiB)."""
    big = tmp_path / "big.csv"
    big.write_text("sentence,label\n")
    os.truncate(big, 64 * 2**20)
    new_process(monkeypatch)
    tracemalloc.start()
    try:
        digest = sources.file_hash(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, f"hashing peaked at {peak / 2**20:.1f} MiB"
    h = hashlib.sha256(b"sentence,label\n")
    h.update(bytes(64 * 2**20 - len("sentence,label\n")))
    assert digest == h.hexdigest()


def test_an_unreadable_file_is_a_data_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = folder(tmp_path)
    new_process(monkeypatch)

    def denied(*args: object, **kw: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(sources.DataError, match=r"test\.csv: cannot be read \(Permission denied\)"):
        cache_key(text_cfg(tmp_path, d))
