"""Hardening, third round (issue 25): no results mixed, no hang, no traceback, bounded input.

Each class found by the red team has a case here that failed on the code before the fix. The
catalog runs ``cli.main`` in a forked child and checks exit 2, the message, and that the working
folder is byte for byte what it was (tests/unit/cli/test_hardening.py's harness); the rest are units.
The process-level classes (the database password, a changed data file, --retry-failed, the worker
cap) are tests/e2e/test_secrets.py and tests/e2e/test_hardening3.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from sqlalchemy.exc import OperationalError

from ablate.errors import ConfigError, short
from ablate.experiments.schema.parsing import check_size
from ablate.experiments.specs.loading import read_yaml
from ablate.files import atomic_dir
from ablate.sweeps.ledger.storage import one_line
from tests.helpers.configs import TINY_BASE
from tests.helpers.forked import run_forked
from tests.unit.cli.test_hardening import SPEC, SWEEP, Case, prepare_case, snapshot


def bomb(levels: int = 10, width: int = 10) -> str:
    """The red team's alias bomb: width^levels leaves from a few hundred bytes of YAML."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nmodel: *a{levels - 1}\n"


def spec(**extra: object) -> dict[str, str]:
    body = {"name": "tiny", "base": TINY_BASE, "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}}
    return {"tiny.yaml": yaml.safe_dump({**body, "seeds": 1, "heatmap_seeds": [0], **extra})}


SEARCH_FOLDER = {
    "runs/tiny-search": None,
    "runs/tiny-search/run.json": json.dumps({"kind": "search", "study": "tiny"}),
    "runs/tiny-search/spec.json": json.dumps({"name": "tiny"}),
}

CASES: dict[str, Case] = {
    # --- results mixed or overwritten without notice -------------------------------------------
    "spec-named-like-a-search-folder": Case(
        SWEEP,
        ["runs/tiny-search is the search of 'tiny', not the sweep of 'tiny-search'"],
        {**SEARCH_FOLDER, **spec(name="tiny-search")},
    ),
    "sweep-into-a-folder-that-is-not-a-run-folder": Case(
        SWEEP,
        ["runs/tiny exists, is not empty and is not a run folder"],
        {**SPEC, "runs/tiny": None, "runs/tiny/report.md": "my own notes\n"},
    ),
    # --- names with control characters ---------------------------------------------------------
    "name-with-a-trailing-newline": Case(
        ["sweep", "tiny.yaml", "--runs", "runs"], ["name='nl\\n'"], spec(name="nl\n")
    ),
    "variant-name-with-a-newline": Case(
        ["sweep", "tiny.yaml", "--runs", "runs"],
        ["variant name 'v\\n' is not valid"],
        spec(variants={"baseline": {}, "v\n": {"model.pe": "none"}}),
    ),
    # --- input bounded in time and memory --------------------------------------------------------
    "alias-bomb-config": Case(
        ["train", "bomb.yaml"], ["expands to more than 100,000 values"], {"bomb.yaml": bomb()}
    ),
    "alias-bomb-spec": Case(
        ["sweep", "tiny.yaml"], ["expands to more than 100,000 values"], {"tiny.yaml": bomb() + "name: x\n"}
    ),
    "recursive-alias": Case(
        ["train", "rec.yaml"], ["a value contains itself"], {"rec.yaml": "model: &a [*a]\n"}
    ),
    "config-is-dev-zero": Case(["train", "/dev/zero"], ["/dev/zero is not a regular file"]),
    "huge-config-file": Case(
        ["train", "big.yaml"], ["a config or spec holds at most 1,048,576"], {"big.yaml": "# x\n" * 300_000}
    ),
    # --- failures found late -------------------------------------------------------------------
    "impossible-variant-refused-before-any-run-folder": Case(
        ["sweep", "tiny.yaml", "--runs", "runs", "--no-wandb"],
        ["variant 'lookup8'", "task 'lookup' has 2 * n_pairs = 16 tokens > data.max_len=8"],
        spec(
            variants={
                "baseline": {},
                "lookup8": {"data.task": "lookup", "data.max_len": 8, "data.min_len": 2},
            }
        ),
    ),
    "model-too-large-for-this-machine": Case(
        ["sweep", "tiny.yaml", "--runs", "runs", "--no-wandb"],
        ["variant 'huge'", "GiB to train", "lower data.batch_size"],
        spec(
            variants={
                "baseline": {},
                "huge": {"model.d_model": 8192, "model.n_layers": 256, "model.d_ff": 8192},
            }
        ),
    ),
    "attention-too-long-for-this-machine": Case(
        [
            "train",
            "tiny.yaml",
            "data.task=text",
            "data.source=d.csv",
            "data.max_len=65536",
            "data.batch_size=64",
        ],
        ["GiB to train", "64 x 65536 tokens"],
        {"tiny.yaml": yaml.safe_dump(TINY_BASE), "d.csv": "sentence,label\na,0\nb,1\n"},
    ),
    # --- messages --------------------------------------------------------------------------------
    "loss-maximized": Case(
        SWEEP,
        ["metric 'test/loss' is a loss: lower is better, so direction must be 'minimize'"],
        spec(metric="test/loss"),
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, case: Case) -> None:
    prepare_case(tmp_path, case)
    before = snapshot(tmp_path)
    ran = run_forked(case.argv, tmp_path, timeout=60)
    assert ran.returncode == 2, f"exit {ran.returncode}\nstdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"
    assert "Traceback" not in ran.stderr
    message = " ".join(ran.stderr.split())
    for part in case.expect:
        assert part in message, f"{part!r} not in stderr:\n{ran.stderr}"
    assert snapshot(tmp_path) == before


def test_the_alias_bomb_is_refused_in_under_a_second(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(bomb())
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="expands to more than"):
        read_yaml(tmp_path / "bomb.yaml")
    assert time.perf_counter() - start < 1.0


def test_the_size_check_counts_every_alias_use_once_per_reference() -> None:
    leaf: list[int] = [1, 2, 3]
    shared = [leaf] * 10  # 1 + 10 x (1 + 3) = 41 values, 2 distinct containers
    assert check_size(shared, "x", limit=41) is shared
    with pytest.raises(ConfigError, match="more than 40 values"):
        check_size(shared, "x", limit=40)
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ConfigError, match="contains itself"):
        check_size({"a": looped}, "x")


def test_short_messages_cost_the_same_for_huge_values() -> None:
    nested: list[object] = ["x"] * 10
    for _ in range(9):
        nested = [nested] * 10  # 10^10 leaves: repr() would never return
    start = time.perf_counter()
    text = short(nested)
    assert time.perf_counter() - start < 0.1 and len(text) <= 60
    assert short("a" * 400).endswith("(402 chars)")


def test_a_storage_error_is_one_line_with_the_password_masked() -> None:
    err = OperationalError(
        "SELECT 1",
        {},
        Exception('connection to server at "db" failed: FATAL: no such user\npostgresql://u:pw@db/x'),
    )
    text = one_line(err)
    assert "\n" not in text and "pw" not in text and "u:***@db" in text and "SELECT" not in text


def test_a_second_train_into_the_same_folder_is_refused_before_it_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic_dir(out, claim=True) as tmp:
        with (
            pytest.raises(ConfigError, match="is being written by another process"),
            atomic_dir(out, claim=True),
        ):
            pass
        (tmp / "metrics.json").write_text("{}")
    assert (out / "metrics.json").is_file() and not list(tmp_path.glob(".out.claim"))


def test_train_into_a_symlink_writes_through_it(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with atomic_dir(tmp_path / "link", claim=True) as tmp:
        (tmp / "metrics.json").write_text("{}")
    assert (tmp_path / "real" / "metrics.json").is_file() and (tmp_path / "link").is_symlink()


def test_a_folder_filled_while_training_keeps_the_results_aside(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with (
        pytest.raises(ConfigError, match="filled up while this ran; the results are in"),
        atomic_dir(out) as tmp,
    ):
        (tmp / "metrics.json").write_text("{}")
        out.mkdir()
        (out / "theirs.txt").write_text("x")
    (kept,) = tmp_path.glob("out.unpublished-*")
    assert (kept / "metrics.json").is_file() and (out / "theirs.txt").is_file()
