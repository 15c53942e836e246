"""Text classification data: hub names or local CSV/TSV/JSON/Parquet files, validated row by row.

Every error the user can fix is a ``DataError`` naming the file and, where it applies, the row as the
1-based line number in the file (the header is line 1), so a bad row can be found with an editor.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError

EXTENSIONS = (".csv", ".tsv", ".json", ".jsonl", ".parquet")
SPLIT_NAMES = {"train": ("train",), "validation": ("validation", "dev", "valid"), "test": ("test",)}
SPECIAL_TOKENS = ["[PAD]", "[UNK]"]  # [PAD] must be id 0: the collate pads with 0


class DataError(ConfigError):
    """A data file or data set the user can fix: missing, malformed, or with bad rows."""


@dataclass
class RawSplit:
    """One split as python lists; ``lines[i]`` locates row i in ``origin`` for error messages."""

    texts: list[str]
    labels: list[int]
    lines: list[int]
    origin: str
    unit: str = "line"

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


# The repository root: relative sources in the shipped configs (../shared/data/sst2)
# also work when ablate runs from another folder.
REPO_ROOT = Path(__file__).resolve().parents[1]


def resolve(source: str) -> Path | None:
    """The local path ``source`` names (relative to the cwd, else to the repository root),
    or None for a hub name."""
    path = Path(source).expanduser()
    for candidate in (path, REPO_ROOT / path):
        if candidate.exists():
            return candidate.resolve()
    if source.startswith((".", "/", "~")) or source.lower().endswith(EXTENSIONS):
        raise DataError(f"data.source: file or folder not found: {path.resolve()}")
    return None


def split_files(folder: Path) -> dict[str, Path]:
    """train.*, validation|dev|valid.* (optional) and test.* in ``folder``."""
    found: dict[str, Path] = {}
    for split, stems in SPLIT_NAMES.items():
        hits = [folder / f"{s}{e}" for s in stems for e in EXTENSIONS if (folder / f"{s}{e}").is_file()]
        if len(hits) > 1:
            raise DataError(f"{folder}: several {split} files {[h.name for h in hits]}; keep one")
        if hits:
            found[split] = hits[0]
        elif split != "validation":
            want = "|".join(stems) + "." + "|".join(e[1:] for e in EXTENSIONS)
            raise DataError(f"{folder}: no {split} file; expected {want}")
    return found


def fingerprint(source: str) -> list:
    """What the cache key needs to notice a changed input: paths, sizes and mtimes of local files."""
    path = resolve(source)
    if path is None:
        return [source]
    files = sorted(split_files(path).values()) if path.is_dir() else [path]
    return [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]


def _load_file(path: Path, hf_cache: str) -> datasets.Dataset:
    ext = path.suffix.lower()
    if ext not in EXTENSIONS:
        raise DataError(f"{path}: unsupported file type {ext!r}; use one of {', '.join(EXTENSIONS)}")
    try:
        if ext in (".csv", ".tsv"):
            delimiter, quoting = ("\t", csv.QUOTE_NONE) if ext == ".tsv" else (",", csv.QUOTE_MINIMAL)
            header = _csv_header(path, delimiter, quoting)
            # All columns as strings, no NA parsing ("null" is a valid sentence) and no skipped blank
            # lines, so row i is line i + 2 and labels are parsed (and reported) here, not by pandas.
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
            )
        kind = "parquet" if ext == ".parquet" else "json"
        return datasets.load_dataset(kind, data_files=str(path), split="train", cache_dir=hf_cache)
    except DataError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, datasets.exceptions.DatasetGenerationError) as e:
        cause = e.__cause__ or e
        raise DataError(f"{path}: cannot be read as {ext[1:]}: {cause}") from e


def _csv_header(path: Path, delimiter: str, quoting: int) -> list[str]:
    """The header, after checking every row has as many fields as it: pandas would silently turn
    extra leading fields into an index (an unquoted comma in a sentence shifts the columns)."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
        header = next(reader, [])
        if not header:
            raise DataError(f"{path}: is empty; expected a header line naming the columns")
        start, rows = reader.line_num + 1, 0
        for row in reader:
            if row and len(row) != len(header):
                raise DataError(
                    f"{path} line {start}: {len(row)} field(s) where the header has {len(header)} "
                    f"({', '.join(header)}); check the delimiter and quoting"
                )
            start, rows = reader.line_num + 1, rows + 1
    if rows == 0:
        raise DataError(f"{path}: has no rows (only a header)")
    return header


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


def to_raw(ds: datasets.Dataset, cfg: DataConfig, origin: str, first_line: int, unit: str) -> RawSplit:
    """Check columns, labels and texts of one loaded split; row i sits at ``first_line + i``."""
    for col in (cfg.text_column, cfg.label_column):
        if col not in ds.column_names:
            kind = "text" if col == cfg.text_column else "label"
            raise DataError(f"{origin}: no {kind} column {col!r}; the columns are {ds.column_names}")
    if len(ds) == 0:
        raise DataError(f"{origin}: has no rows")
    raw = RawSplit([], [], list(range(first_line, first_line + len(ds))), origin, unit)
    for i, value in enumerate(ds.data.column(cfg.label_column).to_pylist()):
        label = _int_label(value)
        if label is None:
            raise DataError(
                f"{raw.where(i)}: label {value!r} in column {cfg.label_column!r} is not an integer"
            )
        if label < 0:
            raise DataError(f"{raw.where(i)}: label {label} is negative; labels are class ids 0..n-1")
        raw.labels.append(label)
    for i, text in enumerate(ds.data.column(cfg.text_column).to_pylist()):
        if text is None or not str(text).strip():
            raise DataError(f"{raw.where(i)}: empty text in column {cfg.text_column!r}")
        raw.texts.append(str(text))
    return raw


def _read(path: Path, cfg: DataConfig, hf_cache: str) -> RawSplit:
    ext = path.suffix.lower()
    first, unit = {".csv": (2, "line"), ".tsv": (2, "line"), ".jsonl": (1, "line")}.get(ext, (1, "record"))
    return to_raw(_load_file(path, hf_cache), cfg, str(path), first, unit)


def _split_off(raw: RawSplit, fraction: float, seed: int, parts: int) -> list[RawSplit]:
    """``parts`` held-out pieces of ``fraction`` each, then the rest; file order kept within each."""
    perm = np.random.default_rng(seed % 2**64).permutation(len(raw.texts))
    k = max(1, round(fraction * len(perm)))
    if len(perm) <= k * parts:
        raise DataError(f"{raw.origin}: {len(perm)} rows are too few to split off validation/test")
    cuts = [perm[i * k : (i + 1) * k] for i in range(parts)] + [perm[parts * k :]]
    return [raw.subset(np.sort(c)) for c in cuts]


def load_splits(cfg: DataConfig, hf_cache: str) -> dict[str, RawSplit]:
    """train / validation / test of ``cfg.source``, validated. A single file gives all three
    (validation and test each ``val_fraction`` of it); a folder or hub data set without validation
    splits it off train; one without test is an error."""
    assert cfg.source is not None
    path = resolve(cfg.source)
    if path is not None and path.is_file():
        val, test, train = _split_off(_read(path, cfg, hf_cache), cfg.val_fraction, cfg.seed, 2)
        out = {"train": train, "validation": val, "test": test}
    elif path is not None:
        out = {split: _read(f, cfg, hf_cache) for split, f in split_files(path).items()}
    else:
        out = _load_hub(cfg, hf_cache)
    if "validation" not in out:
        out["validation"], out["train"] = _split_off(out["train"], cfg.val_fraction, cfg.seed, 1)
    known = set(out["train"].labels)
    for split in ("validation", "test"):
        for i, label in enumerate(out[split].labels):
            if label not in known:
                raise DataError(f"{out[split].where(i)}: label {label} in {split} does not occur in train")
    return out


def _load_hub(cfg: DataConfig, hf_cache: str) -> dict[str, RawSplit]:
    # Hub names cannot be tested offline; kept deliberately thin.
    try:
        dd = datasets.load_dataset(cfg.source, cache_dir=hf_cache)
    except Exception as e:  # network, unknown name, auth: all surface as one fixable error
        raise DataError(
            f"data.source={cfg.source!r}: could not load it from the Hugging Face hub: {e}"
        ) from e
    out = {}
    for split, names in SPLIT_NAMES.items():
        name = next((n for n in names if n in dd), None)
        if name is not None:
            out[split] = to_raw(dd[name], cfg, f"hub data set {cfg.source!r} split {name!r}", 1, "row")
    for split in ("train", "test"):
        if split not in out:
            raise DataError(f"hub data set {cfg.source!r} has no {split} split; it has {list(dd)}")
    return out


def train_tokenizer(kind: str, texts: list[str], vocab_size: int) -> Tokenizer:
    """``word``: WordLevel, ``bpe``: BPE; both lowercased and split on whitespace and punctuation,
    trained on ``texts`` (the train split only, so validation/test words can be unknown)."""
    if kind == "word":
        tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
        trainer = trainers.WordLevelTrainer(
            vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False
        )
    else:
        tok = Tokenizer(models.BPE(unk_token="[UNK]"))
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False
        )
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    assert tok.token_to_id("[PAD]") == 0, "the collate pads with id 0"
    return tok


def vocab_tokenizer(vocab: list[str]) -> Tokenizer:
    """A WordLevel tokenizer over a synthetic task's fixed vocabulary; tokens are whitespace-separated."""
    ids = {t: i for i, t in enumerate(SPECIAL_TOKENS + vocab)}
    tok = Tokenizer(models.WordLevel(ids, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(SPECIAL_TOKENS)
    return tok
