"""DataConfig: which task, how it is generated or loaded, and how it is batched."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from ablate.errors import ConfigError, Range, require, validate_fields

# Tokens a synthetic data set may hold (examples x max_len over all splits): 30x the largest
# shipped profile (100k x 32), far below what would exhaust memory while generating.
SYNTHETIC_TOKEN_BUDGET = 10**8
# Examples per split and the length-extrapolation split: every synthetic task reads them, text none.
SYNTHETIC_FIELDS = ("n_train", "n_val", "n_test", "long_test_factor")


@dataclass(frozen=True, kw_only=True, slots=True)
class DataConfig:
    """One data set. ``seed`` fixes the data; the run's ``seed`` fixes training."""

    SECTION = "data"
    RANGES = {
        "seed": Range(0, 2**32 - 1),
        "batch_size": Range(1, 65536),
        "max_len": Range(1, 65536),
        "min_len": Range(1, 65536),
        "n_train": Range(1, 10**7),
        "n_val": Range(1, 10**7),
        "n_test": Range(1, 10**7),
        "long_test_factor": Range(0, 64),
        "n_symbols": Range(1, 100000),
        "n_keys": Range(2, 256),
        "n_values": Range(2, 256),
        "n_pairs": Range(2, 256),
        "listops_depth": Range(1, 16),
        "listops_args": Range(2, 16),
        "vocab_size": Range(16, 10**6),
        # A single file gives validation and test this share each: below one half.
        "val_fraction": Range(0, 0.5, lo_open=True, hi_open=True),
        "num_workers": Range(0, 64),
    }
    # One line per field: what it means to a user (docs/pages/reference/config.md shows it).
    DOCS = {
        "task": (
            "`order` (order-only: is A before B), `lookup` (multi-lookup), `listops`, `text` (hub or "
            "local files)"
        ),
        "seed": "fixes the generated data / validation split",
        "batch_size": "examples per batch",
        "max_len": (
            "longest input in tokens (before [CLS]): truncation for text, the upper length bound for "
            "the synthetic tasks"
        ),
        "min_len": "shortest synthetic sequence",
        "n_train": "training examples (synthetic)",
        "n_val": "validation examples (synthetic)",
        "n_test": "test examples (synthetic)",
        "long_test_factor": (
            "extra test split `test_long` generated with lengths scaled by this factor (length "
            "extrapolation); 0 turns it off; synthetic tasks only"
        ),
        "n_symbols": "order: filler symbols besides the two marked tokens A and B",
        "n_keys": "lookup: key alphabet size",
        "n_values": "lookup: value alphabet size",
        "n_pairs": "lookup: key-value tokens per example",
        "listops_depth": "listops: maximum nesting depth",
        "listops_args": "listops: maximum arguments per operator",
        "source": (
            "text: a hub name, a local CSV/TSV/JSON/Parquet file, a folder holding "
            "train/validation(dev)/test files, a `save_to_disk` folder, or a folder of hub-layout "
            "Parquet shards"
        ),
        "subset": (
            "text, hub data sets: the configuration (e.g. `sst2` of `nyu-mll/glue`); also picks a "
            "config of a local hub-layout folder"
        ),
        "revision": "text, hub data sets: branch, tag or commit to pin",
        "hub_fallback": (
            "text: a hub data set that replaces a local `data.source` written in the same file when "
            "that path does not exist (an installed package has no `../shared/data`); one warning "
            "line, and the resolved config records the hub name"
        ),
        "text_column": "text: column with the text",
        "label_column": "text: column with integer labels 0..C-1",
        "tokenizer": "text: `tokenizers` WordLevel or BPE, trained on the train split and saved with the run",
        "vocab_size": "text: tokenizer vocabulary size",
        "val_fraction": (
            "text without a labelled validation split: this share of train becomes validation (a single "
            "file: validation and test, this share each); a random draw seeded by `seed`, not stratified"
        ),
        "cache_dir": "cache of generated / tokenized splits; default `~/.cache/ablate/data`",
        "num_workers": "DataLoader workers (0 is fastest for these small batches)",
    }

    # The fields only some tasks read, by task; every other field applies to all of them. A field
    # a task does not read keeps its default and means nothing for that task: `applicable` leaves
    # it out of what a cell's record shows (its W&B run config).
    TASK_FIELDS = {
        "order": (*SYNTHETIC_FIELDS, "min_len", "n_symbols"),
        "lookup": (*SYNTHETIC_FIELDS, "n_keys", "n_values", "n_pairs"),
        "listops": (*SYNTHETIC_FIELDS, "min_len", "listops_depth", "listops_args"),
        "text": (
            *("source", "subset", "revision", "hub_fallback", "text_column", "label_column"),
            *("tokenizer", "vocab_size", "val_fraction"),
        ),
    }

    task: Literal["order", "lookup", "listops", "text"] = "order"
    seed: int = 0
    batch_size: int = 64
    # Longest input in tokens (before [CLS]): truncation for text, the upper
    # length bound for the synthetic tasks.
    max_len: int = 64
    min_len: int = 8
    # Synthetic tasks: examples per split.
    n_train: int = 20000
    n_val: int = 1000
    n_test: int = 1000
    # Extra test split "test_long" generated with lengths scaled by this
    # factor (length extrapolation); 0 turns it off. Synthetic tasks only.
    long_test_factor: int = 0
    # order: filler symbols besides the two marked tokens A and B.
    n_symbols: int = 16
    # lookup: key and value alphabet sizes and the number of key-value pairs.
    n_keys: int = 16
    n_values: int = 10
    n_pairs: int = 8
    # listops: nesting depth and arguments per operator (Nangia & Bowman 2018).
    listops_depth: int = 3
    listops_args: int = 4
    # text: a hub name (with ``subset``: its configuration, ``revision``: a branch, tag or commit),
    # a local CSV/TSV/JSON/Parquet file, or a folder holding train/validation(dev)/test files, a
    # DatasetDict saved with save_to_disk, or Parquet shards in the hub's layout.
    source: str | None = None
    subset: str | None = None
    revision: str | None = None
    # A hub data set for a *file's* local data.source that does not exist on this machine (the
    # shipped SST-2 config names ../shared/data/sst2, present only in this repository's
    # checkouts): it replaces the source when the file is read, with one warning line, so the
    # resolved config and the study record the data actually used (experiments/schema/config.py).
    hub_fallback: str | None = None
    text_column: str = "sentence"
    label_column: str = "label"
    tokenizer: Literal["word", "bpe"] = "word"
    vocab_size: int = 8000
    # text without a (labelled) validation split: this share of train becomes validation.
    val_fraction: float = 0.05
    # Cache of generated / tokenized splits; default ~/.cache/ablate/data.
    cache_dir: str | None = None
    num_workers: int = 0

    def __post_init__(self) -> None:
        validate_fields(self)  # types, choices and RANGES; the rules below relate fields
        require(
            self.min_len <= self.max_len,
            f"data.min_len={self.min_len} is larger than data.max_len={self.max_len}",
        )
        require(
            self.n_pairs <= self.n_keys,
            f"data.n_pairs={self.n_pairs} must be in [2, data.n_keys={self.n_keys}]",
        )
        if self.task == "text":
            self._check_text()
        else:
            self._check_synthetic()

    def applicable(self) -> tuple[str, ...]:
        """The fields this config's task reads, in field order (``TASK_FIELDS``): a text task has no
        ``n_train``, an order task no ``n_keys``."""
        some = {name for names in self.TASK_FIELDS.values() for name in names}
        own = self.TASK_FIELDS[self.task]
        return tuple(f.name for f in fields(self) if f.name not in some or f.name in own)

    def longest_input(self) -> int:
        """Tokens of the longest input any split holds ([CLS] not included): text is truncated to
        max_len; a synthetic task's longest example, times long_test_factor for test_long."""
        if self.task == "text":
            return self.max_len
        from ablate.datamodules.tasks import TASKS

        return TASKS[self.task].longest(self) * max(1, self.long_test_factor)

    def _check_synthetic(self) -> None:
        from ablate.datamodules.tasks import TASKS  # each task's own size rules, before any run

        for scale in (1, *([self.long_test_factor] if self.long_test_factor > 1 else [])):
            TASKS[self.task].check(self, scale)
        require(
            self.source is None
            and self.subset is None
            and self.revision is None
            and self.hub_fallback is None,
            f"data.source, data.subset, data.revision and data.hub_fallback apply to data.task='text', "
            f"not {self.task!r}",
        )
        tokens = (self.n_train + self.n_val + self.n_test * (1 + self.long_test_factor)) * self.max_len
        require(
            tokens <= SYNTHETIC_TOKEN_BUDGET,
            f"data: (n_train + n_val + n_test x (1 + long_test_factor)) x max_len = {tokens:,} tokens; "
            f"a synthetic data set holds at most {SYNTHETIC_TOKEN_BUDGET:,}: lower the sizes or max_len",
        )

    def _check_text(self) -> None:
        require(
            self.long_test_factor == 0,
            "data.long_test_factor applies to the synthetic tasks (order, lookup, listops), not to text",
        )
        if not self.source:
            raise ConfigError(
                "data.task='text' needs data.source: a Hugging Face hub name, a local "
                "CSV/TSV/JSON/Parquet file, or a folder with train/validation/test files"
            )
        for key in ("subset", "revision", "hub_fallback"):
            value = getattr(self, key)
            require(value is None or value.strip() != "", f"data.{key} must be a name or null, got {value!r}")
