"""DataConfig: which task, how it is generated or loaded, and how it is batched."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from ablate.datamodules.tasks import TASK_NAMES, TASKS, TEXT
from ablate.errors import ConfigError, Range, documented, require, setting, validate_fields

# Tokens a synthetic data set may hold (examples x max_len over all splits): 30x the largest
# shipped profile (100k x 32), far below what would exhaust memory while generating.
SYNTHETIC_TOKEN_BUDGET = 10**8
# Examples per split and the length-extrapolation split: every synthetic task reads them, text none.
SYNTHETIC_FIELDS = ("n_train", "n_val", "n_test", "long_test_factor")
# What the text task reads (datamodules/text.py, sources.py).
TEXT_FIELDS = (
    *("source", "subset", "revision", "hub_fallback", "text_column", "label_column"),
    *("tokenizer", "vocab_size", "val_fraction"),
)
# data.task: a name of the task registry (datamodules/tasks/), read from it, not written here.
TaskName = Literal[TASK_NAMES]  # type: ignore[valid-type]
TASK_DOC = ", ".join(
    f"`{name}`" + (f" ({task.SUMMARY})" if task.SUMMARY else "") for name, task in TASKS.items()
)
TASK_DOC += f", `{TEXT}` (hub or local files)"


@documented
@dataclass(frozen=True, kw_only=True, slots=True)
class DataConfig:
    """One data set. ``seed`` fixes the data; the run's ``seed`` fixes training."""

    SECTION = "data"

    # The fields only some tasks read, by task (each synthetic task declares its FIELDS); every
    # other field applies to all of them. A field a task does not read keeps its default and means
    # nothing for that task: `applicable` leaves it out of what a cell's record shows (its W&B run
    # config).
    TASK_FIELDS = {name: (*SYNTHETIC_FIELDS, *task.FIELDS) for name, task in TASKS.items()} | {
        TEXT: TEXT_FIELDS
    }

    # Each field: default, its meaning to a user (docs/pages/reference/config.md), valid range.
    task: TaskName = setting("order", TASK_DOC)
    seed: int = setting(0, "fixes the generated data / validation split", Range(0, 2**32 - 1))
    batch_size: int = setting(64, "examples per batch", Range(1, 65536))
    max_len: int = setting(
        64,
        "longest input in tokens (before [CLS]): truncation for text, the upper length bound for "
        "the synthetic tasks",
        Range(1, 65536),
    )
    min_len: int = setting(8, "shortest synthetic sequence", Range(1, 65536))
    n_train: int = setting(20000, "training examples (synthetic)", Range(1, 10**7))
    n_val: int = setting(1000, "validation examples (synthetic)", Range(1, 10**7))
    n_test: int = setting(1000, "test examples (synthetic)", Range(1, 10**7))
    long_test_factor: int = setting(
        0,
        "extra test split `test_long` generated with lengths scaled by this factor (length "
        "extrapolation); 0 turns it off; synthetic tasks only",
        Range(0, 64),
    )
    n_symbols: int = setting(
        16, "order: filler symbols besides the two marked tokens A and B", Range(1, 100000)
    )
    n_keys: int = setting(16, "lookup: key alphabet size", Range(2, 256))
    n_values: int = setting(10, "lookup: value alphabet size", Range(2, 256))
    n_pairs: int = setting(8, "lookup: key-value tokens per example", Range(2, 256))
    # Nangia & Bowman 2018.
    listops_depth: int = setting(3, "listops: maximum nesting depth", Range(1, 16))
    listops_args: int = setting(4, "listops: maximum arguments per operator", Range(2, 16))
    source: str | None = setting(
        None,
        "text: a hub name, a local CSV/TSV/JSON/Parquet file, a folder holding "
        "train/validation(dev)/test files, a `save_to_disk` folder, or a folder of hub-layout "
        "Parquet shards",
    )
    subset: str | None = setting(
        None,
        "text, hub data sets: the configuration (e.g. `sst2` of `nyu-mll/glue`); also picks a "
        "config of a local hub-layout folder",
    )
    revision: str | None = setting(None, "text, hub data sets: branch, tag or commit to pin")
    # The shipped SST-2 config names ../shared/data/sst2, present only in this repository's
    # checkouts; the fallback replaces it when the file is read (experiments/specs/loading.py), so
    # the resolved config and the study record the data actually used.
    hub_fallback: str | None = setting(
        None,
        "text: a hub data set that replaces a local `data.source` written in the same file when "
        "that path does not exist (an installed package has no `../shared/data`); one warning "
        "line, and the resolved config records the hub name",
    )
    text_column: str = setting("sentence", "text: column with the text")
    label_column: str = setting("label", "text: column with integer labels 0..C-1")
    tokenizer: Literal["word", "bpe"] = setting(
        "word", "text: `tokenizers` WordLevel or BPE, trained on the train split and saved with the run"
    )
    vocab_size: int = setting(8000, "text: tokenizer vocabulary size", Range(16, 10**6))
    # A single file gives validation and test this share each: below one half.
    val_fraction: float = setting(
        0.05,
        "text without a labelled validation split: this share of train becomes validation (a single "
        "file: validation and test, this share each); a random draw seeded by `seed`, not stratified",
        Range(0, 0.5, lo_open=True, hi_open=True),
    )
    cache_dir: str | None = setting(
        None, "cache of generated / tokenized splits; default `~/.cache/ablate/data`"
    )
    num_workers: int = setting(0, "DataLoader workers (0 is fastest for these small batches)", Range(0, 64))

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
        if self.task == TEXT:
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
        if self.task == TEXT:
            return self.max_len
        return TASKS[self.task].longest(self) * max(1, self.long_test_factor)

    def _check_synthetic(self) -> None:
        for scale in (1, *([self.long_test_factor] if self.long_test_factor > 1 else [])):
            TASKS[self.task].check(self, scale)  # each task's own size rules, before any run
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
            f"data.long_test_factor applies to the synthetic tasks ({', '.join(TASKS)}), not to text",
        )
        if not self.source:
            raise ConfigError(
                "data.task='text' needs data.source: a Hugging Face hub name, a local "
                "CSV/TSV/JSON/Parquet file, or a folder with train/validation/test files"
            )
        for key in ("subset", "revision", "hub_fallback"):
            value = getattr(self, key)
            require(value is None or value.strip() != "", f"data.{key} must be a name or null, got {value!r}")
