"""Where text data comes from, read into validated ``RawSplit``s.

A source is a hub name (with an optional subset and revision), a local CSV/TSV/JSON/Parquet file, or
a folder: train/validation(dev)/test files, a ``DatasetDict.save_to_disk`` folder, or a copy of a hub
repository (Parquet shards such as ``train-00000-of-00001.parquet``, read by the same
``datasets.load_dataset`` call as the hub). Every error the user can fix is a ``DataError`` naming the
file and, where it applies, the row as the 1-based line number in the file (the header is line 1),
so a bad row can be found with an editor.
"""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import datasets
import huggingface_hub.utils
import numpy as np

from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError, user_path

EXTENSIONS = (".csv", ".tsv", ".json", ".jsonl", ".parquet")
SPLIT_NAMES = {"train": ("train",), "validation": ("validation", "dev", "valid"), "test": ("test",)}
# The longest text accepted, in characters. Python's csv module stops at 131,072 with a bare
# csv.Error; a field this long is nearly always an unclosed quote that swallowed the rest of the
# file, so every format refuses it with the line, instead of a traceback or hours of tokenizing.
MAX_FIELD = 1_000_000
# The hub's label for "no label" (GLUE's test splits): a split whose labels are all -1 is unlabelled.
UNLABELLED = -1
# A copy of a hub repository: its shards are named like train-00000-of-00001.parquet.
HUB_SHARD = "*-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].*"


class DataError(ConfigError):
    """A data file or data set the user can fix: missing, malformed, or with bad rows."""


@dataclass
class RawSplit:
    """One split as python lists; ``lines[i]`` locates row i in ``origin`` for error messages.
    ``labelled`` is False for a split whose labels are all -1 (then texts and labels are empty)."""

    texts: list[str]
    labels: list[int]
    lines: list[int]
    origin: str
    unit: str = "line"
    labelled: bool = True

    def __len__(self) -> int:
        return len(self.lines)

    def where(self, i: int) -> str:
        return f"{self.origin} {self.unit} {self.lines[i]}"

    def subset(self, idx: np.ndarray) -> RawSplit:
        pick = idx.tolist()
        return RawSplit(
            [self.texts[i] for i in pick],
            [self.labels[i] for i in pick],
            [self.lines[i] for i in pick],
            self.origin,
            self.unit,
        )


@contextmanager
def quiet_datasets() -> Iterator[None]:
    """``datasets`` and the hub client write progress bars and log lines ("Generating train split",
    "Retrying in 8s") to stderr, where they bury a sweep's progress bar and precede an ``error:``
    line. Off while data loads, then restored; HF_DATASETS_DISABLE_PROGRESS_BARS=0 still wins."""
    bars_were_off = datasets.utils.are_progress_bars_disabled()
    hub_bars_were_off = huggingface_hub.utils.are_progress_bars_disabled()
    levels = (datasets.logging.get_verbosity(), huggingface_hub.utils.logging.get_verbosity())
    if not bars_were_off and datasets.config.HF_DATASETS_DISABLE_PROGRESS_BARS is not False:
        datasets.disable_progress_bars()
    huggingface_hub.utils.disable_progress_bars()
    # CRITICAL, not ERROR: a loader logs "Failed to load JSON ..." and then raises; the DataError
    # that follows carries the same cause.
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    huggingface_hub.utils.logging.set_verbosity(huggingface_hub.utils.logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(levels[0])
        huggingface_hub.utils.logging.set_verbosity(levels[1])
        if not hub_bars_were_off:
            huggingface_hub.utils.enable_progress_bars()
        if not bars_were_off and datasets.utils.are_progress_bars_disabled():
            datasets.enable_progress_bars()


# The repository root: relative sources in the shipped configs (../shared/data/sst2)
# also work when ablate runs from another folder.
REPO_ROOT = Path(__file__).resolve().parents[1]


def resolve(source: str) -> Path | None:
    """The local file or folder ``source`` names (relative to the cwd, else to the repository
    root), or None for a hub name."""
    path = user_path(source, "data.source")
    for candidate in (path, REPO_ROOT / path):
        if candidate.exists():
            found = candidate.resolve()
            if not (found.is_file() or found.is_dir()):  # /dev/null, a FIFO, a socket
                raise DataError(f"data.source={source!r}: {found} is neither a regular file nor a folder")
            return found
    if source.startswith((".", "/", "~")) or source.lower().endswith(EXTENSIONS):
        raise DataError(
            f"data.source: file or folder not found: {path.resolve()}; give a data file "
            f"({', '.join(EXTENSIONS)}) or a folder holding train, test and optionally dev (or "
            "validation) files, e.g. train.tsv, dev.tsv, test.tsv"
        )
    return None


def _split_file_candidates(folder: Path, split: str) -> list[Path]:
    return [
        folder / f"{s}{e}" for s in SPLIT_NAMES[split] for e in EXTENSIONS if (folder / f"{s}{e}").is_file()
    ]


def folder_kind(folder: Path) -> str:
    """``splits`` (train.csv, dev.tsv, ...), ``saved`` (save_to_disk) or ``hub`` (a hub repository's
    layout); anything else is an error listing what the folder holds."""
    if (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file():
        return "saved"
    if any(_split_file_candidates(folder, split) for split in SPLIT_NAMES):
        return "splits"
    if next(folder.rglob(HUB_SHARD), None) is not None:
        return "hub"
    held = sorted(p.name + "/" * p.is_dir() for p in folder.iterdir())
    shown = ", ".join(held[:12]) + (f", ... ({len(held)} entries)" if len(held) > 12 else "")
    raise DataError(
        f"{folder}: no train file; expected train.{'|'.join(e[1:] for e in EXTENSIONS)} (with test.* and "
        f"optionally validation|dev|valid.*), a DatasetDict saved with save_to_disk, or hub-layout shards "
        f"(train-00000-of-00001.parquet); the folder holds: {shown or 'nothing'}"
    )


def split_files(folder: Path) -> dict[str, Path]:
    """train.*, validation|dev|valid.* (optional) and test.* in ``folder``."""
    found: dict[str, Path] = {}
    for split, stems in SPLIT_NAMES.items():
        hits = _split_file_candidates(folder, split)
        if len(hits) > 1:
            raise DataError(f"{folder}: several {split} files {[h.name for h in hits]}; keep one")
        if hits:
            found[split] = hits[0]
        elif split != "validation":
            want = "|".join(stems) + "." + "|".join(e[1:] for e in EXTENSIONS)
            raise DataError(f"{folder}: no {split} file; expected {want}")
    return found


def local_files(source: str) -> list[Path] | None:
    """The files a local ``data.source`` reads (None for a hub name)."""
    path = resolve(source)
    if path is None:
        return None
    if path.is_file():
        return [path]
    if folder_kind(path) == "splits":
        return sorted(split_files(path).values())
    return _folder_files(path)


def _folder_files(folder: Path) -> list[Path]:
    """Every file under ``folder``: what a saved or hub-layout data set reads."""
    return sorted(p for p in folder.rglob("*") if p.is_file())


def fingerprint(source: str) -> list:
    """What the cache key needs to notice a changed input: each local file's path and the SHA-256
    of its content (a hub name as it is: data.subset and data.revision key the cache as config
    fields). The content, not the size and mtime: a file edited in place and given its old
    timestamp back (``touch -r``, a copy that keeps timestamps) is other data. The path stays in
    the key because the cached split record names the file."""
    files = local_files(source)
    if files is None:
        return [source]
    return [[str(f), file_hash(f)] for f in files]


# (path, size, mtime, ctime, inode, device) -> SHA-256, this process: each file is read once per
# process, by the study's identity and the cache key alike. ctime is in the key because every
# write moves it, also one whose mtime was put back.
_hashes: dict[tuple[str, int, int, int, int, int], str] = {}


def file_hash(path: Path) -> str:
    """The SHA-256 of ``path``'s content, streamed (hashlib.file_digest reads 256 KiB at a time,
    so a 1 GB file costs no more memory than a small one), once per process and file version."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    if key not in _hashes:
        try:
            with path.open("rb") as fh:
                _hashes[key] = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError as e:  # unreadable: permissions, a file that vanished, an I/O error
            raise DataError(f"{path}: cannot be read ({e.strerror or e})") from e
    return _hashes[key]


def content_hashes(source: str) -> dict[str, str]:
    """What a study's identity needs to notice changed data: the SHA-256 of each local file the
    source reads, by path (empty for a hub name, which data.revision pins)."""
    return {str(f): file_hash(f) for f in local_files(source) or []}


def _local_cache(hf_cache: str, files: list[Path]) -> str:
    """``datasets``' own cache folder for local files, one per content: ``load_dataset`` keys
    local files by path and mtime only, so an edit that keeps both would read the old Arrow copy."""
    digest = hashlib.sha256("".join(file_hash(f) for f in files).encode()).hexdigest()[:16]
    return str(Path(hf_cache) / f"local-{digest}")


def read_source(cfg: DataConfig, hf_cache: str) -> dict[str, RawSplit]:
    """The splits ``cfg.source`` holds, validated row by row: a single file (or a saved Dataset)
    gives "train" only; folders and hub data sets give train, test and, if they have it, validation."""
    assert cfg.source is not None
    path = resolve(cfg.source)
    if path is None:
        return _hub_splits(_load_hub(cfg, hf_cache), cfg, _hub_name(cfg))
    kind = "file" if path.is_file() else folder_kind(path)
    _check_local_options(cfg, path, kind)
    if kind == "file":
        return {"train": read_file(path, cfg, hf_cache)}
    if kind == "splits":
        return {split: read_file(f, cfg, hf_cache) for split, f in split_files(path).items()}
    if kind == "saved":
        return _hub_splits(_load_saved(path), cfg, f"saved data set {path}")
    try:  # a local copy of a hub repository: the hub's own loader, subset included
        hf_local = _local_cache(hf_cache, _folder_files(path))
        dd = datasets.load_dataset(str(path), cfg.subset, cache_dir=hf_local)
    except (OSError, ValueError, datasets.exceptions.DatasetGenerationError) as e:
        raise DataError(f"{path}: cannot be read as a hub-layout data set: {e.__cause__ or e}") from e
    return _hub_splits(dd, cfg, f"{path}" + (f" subset {cfg.subset!r}" if cfg.subset else ""))


def _check_local_options(cfg: DataConfig, path: Path, kind: str) -> None:
    what = "file" if kind == "file" else "folder"
    if cfg.revision is not None:
        raise DataError(
            f"data.revision={cfg.revision!r} applies to hub data sets; data.source is the local {what} {path}"
        )
    if cfg.subset is not None and kind != "hub":
        raise DataError(
            f"data.subset={cfg.subset!r} applies to hub data sets and folders in the hub's layout "
            f"(Parquet shards and a README with configs); data.source is the local {what} {path}"
        )


def _hub_name(cfg: DataConfig) -> str:
    subset = f" subset {cfg.subset!r}" if cfg.subset else ""
    revision = f" revision {cfg.revision!r}" if cfg.revision else ""
    return f"hub data set {cfg.source!r}{subset}{revision}"


def _load_hub(cfg: DataConfig, hf_cache: str) -> datasets.DatasetDict:
    # Hub names cannot be tested offline; kept deliberately thin.
    try:
        return datasets.load_dataset(cfg.source, cfg.subset, revision=cfg.revision, cache_dir=hf_cache)
    except Exception as e:  # network, unknown name, subset or revision, auth: all one fixable error
        raise DataError(
            f"data.source={cfg.source!r}: could not load it from the Hugging Face hub: {e}{_local_hint(cfg)}"
        ) from e


def _local_hint(cfg: DataConfig) -> str:
    """For a hub data set that stands in for missing local data (``data.hub_fallback``, used when
    the config's folder does not exist here, e.g. the shipped SST-2 config in an installed
    package): how to point the config at a copy of the data instead."""
    if cfg.hub_fallback is None or cfg.source != cfg.hub_fallback:
        return ""
    return (
        f"; it stands in for the config's local data.source, which does not exist here (the warning "
        f"above names it). To use your copy of the data, add data.source=/path/to/your/copy to the "
        f"command: a folder holding train.tsv, dev.tsv and test.tsv (tab-separated, a header line "
        f"naming the columns {cfg.label_column} and {cfg.text_column}; .csv, .json, .jsonl or "
        f".parquet files work too, and dev may be missing)"
    )


def _load_saved(path: Path) -> datasets.DatasetDict | datasets.Dataset:
    try:
        return datasets.load_from_disk(str(path))
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot be read as a data set saved with save_to_disk: {e}") from e


def _hub_splits(
    dd: datasets.DatasetDict | datasets.Dataset, cfg: DataConfig, name: str
) -> dict[str, RawSplit]:
    """train / validation / test of a DatasetDict (validation also as dev or valid); other splits
    are ignored. A lone Dataset is like a single file: train only."""
    if isinstance(dd, datasets.Dataset):
        return {"train": to_raw(dd, cfg, name, 1, "row")}
    out = {}
    for split, names in SPLIT_NAMES.items():
        found = next((n for n in names if n in dd), None)
        if found is not None:
            out[split] = to_raw(dd[found], cfg, f"{name} split {found!r}", 1, "row")
    for split in ("train", "test"):
        if split not in out:
            raise DataError(f"{name} has no {split} split; it has {list(dd)}")
    return out


def read_file(path: Path, cfg: DataConfig, hf_cache: str) -> RawSplit:
    ext = path.suffix.lower()
    first, unit = {".jsonl": (1, "line")}.get(ext, (1, "record"))
    ds, lines = _load_file(path, _local_cache(hf_cache, [path]))
    return to_raw(ds, cfg, str(path), lines or first, "line" if lines else unit)


def _load_file(path: Path, hf_cache: str) -> tuple[datasets.Dataset, list[int] | None]:
    """The file as a Dataset, and for CSV/TSV the line each row starts on (a quoted field may hold
    line breaks, so row i is not always line i + 2)."""
    ext = path.suffix.lower()
    if ext not in EXTENSIONS:
        raise DataError(f"{path}: unsupported file type {ext!r}; use one of {', '.join(EXTENSIONS)}")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: is empty (0 bytes); expected a header or records naming the columns")
    try:
        if ext in (".csv", ".tsv"):
            delimiter, quoting = ("\t", csv.QUOTE_NONE) if ext == ".tsv" else (",", csv.QUOTE_MINIMAL)
            header, lines = _csv_header(path, delimiter, quoting)
            # All columns as strings, no NA parsing ("null" is a valid sentence) and no skipped blank
            # lines, so row i is line i + 2 and labels are parsed (and reported) here, not by pandas.
            # utf-8-sig: a byte-order mark (Excel writes one) is not part of the first column's name.
            features = datasets.Features({c: datasets.Value("string") for c in header})
            return datasets.load_dataset(
                "csv",
                data_files=str(path),
                split="train",
                cache_dir=hf_cache,
                delimiter=delimiter,
                quoting=quoting,
                na_filter=False,
                skip_blank_lines=False,
                features=features,
                encoding="utf-8-sig",
            ), lines
        kind = "parquet" if ext == ".parquet" else "json"
        return datasets.load_dataset(kind, data_files=str(path), split="train", cache_dir=hf_cache), None
    except DataError:
        raise
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: is not UTF-8 text ({e.reason}); save it as UTF-8") from e
    except (OSError, ValueError, datasets.exceptions.DatasetGenerationError) as e:
        cause = e.__cause__ or e
        if "corresponds to no data" in str(cause):  # datasets' words for a file without records
            raise DataError(f"{path}: has no rows") from e
        raise DataError(f"{path}: cannot be read as {ext[1:]}: {cause}") from e


def _csv_header(path: Path, delimiter: str, quoting: int) -> tuple[list[str], list[int]]:
    """The header, after checking every row has as many fields as it: pandas would silently turn
    extra leading fields into an index (an unquoted comma in a sentence shifts the columns); and
    the line each row starts on. Lines are read with a bound (``_Lines``), so a file that is one
    huge line (a sparse file, an unclosed quote without line breaks) is refused after a few MB."""
    limit = csv.field_size_limit(MAX_FIELD)  # process-wide: restored below
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            lines_in = _Lines(f, path, MAX_FIELD, "the header line")
            reader = csv.reader(lines_in, delimiter=delimiter, quoting=quoting)
            try:
                header = next(reader, [])
                _check_header(path, header)
                lines_in.bound(len(header))
                start, lines = reader.line_num + 1, []
                for row in reader:
                    if row and len(row) != len(header):
                        raise DataError(
                            f"{path} line {start}: {len(row)} field(s) where the header has {len(header)} "
                            f"({', '.join(header)}); check the delimiter and quoting"
                        )
                    lines.append(start)
                    start = reader.line_num + 1
            except csv.Error as e:  # a field over MAX_FIELD, a NUL byte, a stray quote
                raise DataError(
                    f"{path} line {reader.line_num}: {e}; a field holds at most {MAX_FIELD:,} characters "
                    "(an unclosed quote makes the rest of the file one field)"
                ) from e
    finally:
        csv.field_size_limit(limit)
    if not lines:
        raise DataError(f"{path}: has no rows (only a header)")
    return header, lines


class _Lines:
    """The lines of an open text file for ``csv.reader``, each read with ``readline(limit + 1)``:
    a longer line is refused before more of it is read, instead of after reading all of it (the csv
    module checks its field limit only on a line already in memory: a 1 GiB file without a line
    break took 2.7 GB of memory). A row's line holds at most its fields, each at most MAX_FIELD
    characters, quoted with every quote doubled: ``bound`` sets that limit once the header is read."""

    def __init__(self, f: TextIO, path: Path, limit: int, what: str) -> None:
        self.f, self.path, self.limit, self.what, self.n = f, path, limit, what, 0

    def bound(self, n_fields: int) -> None:
        self.limit = n_fields * (2 * MAX_FIELD + 3)
        self.what = f"a line of {n_fields} field(s)"

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self.f.readline(self.limit + 1)
        if not line:
            raise StopIteration
        self.n += 1
        if len(line) > self.limit:
            raise DataError(
                f"{self.path} line {self.n}: longer than {self.limit:,} characters, the most {self.what} "
                f"can hold (a field holds at most {MAX_FIELD:,} characters); the rest of the file is not "
                "read: is it a CSV, or does an unclosed quote or a missing line break make it one line?"
            )
        return line


def _check_header(path: Path, header: list[str]) -> None:
    if not header:
        raise DataError(f"{path}: is empty; expected a header line naming the columns")
    twice = [c for c, n in Counter(header).items() if n > 1]
    if twice:
        raise DataError(
            f"{path} line 1: the header names column(s) {twice} more than once ({', '.join(header)}); "
            "column names must be unique"
        )


def _int_label(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _type_text(feature: object) -> str:
    if isinstance(feature, datasets.Value):
        return f"values of type {feature.dtype}"
    if isinstance(feature, (datasets.Sequence, list)) or type(feature).__name__ in ("List", "LargeList"):
        return "lists"
    return type(feature).__name__


def to_raw(
    ds: datasets.Dataset, cfg: DataConfig, origin: str, first_line: int | list[int], unit: str
) -> RawSplit:
    """Check columns, labels and texts of one loaded split; row i sits at ``first_line + i`` (or at
    ``first_line[i]``, a list of the rows' lines)."""
    twice = [c for c, n in Counter(ds.column_names).items() if n > 1]
    if twice:
        raise DataError(f"{origin}: column(s) {twice} occur more than once; column names must be unique")
    for col, key in ((cfg.text_column, "text_column"), (cfg.label_column, "label_column")):
        if col not in ds.column_names:
            kind = key.split("_")[0]
            raise DataError(
                f"{origin}: no {kind} column {col!r}; the columns are {ds.column_names} (set data.{key})"
            )
    if len(ds) == 0:
        raise DataError(f"{origin}: has no rows")
    text_type = ds.features[cfg.text_column]
    if not (isinstance(text_type, datasets.Value) and text_type.dtype in ("string", "large_string")):
        raise DataError(
            f"{origin}: text column {cfg.text_column!r} holds {_type_text(text_type)}, not strings; "
            "give a column of plain text (a list of strings or a number is not read as text)"
        )
    lines = first_line if isinstance(first_line, list) else list(range(first_line, first_line + len(ds)))
    raw = RawSplit([], [], lines, origin, unit)
    values = ds.data.column(cfg.label_column).to_pylist()
    labels = [_int_label(v) for v in values]
    if all(label == UNLABELLED for label in labels):
        raw.labelled = False
        return raw
    for i, (value, label) in enumerate(zip(values, labels, strict=True)):
        if label is None:
            raise DataError(
                f"{raw.where(i)}: label {value!r} in column {cfg.label_column!r} is not an integer"
            )
        if label < 0:
            raise DataError(
                f"{raw.where(i)}: label {label} is negative; labels are class ids 0..C-1 "
                "(a split whose labels are all -1 is read as unlabelled)"
            )
        raw.labels.append(label)
    for i, text in enumerate(ds.data.column(cfg.text_column).to_pylist()):
        if text is None or not str(text).strip():
            raise DataError(f"{raw.where(i)}: empty text in column {cfg.text_column!r}")
        if len(str(text)) > MAX_FIELD:
            raise DataError(
                f"{raw.where(i)}: text of {len(str(text)):,} characters in column {cfg.text_column!r}; "
                f"a text holds at most {MAX_FIELD:,}"
            )
        raw.texts.append(str(text))
    return raw
