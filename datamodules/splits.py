"""What each split of a data set holds and where it came from: the record a cell's metrics.json,
its trial and W&B run, and the report carry, and the warning for evaluation splits too small to
tell variants apart or that share their examples with another split.

A record is ``{split: {"n": examples, "source": how it was made, "majority": the share of its
most common label}}`` for the splits the datamodule
built (``train``, ``validation``, ``test`` and, for a synthetic task with ``long_test_factor``,
``test_long``). Light on purpose (no torch, no datasets): the report imports it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

# Fewer validation or test examples than this gets a warning. One example moves an accuracy by
# 1/n: 6.7 points at n = 15, 1 point at n = 100; and the binomial standard error of an accuracy
# near 0.8 is sqrt(0.8 * 0.2 / n), 10 points at n = 15, 4 points at n = 100. Below 100, the split's
# own noise is as large as most ablation effects.
MIN_EVAL_EXAMPLES = 100
EVAL_SPLITS = ("validation", "test")
ORDER = ("train", "validation", "test", "test_long")  # how a record lists its splits
NOT_RECORDED = "not recorded"
# An evaluation split sharing more than this share of its examples with another split gets a
# warning (the run goes on). An example is shared when its text, exactly as read, also occurs in
# the other split, whatever the labels: the model has been fitted to that text (a copy with other
# labels is a leak too, and noise besides). The SST-2 files of ../shared/data share 1 of 1,821
# test sentences with train (0.05 %); a test file that is the train file shares 100 %.
MAX_OVERLAP = 0.01
# (other, evaluated): each evaluated split against the splits a model is fitted or chosen on.
OVERLAP_PAIRS = (("train", "validation"), ("train", "test"), ("validation", "test"))

SplitRecord = dict[str, dict[str, Any]]


def split_record(labels: Mapping[str, Sequence[int]], sources: Mapping[str, str]) -> SplitRecord:
    """``{split: {"n", "source", "majority"}}`` in ``labels``' order, from each split's labels;
    a split without a source says so. ``majority`` (the rate of always predicting the most common
    label) is what the design check calls chance (sweeps/stats/design.py)."""
    return {
        name: {"n": len(y), "source": sources.get(name, NOT_RECORDED), "majority": majority_rate(y)}
        for name, y in labels.items()
    }


def majority_rate(labels: Sequence[int]) -> float | None:
    """The share of the most common label (4 decimals); None for no labels."""
    if not len(labels):
        return None
    return round(max(Counter(labels).values()) / len(labels), 4)


def small_splits(record: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """The evaluation splits (validation, test, test_long) with fewer than MIN_EVAL_EXAMPLES."""
    return {
        name: int(s["n"]) for name, s in record.items() if name != "train" and int(s["n"]) < MIN_EVAL_EXAMPLES
    }


def small_splits_warning(record: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One line when a validation or test split is smaller than MIN_EVAL_EXAMPLES, else None."""
    small = small_splits(record)
    if not small:
        return None
    fewest = min(small.values())
    listed = ", ".join(f"{name} {n}" for name, n in small.items())
    return (
        f"small evaluation split(s): {listed} examples (fewer than {MIN_EVAL_EXAMPLES}); at n = {fewest} "
        f"one example moves accuracy by {100 / fewest:.1f} points, so differences that small are "
        "noise of the split (more examples: data.n_val / data.n_test for a synthetic task, a larger "
        "data.val_fraction or more rows for text)"
    )


def overlaps(texts: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """For each pair of OVERLAP_PAIRS present in ``texts``: how many examples of the evaluated split
    ``split`` have a text that occurs in ``other`` (duplicates within ``split`` each count), of its
    ``n``. A set of each split's texts: one hash per text, no copies."""
    sets: dict[str, set[str]] = {}
    out = []
    for other, split in OVERLAP_PAIRS:
        if other in texts and split in texts:
            seen = sets.setdefault(other, set(texts[other]))
            shared = sum(t in seen for t in texts[split])
            out.append({"split": split, "other": other, "shared": shared, "n": len(texts[split])})
    return out


def overlap_warning(found: Sequence[Mapping[str, Any]]) -> str | None:
    """One line naming each evaluated split that shares more than MAX_OVERLAP of its examples with
    another split (``overlaps``), with the count and share; else None."""
    over = [o for o in found if o["n"] and o["shared"] / o["n"] > MAX_OVERLAP]
    if not over:
        return None
    listed = "; ".join(
        f"{o['split']} shares {o['shared']} of its {o['n']} examples ({100 * o['shared'] / o['n']:.1f}%) "
        f"with {o['other']}"
        for o in over
    )
    return (
        f"overlapping splits: {listed} (same text; more than {100 * MAX_OVERLAP:g}% is warned): an "
        "example the model was trained or chosen on measures memory, not generalisation; check "
        "data.source for a copied file or duplicated rows"
    )


def describe(record: Mapping[str, Mapping[str, Any]]) -> str:
    """``train 270 (...); validation 15 (...); test 15 (...)``: sizes and sources in one line."""
    return "; ".join(f"{name} {s['n']} ({s['source']})" for name, s in record.items())


def in_order(record: Mapping[str, dict[str, Any]]) -> SplitRecord:
    """``record`` with its splits in ORDER (a store that sorts keys returns test before train)."""
    rank = {name: i for i, name in enumerate(ORDER)}
    return {name: dict(record[name]) for name in sorted(record, key=lambda n: (rank.get(n, len(ORDER)), n))}
