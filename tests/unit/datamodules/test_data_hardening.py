"""Data hardening: the class-label rule, hostile files and folders, the cache folder, quiet
``datasets``, and hub data sets (subset, revision, unlabelled test splits) in the hub's own on-disk
formats, since the hub itself cannot be reached from the test machines. The DataConfig ranges are
tested in test_data.py."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from ablate.datamodules import ClassificationDataModule, DataError, datamodule, sources
from ablate.datamodules.config import DataConfig
from ablate.datamodules.datamodule import cache_key
from tests.helpers.forked import Case, assert_failed_cleanly, prepare, run_forked
from tests.helpers.logs import unconfigured_logging

ROWS = "".join(f"w{i} film number {i},{i % 2}\n" for i in range(40))
CSV = "sentence,label\n" + ROWS


def load(tmp_path: Path, source: str | Path, **kw: object) -> ClassificationDataModule:
    dm = ClassificationDataModule(
        DataConfig(task="text", source=str(source), cache_dir=str(tmp_path / "cache"), **kw)
    )
    dm.setup()
    return dm


def assert_cache_clean(tmp_path: Path) -> None:
    """A refused input leaves no cache entry and no temp folder (the hf/ arrow cache aside)."""
    cache = tmp_path / "cache"
    left = [p.name for p in cache.iterdir() if p.name != "hf"] if cache.is_dir() else []
    assert left == []


# --- labels ----------------------------------------------------------------------------------


def rows(labels: list[object]) -> str:
    return "sentence,label\n" + "".join(f"w{i} words here,{v}\n" for i, v in enumerate(labels))


LABEL_CASES = {
    "gap-0-2": (rows([0, 2] * 20), ["the train labels are {0, 2}", "1 of the ids 0..2 missing: {1}"]),
    "only-5": (rows([5] * 40), ["the train labels are {5}", "only one class", "0..C-1 with C >= 2"]),
    "only-0": (rows([0] * 40), ["the train labels are {0}", "only one class"]),
    "huge-label": (
        rows([0, 1, 1_000_000_000] * 14),
        ["{0, 1, 1000000000}", "999,999,998 of the ids 0..1000000000 missing: {2, 3, 4"],
    ),
    "mixed-minus-one": (rows([0, 1, -1] + [0, 1] * 20), ["line 4: label -1 is negative", "all -1"]),
    "train-all-minus-one": (rows([-1] * 40), ["every label is -1; the train split needs labels"]),
    "float-label": (rows([0, 1, 1.5] + [0, 1] * 20), ["line 4: label '1.5'", "not an integer"]),
}


@pytest.mark.parametrize("case", LABEL_CASES)
def test_labels_must_be_class_ids_0_to_c_minus_1(tmp_path: Path, case: str) -> None:
    content, expect = LABEL_CASES[case]
    (tmp_path / "d.csv").write_text(content)
    with pytest.raises(DataError) as info:
        load(tmp_path, tmp_path / "d.csv")
    for part in expect:
        assert part in str(info.value), str(info.value)
    assert str(tmp_path / "d.csv") in str(info.value)
    assert_cache_clean(tmp_path)


def test_class_count_is_the_number_of_classes(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text(rows([0, 1, 2, 3] * 25))
    assert load(tmp_path, tmp_path / "d.csv", val_fraction=0.1).n_classes == 4


def test_a_validation_class_absent_from_train_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.csv").write_text(rows([0, 1] * 20))
    (folder / "dev.csv").write_text(rows([0, 1, 2]))
    (folder / "test.csv").write_text(rows([0, 1]))
    with pytest.raises(DataError, match=r"dev\.csv line 4: label 2 in validation does not occur in train"):
        load(tmp_path, folder)


# --- files and folders -----------------------------------------------------------------------

FILE_CASES: dict[str, tuple[dict[str, str | bytes], str, list[str]]] = {
    # name: (files, source relative to tmp_path, expected parts of the message)
    "csv-50-mb-line": (
        {"d.csv": CSV + "x" * (50 * 2**20) + ",1\n"},
        "d.csv",
        ["d.csv line 42", "longer than 4,000,006 characters", "at most 1,000,000 characters"],
    ),
    "csv-quoted-field-over-limit-across-lines": (
        {"d.csv": CSV + '"' + ("x" * 999 + "\n") * 1001 + '",1\n'},
        "d.csv",
        ["d.csv line 1042", "field larger than field limit", "at most 1,000,000 characters"],
    ),
    "json-text-over-limit": (
        {"d.jsonl": json.dumps({"sentence": "x" * 1_000_001, "label": 0}) + "\n"},
        "d.jsonl",
        ["d.jsonl line 1", "text of 1,000,001 characters", "at most 1,000,000"],
    ),
    "dev-null": ({}, "/dev/null", ["/dev/null is neither a regular file nor a folder"]),
    "empty-csv": ({"d.csv": ""}, "d.csv", ["d.csv: is empty"]),
    "empty-tsv": ({"d.tsv": ""}, "d.tsv", ["d.tsv: is empty"]),
    "empty-json": ({"d.json": ""}, "d.json", ["d.json: is empty"]),
    "empty-jsonl": ({"d.jsonl": ""}, "d.jsonl", ["d.jsonl: is empty"]),
    "empty-parquet": ({"d.parquet": ""}, "d.parquet", ["d.parquet: is empty"]),
    "blank-json": ({"d.json": "  \n\n"}, "d.json", ["d.json: has no rows"]),
    "empty-json-array": ({"d.json": "[]"}, "d.json", ["d.json: has no rows"]),
    "folder-without-split-files": (
        {"d/notes.txt": "hi", "d/data.csv": CSV},
        "d",
        [
            "no train file",
            "save_to_disk",
            "train-00000-of-00001.parquet",
            "the folder holds: data.csv, notes.txt",
        ],
    ),
    "empty-folder": ({"d/.keep": ""}, "d", ["no train file", "the folder holds: .keep"]),
    "folder-without-test": ({"d/train.csv": CSV}, "d", ["no test file"]),
    "csv-duplicate-column": (
        {"d.csv": "sentence,label,label\n" + "".join(f"w{i},{i % 2},0\n" for i in range(20))},
        "d.csv",
        ["d.csv line 1", "['label'] more than once", "must be unique"],
    ),
    "tsv-duplicate-column": (
        {"d.tsv": "label\tsentence\tsentence\n" + "".join(f"{i % 2}\tw{i}\tx\n" for i in range(20))},
        "d.tsv",
        ["['sentence'] more than once"],
    ),
    "jsonl-duplicate-key": (
        {"d.jsonl": '{"sentence": "a", "label": 1, "label": 0}\n'},
        "d.jsonl",
        ["d.jsonl: cannot be read as jsonl", "specified twice"],
    ),
    "text-column-missing": (
        {"d.csv": "review,label\n" + ROWS},
        "d.csv",
        ["no text column 'sentence'", "the columns are ['review', 'label']", "data.text_column"],
    ),
    "label-column-missing": (
        {"d.csv": "sentence,y\n" + ROWS},
        "d.csv",
        ["no label column 'label'", "the columns are ['sentence', 'y']", "data.label_column"],
    ),
    "not-utf8": (
        {"d.csv": ("sentence,label\n" + ROWS + "caf\xe9,1\n").encode("latin-1")},
        "d.csv",
        ["not UTF-8"],
    ),
}


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.mark.parametrize("case", FILE_CASES)
def test_bad_files_raise_data_error(tmp_path: Path, case: str) -> None:
    files, source, expect = FILE_CASES[case]
    write_files(tmp_path, files)
    with pytest.raises(DataError) as info:
        load(tmp_path, source if source.startswith("/") else tmp_path / source)
    for part in expect:
        assert part in str(info.value), str(info.value)
    assert_cache_clean(tmp_path)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-8"])
@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl"])
def test_byte_order_mark_is_stripped(tmp_path: Path, encoding: str, ext: str) -> None:
    if ext == "jsonl":
        content = "".join(json.dumps({"sentence": f"w{i} word", "label": i % 2}) + "\n" for i in range(40))
    else:
        sep = "," if ext == "csv" else "\t"
        content = f"sentence{sep}label\n" + "".join(f"w{i} word{sep}{i % 2}\n" for i in range(40))
    (tmp_path / f"d.{ext}").write_text(content, encoding=encoding)
    dm = load(tmp_path, tmp_path / f"d.{ext}")
    assert dm.n_classes == 2 and sum(len(s) for s in dm.splits.values()) == 40


def test_csv_field_limit_is_restored(tmp_path: Path) -> None:
    import csv

    before = csv.field_size_limit()
    (tmp_path / "d.csv").write_text(CSV)
    load(tmp_path, tmp_path / "d.csv")
    assert csv.field_size_limit() == before


# --- the cache folder ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cache", "expect"),
    [
        ("afile", ["data.cache_dir=", "afile is a file; it must be a folder"]),
        (
            "afile/sub",
            ["data.cache_dir=", "afile/sub: cannot create the data cache there", "Not a directory"],
        ),
        # /proc refuses new folders even to root, where a chmod-ed folder would not.
        ("/proc/ablate-cache", ["data.cache_dir=/proc/ablate-cache: cannot create the data cache there"]),
    ],
)
def test_unusable_cache_dir_is_an_error_naming_it(tmp_path: Path, cache: str, expect: list[str]) -> None:
    (tmp_path / "afile").write_text("not a folder\n")
    path = cache if cache.startswith("/") else str(tmp_path / cache)
    with pytest.raises(DataError) as info:
        ClassificationDataModule(DataConfig(n_train=50, n_val=10, n_test=10, cache_dir=path)).setup()
    for part in expect:
        assert part in str(info.value), str(info.value)
    assert (tmp_path / "afile").read_text() == "not a folder\n"


# --- hub data sets in the hub's formats ------------------------------------------------------

FEATURES = datasets.Features(
    {"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
)


def glue_like(n_train: int = 60, unlabelled: tuple[str, ...] = ("test",)) -> datasets.DatasetDict:
    """A GLUE-shaped DatasetDict: ClassLabel labels, the named splits all -1."""

    def split(name: str, n: int) -> datasets.Dataset:
        labels = [-1 if name in unlabelled else i % 2 for i in range(n)]
        texts = [f"{name} {'good' if i % 2 else 'bad'} {i}" for i in range(n)]
        return datasets.Dataset.from_dict({"sentence": texts, "label": labels}, features=FEATURES)

    return datasets.DatasetDict(
        train=split("train", n_train), validation=split("validation", 10), test=split("test", 12)
    )


def hub_repo(root: Path, dd: datasets.DatasetDict, subset: str | None = "sst2") -> Path:
    """A local copy of a hub repository: Parquet shards named as on the hub (in ``subset/`` with a
    README declaring the config, as nyu-mll/glue does), or flat without a subset."""
    shards = root / subset if subset else root
    shards.mkdir(parents=True)
    for name, ds in dd.items():
        ds.to_parquet(str(shards / f"{name}-00000-of-00001.parquet"))
    if subset:
        files = "".join(f"  - split: {s}\n    path: {subset}/{s}-*\n" for s in dd)
        (root / "README.md").write_text(
            f"---\nconfigs:\n- config_name: {subset}\n  data_files:\n{files}---\n"
        )
    return root


def saved(root: Path, dd: datasets.DatasetDict) -> Path:
    dd.save_to_disk(str(root))
    return root


@pytest.mark.parametrize("layout", ["save_to_disk", "parquet-subset", "parquet-flat"])
def test_unlabelled_test_split_falls_back_to_validation(
    tmp_path: Path, layout: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    dd = glue_like()
    extra = {"subset": "sst2"} if layout == "parquet-subset" else {}
    if layout == "save_to_disk":
        source = saved(tmp_path / "d", dd)
    else:
        source = hub_repo(tmp_path / "d", dd, subset=extra.get("subset"))
    capsys.readouterr()  # writing the fixture shows datasets' bars; loading it must not
    dm = load(tmp_path, source, **extra)
    # validation (10 rows) is the test set, 5 % of train (3 of 60 rows) the validation set.
    assert {k: len(v) for k, v in dm.splits.items()} == {"train": 57, "validation": 3, "test": 10}
    assert dm.splits["test"]["label"] == dd["validation"]["label"] and dm.n_classes == 2
    note = dm.split_note
    assert note and "split 'test' (12 rows)" in note and "every label is -1" in note
    assert "test is the source's validation split (10 rows)" in note
    assert "validation is 5% of train (3 rows)" in note
    assert capsys.readouterr().err == ""  # no bars; the warnings are log records (the CLI shows them)
    logged = [r.getMessage() for r in caplog.records if r.name == datamodule.log.name]
    assert logged[0] == f"warning: {note}"  # one line; then, once per process, the small-split warning
    assert all(line.startswith("warning: small evaluation split(s)") for line in logged[1:])
    made = {k: v["source"] for k, v in dm.split_record.items()}
    assert "split 'validation', used as test (the source has no labelled test split)" in made["test"]
    assert made["validation"].startswith("5% of ") and "(3 of its 60 rows)" in made["validation"]


def test_split_note_survives_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = saved(tmp_path / "d", glue_like())
    note = load(tmp_path, source).split_note

    def boom(*args: object) -> None:
        raise AssertionError("read again although cached")

    monkeypatch.setattr(sources, "read_source", boom)
    monkeypatch.setattr("ablate.datamodules.text.read_source", boom)
    again = load(tmp_path, source, batch_size=7)
    assert again.split_note == note is not None


def test_unlabelled_validation_is_split_off_train(tmp_path: Path) -> None:
    dm = load(tmp_path, saved(tmp_path / "d", glue_like(unlabelled=("validation",))))
    assert {k: len(v) for k, v in dm.splits.items()} == {"train": 57, "validation": 3, "test": 12}
    assert "split 'validation' (10 rows)" in dm.split_note
    assert "test is the source's test split (12 rows)" in dm.split_note


def test_unlabelled_test_and_validation_both_come_from_train(tmp_path: Path) -> None:
    dm = load(tmp_path, saved(tmp_path / "d", glue_like(unlabelled=("validation", "test"))))
    assert {k: len(v) for k, v in dm.splits.items()} == {"train": 54, "validation": 3, "test": 3}
    assert "test is 5% of train (3 rows)" in dm.split_note


def test_labelled_source_has_no_note(tmp_path: Path) -> None:
    dm = load(tmp_path, saved(tmp_path / "d", glue_like(unlabelled=())))
    assert dm.split_note is None and len(dm.splits["test"]) == 12


def test_unknown_subset_names_the_available_ones(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"BuilderConfig 'cola' not found. Available: \['sst2'\]"):
        load(tmp_path, hub_repo(tmp_path / "d", glue_like()), subset="cola")


@pytest.mark.parametrize(
    ("kw", "expect"),
    [
        ({"revision": "v1"}, "data.revision='v1' applies to hub data sets; data.source is the local folder"),
        ({"subset": "sst2"}, "data.subset='sst2' applies to hub data sets and folders in the hub's layout"),
    ],
)
def test_subset_and_revision_on_local_sources_are_refused(tmp_path: Path, kw: dict, expect: str) -> None:
    with pytest.raises(DataError, match=expect):
        load(tmp_path, saved(tmp_path / "d", glue_like()), **kw)


def test_hub_name_passes_subset_and_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fake_load_dataset(*args: object, **kw: object) -> datasets.DatasetDict:
        calls.append((args, kw))
        return glue_like()

    monkeypatch.setattr(sources.datasets, "load_dataset", fake_load_dataset)
    dm = load(tmp_path, "nyu-mll/glue", subset="sst2", revision="bcdcba79")
    assert calls == [
        (("nyu-mll/glue", "sst2"), {"revision": "bcdcba79", "cache_dir": str(tmp_path / "cache" / "hf")})
    ]
    assert "hub data set 'nyu-mll/glue' subset 'sst2' revision 'bcdcba79' split 'test'" in dm.split_note


def test_unreachable_hub_is_a_data_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: object, **kw: object) -> None:
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(sources.datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="could not load it from the Hugging Face hub: Couldn't reach"):
        load(tmp_path, "nyu-mll/glue", subset="sst2")
    assert_cache_clean(tmp_path)


def test_subset_and_revision_key_the_cache() -> None:
    base = DataConfig(task="text", source="nyu-mll/glue", subset="sst2")
    keys = {
        cache_key(base),
        cache_key(DataConfig(task="text", source="nyu-mll/glue", subset="cola")),
        cache_key(DataConfig(task="text", source="nyu-mll/glue", subset="sst2", revision="v1")),
    }
    assert len(keys) == 3


# --- no datasets noise -----------------------------------------------------------------------


def test_quiet_datasets_restores_the_settings() -> None:
    before = (datasets.utils.are_progress_bars_disabled(), datasets.logging.get_verbosity())
    with sources.quiet_datasets():
        assert datasets.utils.are_progress_bars_disabled()
    assert (datasets.utils.are_progress_bars_disabled(), datasets.logging.get_verbosity()) == before


NOISE = ("Generating", "Saving the dataset", "examples/s", "%|", "Map", "Loading")
CLI_CASES = {
    "label-gap": Case(
        ["data.task=text", "data.source=d.csv"], ["the train labels are {0, 2}"], {"d.csv": rows([0, 2] * 20)}
    ),
    "csv-50-mb-line": Case(
        ["data.task=text", "data.source=d.csv"],
        ["d.csv line 42", "longer than 4,000,006 characters"],
        {"d.csv": CSV + "x" * (50 * 2**20) + ",1\n"},
    ),
    "dev-null": Case(["data.task=text", "data.source=/dev/null"], ["neither a regular file nor a folder"]),
    "duplicate-column": Case(
        ["data.task=text", "data.source=d.csv"],
        ["more than once"],
        {"d.csv": "sentence,label,label\n" + "a,1,1\n" * 9},
    ),
    "cache-dir-is-a-file": Case(
        ["data.cache_dir=afile"], ["data.cache_dir=", "afile is a file; it must be a folder"], {"afile": "x"}
    ),
    "data-max-len-huge": Case(["data.max_len=1000000000"], ["data.max_len=1000000000", "valid: [1, 65536]"]),
    "subset-on-a-file": Case(
        ["data.task=text", "data.source=d.csv", "data.subset=sst2"], ["data.subset='sst2'"], {"d.csv": CSV}
    ),
}


@pytest.mark.parametrize("case", list(CLI_CASES.values()), ids=list(CLI_CASES))
def test_cli_data_errors_are_one_line(tmp_path: Path, case: Case) -> None:
    ran = run_forked(prepare(tmp_path, case), tmp_path)
    assert_failed_cleanly(tmp_path, ran, case)
    assert ran.stderr.startswith("error: ") and len(ran.stderr.strip().splitlines()) == 1, ran.stderr


def test_cli_text_run_writes_no_datasets_noise(tmp_path: Path) -> None:
    saved(tmp_path / "glue", glue_like())
    case = Case(["data.task=text", "data.source=glue", f"data.cache_dir={tmp_path / 'cache'}"], [])
    with unconfigured_logging():  # the child as `ablate train` runs: the warning is a log record
        ran = run_forked(prepare(tmp_path, case), tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert not any(word in ran.stderr for word in NOISE), ran.stderr
    # The note, then the small-split warning (once per process and data set: this child's first).
    lines = ran.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("warning: unlabelled split(s) not used"), lines
    assert lines[1].startswith("warning: small evaluation split(s): validation 3, test 10 examples"), lines


# --- hostile column types and line numbers (hardening, third round) ----------------------------


@pytest.mark.parametrize(
    ("name", "column", "words"),
    [
        ("list-of-strings.parquet", [["a", "b"], ["c"]] * 20, "holds lists, not strings"),
        ("numbers.parquet", [1.5, 2.5] * 20, "holds values of type float64, not strings"),
        ("objects.jsonl", [{"x": 1}, {"x": 2}] * 20, "not strings"),
    ],
)
def test_a_text_column_that_is_not_text_is_refused(
    tmp_path: Path, name: str, column: list, words: str
) -> None:
    ds = datasets.Dataset.from_dict({"sentence": column, "label": [0, 1] * 20})
    path = tmp_path / name
    if name.endswith(".parquet"):
        ds.to_parquet(str(path))
    else:
        ds.to_json(str(path))
    with pytest.raises(DataError, match=words):
        load(tmp_path, path)
    assert_cache_clean(tmp_path)


def test_line_numbers_count_the_line_breaks_inside_quoted_fields(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text(
        'sentence,label\n"a film\nin two lines",1\nw1 fine,0\n"three\nline\nsentence",1\nbad,x\n' + ROWS
    )
    with pytest.raises(DataError, match=r"d.csv line 8: label 'x'"):
        load(tmp_path, path)
