"""Data tests: synthetic task semantics, determinism, batching, caching, local text files, errors."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from ablate.datamodules import ClassificationDataModule, DataError
from ablate.datamodules.config import SYNTHETIC_TOKEN_BUDGET, DataConfig
from ablate.datamodules.tasks import TASKS
from ablate.errors import ConfigError, numeric_fields
from tests.helpers.paths import sst2

SMALL = {"n_train": 200, "n_val": 40, "n_test": 40}


def make(tmp_path: Path, shuffle_seed: int = 0, **kw: object) -> ClassificationDataModule:
    dm = ClassificationDataModule(DataConfig(cache_dir=str(tmp_path), **{**SMALL, **kw}), shuffle_seed)
    dm.setup()
    return dm


def tokens(dm: ClassificationDataModule, split: str) -> list[list[str]]:
    return [[dm.tokenizer.id_to_token(i) for i in ids] for ids in dm.splits[split]["input_ids"]]


@pytest.mark.parametrize("task", ["order", "lookup", "listops"])
def test_generation_is_fixed_by_data_seed(tmp_path: Path, task: str) -> None:
    a = make(tmp_path / "a", task=task, shuffle_seed=1)
    b = make(tmp_path / "b", task=task, shuffle_seed=2)  # separate cache: really generated twice
    c = make(tmp_path / "c", task=task, seed=1)
    for split in ("train", "validation", "test"):
        assert a.splits[split].to_dict() == b.splits[split].to_dict()
        assert a.splits[split]["input_ids"] != c.splits[split]["input_ids"]
    assert a.splits["train"]["input_ids"] != a.splits["test"]["input_ids"]


def test_order_classes_have_identical_token_bags(tmp_path: Path) -> None:
    dm = make(tmp_path, task="order", min_len=6, max_len=10)
    for split in ("train", "test"):
        bags: dict[int, Counter] = {0: Counter(), 1: Counter()}
        for toks, label in zip(tokens(dm, split), dm.splits[split]["label"], strict=True):
            assert toks.count("A") == 1 and toks.count("B") == 1 and 6 <= len(toks) <= 10
            assert label == int(toks.index("A") < toks.index("B"))
            bags[label][tuple(sorted(toks))] += 1
        assert bags[0] == bags[1]


def test_lookup_labels_match_recomputation(tmp_path: Path) -> None:
    dm = make(tmp_path, task="lookup", n_keys=12, n_values=5, n_pairs=6)
    labels = dm.splits["train"]["label"]
    assert sum(labels) == len(labels) // 2
    for toks, label in zip(tokens(dm, "train"), labels, strict=True):
        assert len(toks) == 12  # 6 pair tokens, then 6 copies of the one query token
        pairs, queries = toks[:6], toks[6:]
        table = dict(t.split("=") for t in pairs)
        assert len(table) == 6  # distinct keys
        assert len(set(queries)) == 1 and queries[0].startswith("q")
        k1, k2 = queries[0][1:].split(",")
        v1, v2 = int(table[f"k{k1}"][1:]), int(table[f"k{k2}"][1:])
        assert k1 != k2 and v1 != v2 and label == int(v1 > v2)


def listops_value(toks: list[str]) -> int:
    """Independent stack evaluator (np.median as in the LRA code)."""
    fns = {"MIN": min, "MAX": max, "MED": lambda a: int(np.median(a)), "SM": lambda a: sum(a) % 10}
    stack: list[list] = []
    for t in toks:
        if t == "[":
            stack.append([])
        elif t == "]":
            op, *args = stack.pop()
            value = fns[op](args)
            if not stack:
                return value
            stack[-1].append(value)
        else:
            stack[-1].append(t if t in fns else int(t))
    raise AssertionError("unbalanced expression")


def test_listops_labels_brackets_and_lengths(tmp_path: Path) -> None:
    dm = make(tmp_path, task="listops", min_len=10, max_len=40, long_test_factor=2)
    assert dm.n_classes == 10
    for split, (lo, hi) in {"train": (10, 40), "test_long": (20, 80)}.items():
        for toks, label in zip(tokens(dm, split), dm.splits[split]["label"], strict=True):
            assert lo <= len(toks) <= hi and toks[0] == "[" and toks[-1] == "]"
            assert label == listops_value(toks)
    assert len(set(dm.splits["train"]["label"])) >= 8


def test_batches_are_padded_with_masks(tmp_path: Path) -> None:
    dm = make(tmp_path, task="order", min_len=3, max_len=12, batch_size=16)
    batch = next(iter(dm.val_dataloader()))
    ids, mask = batch["input_ids"], batch["attention_mask"]
    lengths = [len(x) for x in dm.splits["validation"]["input_ids"][:16]]
    assert ids.dtype == torch.long and mask.dtype == torch.bool and batch["labels"].dtype == torch.long
    assert ids.shape == mask.shape == (16, max(lengths))
    assert mask.sum(1).tolist() == lengths
    assert (ids[~mask] == 0).all() and (ids[mask] != 0).all()
    assert batch["labels"].tolist() == dm.splits["validation"]["label"][:16]
    probe = dm.probe_batch(3)
    assert [len(t) for t in probe["tokens"]] == probe["attention_mask"].sum(1).tolist()
    assert dm.pad_id == 0 and dm.save_tokenizer(tmp_path / "tok").is_file()


def test_a_split_padded_once_batches_like_one_padded_per_batch(tmp_path: Path) -> None:
    """_Examples cuts a batch from the split padded once when it fits; the per-batch pad (over
    the byte limit) must give the same tensors, for any index set, in the batch's order."""
    from ablate.datamodules.datamodule import _Examples

    dm = make(tmp_path, task="order", min_len=3, max_len=12)
    once, per_batch = _Examples(dm.splits["train"]), _Examples(dm.splits["train"], max_padded_bytes=0)
    assert once.padded is not None and per_batch.padded is None
    assert once.padded.shape == (len(once), int(once.lengths.max()))
    rng = np.random.default_rng(0)
    for idx in (
        [0],
        [5, 3, 5],
        list(range(len(once))),
        *(rng.choice(len(once), 17).tolist() for _ in range(20)),
    ):
        a, b = once.__getitems__(idx), per_batch.__getitems__(idx)
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype and a[key].is_contiguous(), key
            assert torch.equal(a[key], b[key]), (key, idx)
        # the batch is as long as its own longest example
        assert a["input_ids"].shape[1] == max(int(once.lengths[i]) for i in idx)


def test_train_order_depends_on_shuffle_seed(tmp_path: Path) -> None:
    def first_labels(seed: int) -> list[list[int]]:
        dm = make(tmp_path, shuffle_seed=seed, batch_size=32)
        return [b["input_ids"][:, :4].tolist() for b in dm.train_dataloader()][:2]

    assert first_labels(0) == first_labels(0)
    assert first_labels(0) != first_labels(1)


def test_cache_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dm = make(tmp_path, task="listops")
    assert [p.name for p in tmp_path.iterdir()] == [dm.cache_path.name]  # no temp folder left behind
    assert (dm.cache_path / "tokenizer.json").is_file()

    def boom(*args: object) -> None:
        raise AssertionError("regenerated although cached")

    monkeypatch.setattr(TASKS["listops"], "generate", boom)
    again = make(tmp_path, task="listops", batch_size=7)  # batching does not key the cache
    assert again.splits["test"].to_dict() == dm.splits["test"].to_dict()
    with pytest.raises(AssertionError, match="regenerated"):
        make(tmp_path, task="listops", seed=5)


def test_local_csv_loads(tmp_path: Path) -> None:
    rows = [f'{i % 3},"text number {i}, with a comma"' for i in range(60)]
    (tmp_path / "d.csv").write_text("label,sentence\n" + "\n".join(rows) + "\n")
    dm = make(tmp_path / "cache", task="text", source=str(tmp_path / "d.csv"), val_fraction=0.1)
    assert dm.n_classes == 3 and {k: len(v) for k, v in dm.splits.items()} == {
        "train": 48,
        "validation": 6,
        "test": 6,
    }
    assert "comma" in dm.probe_batch(1)["tokens"][0]


@pytest.fixture(scope="module")
def sst2_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sst2")


@pytest.mark.parametrize("tokenizer", ["word", "bpe"])
def test_sst2_loads(sst2_cache: Path, tokenizer: str) -> None:
    folder = sst2()  # ../shared/data/sst2 beside the checkout; a skip where it is absent
    start = time.perf_counter()
    dm = make(sst2_cache, task="text", source=str(folder), tokenizer=tokenizer, vocab_size=4000)
    assert time.perf_counter() - start < 30
    assert dm.n_classes == 2 and 1000 < dm.vocab_size <= 4000
    assert {k: len(v) for k, v in dm.splits.items()} == {"train": 67349, "validation": 872, "test": 1821}
    lines = (folder / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert dm.splits["test"]["label"] == [int(line.split("\t")[0]) for line in lines]  # no rows merged
    assert "".join(tokens(dm, "test")[0]).startswith("nomovement,no")  # word or subword pieces


def test_local_tsv_keeps_quote_characters(tmp_path: Path) -> None:
    # The SST-2 copy here has no '"', but GLUE-style TSVs do: QUOTE_NONE must keep them literally.
    rows = "label\tsentence\n" + "".join(f'{i % 2}\tshe said "so good {i}\n' for i in range(20))
    folder = write(
        tmp_path / "d", train_tsv=rows, valid_tsv=rows, test_tsv='label\tsentence\n1\t" so "" good\n'
    )
    dm = make(tmp_path / "cache", task="text", source=str(folder))
    assert len(dm.splits["train"]) == 20 and len(dm.splits["test"]) == 1
    assert dm.probe_batch(1)["tokens"][0] == ['"', "so", '"', '"', "good"]


def write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name.replace("_", ".")).write_text(content)
    return folder


GOOD = "label\tsentence\n0\ta\n1\tb\n0\tc\n1\td\n"
BAD_CASES = {
    "missing file": ({}, "nope.tsv", "nope.tsv", "not found"),
    "no test file": ({"train_tsv": GOOD}, "", "d", "no test file"),
    "no text column": ({"train_tsv": "label\ttext\n0\ta\n"}, "train.tsv", "train.tsv", "['label', 'text']"),
    "non-integer label": ({"train_tsv": GOOD + "x\te\n"}, "train.tsv", "train.tsv line 6", "not an integer"),
    "negative label": ({"train_tsv": GOOD + "-1\te\n"}, "train.tsv", "train.tsv line 6", "negative"),
    "empty text": ({"train_tsv": "label\tsentence\n0\ta\n1\t \n"}, "train.tsv", "train.tsv line 3", "empty"),
    "malformed": ({"train_tsv": GOOD + "1\te\tf\n"}, "train.tsv", "train.tsv", "line 6"),
    "unseen label": (
        {"train_tsv": GOOD, "dev_tsv": GOOD + "2\te\n", "test_tsv": GOOD},
        "",
        "dev.tsv line 6",
        "2",
    ),
    "bad json": (
        {"train_jsonl": '{"label": 0, "sentence": "a"}\n{"label": 1,\n'},
        "train.jsonl",
        "train.jsonl",
        "",
    ),
}


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_inputs_raise_data_error(tmp_path: Path, case: str) -> None:
    files, source, where, what = BAD_CASES[case]
    folder = write(tmp_path / "d", **files)
    with pytest.raises(DataError) as info:
        make(tmp_path / "cache", task="text", source=str(folder / source) if source else str(folder))
    assert where in str(info.value) and what in str(info.value), str(info.value)


# --- DataConfig ranges -----------------------------------------------------------------------


def test_every_numeric_field_has_a_range() -> None:
    assert sorted(numeric_fields(DataConfig)) == sorted(DataConfig.RANGES)


@pytest.mark.parametrize("name", sorted(DataConfig.RANGES))
def test_values_outside_the_range_are_refused(name: str) -> None:
    interval = DataConfig.RANGES[name]
    if isinstance(getattr(DataConfig(), name), int):
        bad: list[float] = [int(interval.lo) - 1, int(interval.hi) + 1]  # floats are a type error
    else:
        bad = [interval.lo - 1, interval.hi + 1, float("inf"), float("nan")]
        bad += [interval.lo] * interval.lo_open + [interval.hi] * interval.hi_open
    for value in bad:
        with pytest.raises(ConfigError, match=rf"data\.{name}=.* is out of range; valid: ") as info:
            DataConfig(**{name: value})
        assert str(interval) in str(info.value)


def test_huge_max_len_is_an_error_naming_the_interval() -> None:
    with pytest.raises(ConfigError, match=r"data\.max_len=1000000000 is out of range; valid: \[1, 65536\]"):
        DataConfig(max_len=1_000_000_000)


def test_synthetic_token_budget() -> None:
    DataConfig(n_train=1_000_000, max_len=64)  # 64 M tokens: fine
    with pytest.raises(ConfigError, match="a synthetic data set holds at most 100,000,000"):
        DataConfig(n_train=10**7, max_len=64)
    assert SYNTHETIC_TOKEN_BUDGET == 10**8


@pytest.mark.parametrize(
    ("kw", "expect"),
    [
        ({"task": "order", "source": "x.csv"}, "apply to data.task='text', not 'order'"),
        ({"task": "lookup", "subset": "sst2"}, "apply to data.task='text'"),
        ({"task": "text", "source": "x", "subset": " "}, "data.subset must be a name or null"),
        ({"task": "text", "source": "x", "revision": ""}, "data.revision must be a name or null"),
        ({"task": "text", "source": "x", "long_test_factor": 2}, "synthetic tasks"),
        ({"min_len": 9, "max_len": 8}, "data.min_len=9 is larger than data.max_len=8"),
        ({"n_pairs": 9, "n_keys": 8}, "data.n_pairs=9 must be in [2, data.n_keys=8]"),
    ],
)
def test_cross_field_rules(kw: dict, expect: str) -> None:
    with pytest.raises(ConfigError) as info:
        DataConfig(**kw)
    assert expect in str(info.value)
