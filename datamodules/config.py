"""DataConfig: which task, how it is generated or loaded, and how it is batched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ablate.errors import ConfigError, require, validate_fields


@dataclass(frozen=True, kw_only=True, slots=True)
class DataConfig:
    """One data set. ``seed`` fixes the data; the run's ``seed`` fixes training."""

    SECTION = "data"

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
    # text: a hub name, a local CSV/TSV/JSON/Parquet file, or a folder holding
    # train/validation(dev)/test files.
    source: str | None = None
    text_column: str = "sentence"
    label_column: str = "label"
    tokenizer: Literal["word", "bpe"] = "word"
    vocab_size: int = 8000
    # text without a validation split: this share of train becomes validation.
    val_fraction: float = 0.05
    # Cache of generated / tokenized splits; default ~/.cache/ablate/data.
    cache_dir: str | None = None
    num_workers: int = 0

    def __post_init__(self) -> None:
        validate_fields(self)
        for name in ("batch_size", "max_len", "min_len", "n_train", "n_val", "n_test", "n_symbols"):
            require(getattr(self, name) >= 1, f"data.{name} must be >= 1, got {getattr(self, name)}")
        require(
            self.min_len <= self.max_len,
            f"data.min_len={self.min_len} is larger than data.max_len={self.max_len}",
        )
        require(self.long_test_factor >= 0, "data.long_test_factor must be >= 0 (0 = off)")
        require(
            self.long_test_factor == 0 or self.task != "text",
            "data.long_test_factor applies to the synthetic tasks (order, lookup, listops), not to text",
        )
        require(
            self.n_pairs <= self.n_keys and self.n_pairs >= 2,
            f"data.n_pairs={self.n_pairs} must be in [2, data.n_keys={self.n_keys}]",
        )
        require(self.n_values >= 2, f"data.n_values must be >= 2, got {self.n_values}")
        require(
            self.listops_depth >= 1 and self.listops_args >= 2, "data.listops_depth >= 1, listops_args >= 2"
        )
        require(self.vocab_size >= 16, f"data.vocab_size must be >= 16, got {self.vocab_size}")
        require(0 < self.val_fraction < 1, f"data.val_fraction must be in (0, 1), got {self.val_fraction}")
        require(self.num_workers >= 0, "data.num_workers must be >= 0")
        if self.task == "text" and not self.source:
            raise ConfigError(
                "data.task='text' needs data.source: a Hugging Face hub name, a local "
                "CSV/TSV/JSON/Parquet file, or a folder with train/validation/test files"
            )
