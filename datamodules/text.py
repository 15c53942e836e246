"""Text classification data: the splits of a source, their labels, and the tokenizers.

``sources.py`` reads a source (hub, file, folder) into validated splits; this module assembles train /
validation / test from them (splitting off what a source lacks), enforces the label rule, and trains
the tokenizer on train.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from ablate.datamodules.config import DataConfig
from ablate.datamodules.sources import (  # noqa: F401  (DataError, RawSplit, resolve: public here too)
    DataError,
    RawSplit,
    fingerprint,
    quiet_datasets,
    read_source,
    resolve,
)

SPECIAL_TOKENS = ["[PAD]", "[UNK]"]  # [PAD] must be id 0: the collate pads with 0


@dataclass
class Splits:
    """train / validation / test, the class count C, and ``note``: one line saying how the splits
    were formed when a source's split had no labels (None otherwise)."""

    raw: dict[str, RawSplit]
    n_classes: int
    note: str | None = None
    # How each split was made, one phrase each (datamodules/splits.py records it with the size).
    sources: dict[str, str] = field(default_factory=dict)


def _split_off(raw: RawSplit, fraction: float, seed: int, parts: int) -> list[RawSplit]:
    """``parts`` held-out pieces of ``fraction`` each, then the rest; file order kept within each."""
    perm = np.random.default_rng(seed % 2**64).permutation(len(raw.texts))
    k = max(1, round(fraction * len(perm)))
    if len(perm) <= k * parts:
        raise DataError(f"{raw.origin}: {len(perm)} rows are too few to split off validation/test")
    cuts = [perm[i * k : (i + 1) * k] for i in range(parts)] + [perm[parts * k :]]
    return [raw.subset(np.sort(c)) for c in cuts]


def load_splits(cfg: DataConfig, hf_cache: str) -> Splits:
    """train / validation / test of ``cfg.source``, validated.

    A single file gives all three (validation and test each ``val_fraction`` of it); a source without
    validation splits it off train; a folder or hub data set without test is an error. A split whose
    labels are all -1 (the hub's GLUE test splits) is not used: an unlabelled test is replaced by
    validation, and validation then by ``val_fraction`` of train.
    """
    found = read_source(cfg, hf_cache)
    if not found["train"].labelled:
        raise DataError(f"{found['train'].origin}: every label is -1; the train split needs labels")
    dropped = [found.pop(s) for s in ("validation", "test") if s in found and not found[s].labelled]
    out = dict(found)
    sources = {s: r.origin for s, r in out.items()}
    if "test" not in out and "validation" in out:
        out["test"] = out.pop("validation")
        sources["test"] = f"{sources.pop('validation')}, used as test (the source has no labelled test split)"
    train = out["train"]
    held = []  # the splits drawn from train
    if "test" not in out:
        out["validation"], out["test"], out["train"] = _split_off(out["train"], cfg.val_fraction, cfg.seed, 2)
        held = ["validation", "test"]
    if "validation" not in out:
        out["validation"], out["train"] = _split_off(out["train"], cfg.val_fraction, cfg.seed, 1)
        held = ["validation"]
    for i, s in enumerate(held):
        sources[s] = _drawn(train, cfg.val_fraction, cfg.seed, len(out[s]), after=held[:i])
    if held:
        sources["train"] = f"{train.origin}, less the {' and '.join(held)} rows drawn from it"
    n_classes = check_labels(out)
    note = _fallback_note(dropped, found, out, cfg.val_fraction) if dropped else None
    names = ("train", "validation", "test")
    return Splits({s: out[s] for s in names}, n_classes, note, {s: sources[s] for s in names})


def _drawn(train: RawSplit, fraction: float, seed: int, n: int, after: list[str]) -> str:
    """How ``_split_off`` made a held-out split: the share, the seed, and what it is not."""
    other = f", disjoint from {' and '.join(after)}" if after else ""
    return (
        f"{fraction * 100:g}% of {train.origin} ({n} of its {len(train)} rows), drawn at random "
        f"(a permutation seeded by data.seed={seed}){other}, not stratified by label"
    )


def _fallback_note(
    dropped: list[RawSplit], found: dict[str, RawSplit], out: dict[str, RawSplit], fraction: float
) -> str:
    """One line: which splits had no labels and where validation and test came from instead."""
    gone = "; ".join(f"{r.origin} ({len(r)} rows)" for r in dropped)
    if "validation" in found:
        test = f"test is the source's validation split ({len(out['test'])} rows)"
    elif found.get("test") is out["test"]:
        test = f"test is the source's test split ({len(out['test'])} rows)"
    else:
        test = f"test is {fraction * 100:g}% of train ({len(out['test'])} rows)"
    val = f"validation is {fraction * 100:g}% of train ({len(out['validation'])} rows)"
    return f"unlabelled split(s) not used (every label is -1): {gone}; {test}, {val}"


def check_labels(splits: dict[str, RawSplit]) -> int:
    """The class count C. Train's labels must be exactly the class ids 0..C-1 with C >= 2 (every class
    in train: a class the model never sees cannot be learned, and C = max + 1 would silently add
    classes); validation and test may hold only train's classes."""
    train = splits["train"]
    found = sorted(set(train.labels))
    n = len(found)
    if n < 2 or found[-1] != n - 1:
        present = set(found)
        gaps = list(itertools.islice((c for c in range(found[-1]) if c not in present), 10))
        count = found[-1] + 1 - n
        shown = _brace(gaps) if count <= len(gaps) else _brace(gaps)[:-1] + ", ...}"
        why = "only one class" if n < 2 else f"{count:,} of the ids 0..{found[-1]} missing: {shown}"
        raise DataError(
            f"{train.origin}: the train labels are {_brace(found)} ({why}); labels must be the class ids "
            "0..C-1 with C >= 2, every class present in train"
        )
    for split in ("validation", "test"):
        for i, label in enumerate(splits[split].labels):
            if label >= n:
                raise DataError(
                    f"{splits[split].where(i)}: label {label} in {split} does not occur in train "
                    f"(train has the classes 0..{n - 1})"
                )
    return n


def _brace(items: list[int], n: int = 10) -> str:
    """``{a, b, c}``, the first ``n`` only, with the count when cut."""
    shown = ", ".join(map(str, items[:n]))
    return "{" + shown + (f", ... ({len(items):,} distinct)" if len(items) > n else "") + "}"


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
