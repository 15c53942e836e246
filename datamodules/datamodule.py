"""One LightningDataModule for every task: generate or load, tokenize, cache as Arrow, batch fast.

Its data warnings (small evaluation splits, splits that share examples, a substituted split) are
WARNING records of this module's logger, never prints: with no logging configured Python shows
them on stderr (the command line), the Python API keeps them out of a notebook (api.py
``quiet_logs``), a worker's log holds them (its ``logging.basicConfig``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import uuid
import zlib
from pathlib import Path

import datasets
import lightning as L
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from tokenizers import Tokenizer
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler

from ablate.datamodules import text
from ablate.datamodules.config import DataConfig
from ablate.datamodules.splits import (
    SplitRecord,
    overlap_warning,
    overlaps,
    small_splits_warning,
    split_record,
)
from ablate.datamodules.tasks import TASKS
from ablate.errors import user_path

# Bump when generators, the label rules or the cache layout change (4: meta.json holds each
# split's size and source, datamodules/splits.py; 5: and its majority-class rate; 6: and the
# splits' text overlaps, and local files key the cache by content; the data are built as in 3).
CACHE_VERSION = 6
# Fields that only affect batching, not the data; everything else keys the cache.
_NOT_IN_KEY = ("batch_size", "num_workers", "cache_dir")


def cache_root(cfg: DataConfig) -> Path:
    root = cfg.cache_dir or os.environ.get("ABLATE_CACHE") or "~/.cache/ablate/data"
    return user_path(root, "data.cache_dir" if cfg.cache_dir else "the data cache")


def _cache_setting(cfg: DataConfig, root: Path) -> str:
    """The cache folder and the setting that chose it, for messages."""
    if cfg.cache_dir:
        return f"data.cache_dir={root}"
    if os.environ.get("ABLATE_CACHE"):
        return f"ABLATE_CACHE={root}"
    return f"the data cache {root} (the default; set data.cache_dir)"


def _make_temp(cfg: DataConfig, final: Path) -> Path:
    """A fresh temp folder beside the cache entry ``final``: created before any data is built, so a
    cache folder that is a file or unwritable is an error naming it, not a traceback after minutes."""
    root = final.parent
    if root.exists() and not root.is_dir():
        raise text.DataError(f"{_cache_setting(cfg, root)} is a file; it must be a folder")
    tmp = root / f".tmp-{final.name}-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir(parents=True)
    except OSError as e:
        raise text.DataError(
            f"{_cache_setting(cfg, root)}: cannot create the data cache there ({e.strerror or e})"
        ) from e
    return tmp


def cache_key(cfg: DataConfig) -> str:
    """The cache entry of ``cfg``: its data fields, CACHE_VERSION and, for text, each local file's
    path and content hash (sources.fingerprint)."""
    params = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name not in _NOT_IN_KEY}
    params["version"] = CACHE_VERSION
    if cfg.task == "text":
        params["files"] = text.fingerprint(cfg.source or "")
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


log = logging.getLogger(__name__)
# (cache entry, warning): the data warnings (small splits, overlaps) this process logged.
_warned: set[tuple[str, str]] = set()


def _log_once(cache: Path, warnings: list[str], who: str = "") -> None:
    """Log each warning of the data set cached at ``cache`` once per process: a worker's log has
    it once, not once per cell, and a notebook that trains a cell and then sweeps the same data
    is told once. ``who`` (the experiment, its variant) starts the line."""
    for warning in warnings:
        if (key := (str(cache), warning)) not in _warned:
            _warned.add(key)
            log.warning("%swarning: %s", f"{who}: " if who else "", warning)


def split_rng(seed: int, split: str) -> np.random.Generator:
    """Independent, reproducible stream per (seed, split): n_val never shifts the train data."""
    return np.random.default_rng([seed % 2**64, zlib.crc32(split.encode())])


def _warnings(meta: dict) -> list[str]:
    """The warnings a cache entry's meta.json calls for (datamodules/splits.py)."""
    found = (small_splits_warning(meta["splits"]), overlap_warning(meta.get("overlaps", [])))
    return [w for w in found if w]


# _Examples keeps a split padded once, as one (N, longest) matrix, when it fits in this many bytes:
# a batch is then one gather and a slice instead of a pad per step (multi-lookup: 241 -> 55 us).
PADDED_MAX_BYTES = 256 * 2**20


class _Examples(Dataset):
    """A split held as torch tensors, batched in one ``__getitems__`` call (no Arrow access per step).

    A batch is its examples padded with 0 to its own longest one, whichever way it is made: cut
    from the split padded once (``padded``, when it fits in PADDED_MAX_BYTES) or padded per
    batch; both give the same tensors (tests/unit)."""

    def __init__(self, ds: datasets.Dataset, max_padded_bytes: int = PADDED_MAX_BYTES) -> None:
        col = ds.data.column("input_ids").combine_chunks()
        lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
        flat = torch.from_numpy(pc.list_flatten(col).to_numpy(zero_copy_only=False).astype(np.int64))
        self.ids = list(flat.split(lengths.tolist()))  # views into one buffer
        self.lengths = torch.from_numpy(lengths.astype(np.int64))
        self.labels = torch.tensor(ds.data.column("label").to_numpy(), dtype=torch.long)
        self.padded: torch.Tensor | None = None  # (N, longest), 0 after each example's end
        width = int(self.lengths.max()) if len(self.ids) else 0
        if 0 < len(self.ids) * width * flat.element_size() <= max_padded_bytes:
            self.padded = flat.new_zeros(len(self.ids), width)
            self.padded[torch.arange(width)[None, :] < self.lengths[:, None]] = flat  # row-major: in order

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "label": int(self.labels[i])}

    def __getitems__(self, idx: list[int]) -> dict[str, torch.Tensor]:
        index = torch.as_tensor(idx, dtype=torch.long)
        lengths = self.lengths[index]
        if self.padded is not None and len(idx):
            input_ids = self.padded[index, : int(lengths.max())].contiguous()  # (B, L)
        else:
            input_ids = pad_sequence([self.ids[i] for i in idx], batch_first=True, padding_value=0)  # (B, L)
        mask = torch.arange(input_ids.shape[1])[None, :] < lengths[:, None]  # (B, L), True = real token
        return {"input_ids": input_ids, "attention_mask": mask, "labels": self.labels[index]}


def _as_is(batch: dict) -> dict:
    return batch  # __getitems__ already built the batch; module-level so workers can pickle it


class ClassificationDataModule(L.LightningDataModule):
    """Data for one ``DataConfig``. ``cfg.seed`` fixes the data set; ``shuffle_seed`` (the run seed)
    fixes only the order of training batches, so seed variance is training variance."""

    def __init__(self, cfg: DataConfig, shuffle_seed: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        self.shuffle_seed = shuffle_seed
        self.splits: datasets.DatasetDict | None = None
        self.tokenizer: Tokenizer | None = None
        self.n_classes = 0
        self.pad_id = 0
        # One line when a source's split had no labels and validation/test were formed otherwise
        # (text.load_splits); run.py records it in metrics.json.
        self.split_note: str | None = None
        # Each split's size and how it was made (datamodules/splits.py); run.py records it.
        self.split_record: SplitRecord = {}
        self._examples: dict[str, _Examples] = {}

    @property
    def cache_path(self) -> Path:
        return cache_root(self.cfg) / f"{self.cfg.task}-{cache_key(self.cfg)}"

    @property
    def vocab_size(self) -> int:
        assert self.tokenizer is not None, "call setup() first"
        return self.tokenizer.get_vocab_size()

    def prepare_data(self) -> None:
        """Build the cache once (rank 0 in DDP); a crash mid-way leaves only a temp folder."""
        final = self.cache_path
        if final.exists():
            return
        tmp = _make_temp(self.cfg, final)
        try:
            with text.quiet_datasets():
                splits, tok, meta = self._build()
                splits.save_to_disk(str(tmp / "splits"))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # a bad input leaves nothing behind
            raise
        tok.save(str(tmp / "tokenizer.json"))
        (tmp / "meta.json").write_text(json.dumps({**meta, "config": dataclasses.asdict(self.cfg)}, indent=1))
        try:
            tmp.rename(final)
        except OSError:  # another process finished first; its copy is identical
            shutil.rmtree(tmp, ignore_errors=True)

    def setup(self, stage: str | None = None) -> None:
        if self.splits is not None:
            return
        self.prepare_data()
        path = self.cache_path
        with text.quiet_datasets():
            self.splits = datasets.load_from_disk(str(path / "splits"))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        meta = json.loads((path / "meta.json").read_text())
        self.n_classes, self.split_note = meta["n_classes"], meta.get("split_note")
        self.split_record = meta["splits"]
        if self.split_note:
            log.warning("warning: %s", self.split_note)
        _log_once(path, _warnings(meta))
        self._examples = {name: _Examples(ds) for name, ds in self.splits.items()}

    def read_split_record(self) -> SplitRecord:
        """The split record of the built cache (after ``prepare_data``, without loading the data)."""
        return json.loads((self.cache_path / "meta.json").read_text())["splits"]

    def read_warnings(self) -> list[str]:
        """The built cache's data warnings, as ``setup`` prints them (after ``prepare_data``,
        without loading the data): small evaluation splits, splits that share their examples."""
        return _warnings(json.loads((self.cache_path / "meta.json").read_text()))

    def log_warnings(self, who: str = "") -> None:
        """Log the built cache's data warnings (``read_warnings``), those not yet logged in this
        process (``setup`` logs them too), each line starting with ``who``."""
        _log_once(self.cache_path, self.read_warnings(), who)

    def _build(self) -> tuple[datasets.DatasetDict, Tokenizer, dict]:
        """The tokenized splits, the tokenizer, and meta.json's facts (class count, split note)."""
        cfg = self.cfg
        meta: dict = {"split_note": None}
        if cfg.task == "text":
            found = text.load_splits(cfg, str(cache_root(cfg) / "hf"))
            raw = found.raw
            tok = text.train_tokenizer(cfg.tokenizer, raw["train"].texts, cfg.vocab_size)
            data = {name: (r.texts, r.labels) for name, r in raw.items()}
            meta.update(n_classes=found.n_classes, split_note=found.note)
            # Text only: a synthetic task draws every split from one distribution, where short
            # sequences recur by design.
            meta["overlaps"] = overlaps({name: r.texts for name, r in raw.items()})
            sources = found.sources
        else:
            task = TASKS[cfg.task]
            sizes = {"train": cfg.n_train, "validation": cfg.n_val, "test": cfg.n_test}
            data = {name: task.generate(cfg, split_rng(cfg.seed, name), n) for name, n in sizes.items()}
            if cfg.long_test_factor > 0:
                rng = split_rng(cfg.seed, "test_long")
                data["test_long"] = task.generate(cfg, rng, cfg.n_test, cfg.long_test_factor)
            tok = text.vocab_tokenizer(task.vocab(cfg))
            meta["n_classes"] = task.N_CLASSES
            made = f"generated by the {cfg.task} task from data.seed={cfg.seed} (a stream per split)"
            sources = {name: made for name in data}
            if "test_long" in data:
                sources["test_long"] = f"{made}, lengths x{cfg.long_test_factor}"
        meta["splits"] = split_record({name: labels for name, (_, labels) in data.items()}, sources)
        out = {}
        for name, (texts, labels) in data.items():
            limit = None if name == "test_long" else cfg.max_len  # test_long is longer on purpose
            ids = [e.ids[:limit] for e in tok.encode_batch_fast(texts, add_special_tokens=False)]
            # Straight to Arrow: Dataset.from_dict would re-encode every example in Python.
            table = pa.table(
                {"input_ids": pa.array(ids, pa.list_(pa.int32())), "label": pa.array(labels, pa.int64())}
            )
            out[name] = datasets.Dataset(table)
        return datasets.DatasetDict(out), tok, meta

    def dataloader(self, split: str, shuffle: bool = False, seed: int | None = None) -> DataLoader:
        """Batches of ``split``; shuffled by ``seed`` (default: the run's shuffle seed)."""
        if split not in self._examples:
            raise KeyError(f"no split {split!r}; have {sorted(self._examples)} (did you call setup()?)")
        ds = self._examples[split]
        if shuffle:
            order = self.shuffle_seed if seed is None else seed
            sampler = RandomSampler(ds, generator=torch.Generator().manual_seed(order))
        else:
            sampler = SequentialSampler(ds)
        workers = self.cfg.num_workers
        return DataLoader(
            ds,
            batch_sampler=BatchSampler(sampler, self.cfg.batch_size, drop_last=False),
            collate_fn=_as_is,
            num_workers=workers,
            persistent_workers=workers > 0,
            pin_memory=torch.cuda.is_available(),
        )

    def longest(self, split: str) -> int:
        """The longest example of ``split`` in tokens: a length fixed by the data alone."""
        return int(self._examples[split].lengths.max())

    def train_dataloader(self) -> DataLoader:
        return self.dataloader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self.dataloader("validation")

    def test_dataloader(self) -> DataLoader:
        return self.dataloader("test")

    def save_tokenizer(self, directory: str | Path) -> Path:
        assert self.tokenizer is not None, "call setup() first"
        path = Path(directory) / "tokenizer.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save(str(path))
        return path

    def probe_batch(self, n: int = 4) -> dict:
        """The first ``n`` test examples as a batch (fixed across runs, for attention heatmaps) plus
        ``tokens``: the token strings of each example, without padding."""
        ds = self._examples["test"]
        batch = ds.__getitems__(list(range(min(n, len(ds)))))
        assert self.tokenizer is not None
        batch["tokens"] = [
            [self.tokenizer.id_to_token(int(t)) for t in ids[:length]]
            for ids, length in zip(batch["input_ids"], batch["attention_mask"].sum(1).tolist(), strict=True)
        ]
        return batch
