"""op_trace: one training step's ATen outputs recorded, and two traces' first difference named."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from ablate.benchmarks import op_trace
from tests.helpers.configs import TINY_BASE


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cfg") / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY_BASE))
    return str(path)


@pytest.fixture(scope="module")
def ops(tiny: str) -> list:
    return op_trace.trace(tiny, [])


def test_a_step_is_traced_in_all_three_phases_and_twice_the_same(tiny: str, ops: list) -> None:
    phases = [op[0] for op in ops]
    assert phases.index("forward") < phases.index("backward") < phases.index("optimizer")
    names = {op[1] for op in ops}
    assert {"embedding", "addmm"} & names and any("foreach" in n or "add" in n for n in names)
    assert op_trace.first_difference(ops, op_trace.trace(tiny, [])) is None


def test_another_seed_parts_at_the_first_op_it_changes(tiny: str, ops: list) -> None:
    other = op_trace.trace(tiny, ["seed=1"])
    diff = op_trace.first_difference(ops, other)
    assert diff is not None and diff["kind"] == "other bits"
    assert all(a[4] == b[4] for a, b in zip(ops[: diff["index"]], other[: diff["index"]], strict=True))
    assert ops[diff["index"]][4] != other[diff["index"]][4]
    assert "every earlier output bit-identical" in op_trace.describe(diff, len(other))


def test_a_doctored_op_is_named_with_the_count_that_differs(ops: list) -> None:
    k = next(i for i, op in enumerate(ops) if op[0] == "backward")
    doctored = copy.deepcopy(ops)
    for op in doctored[k : k + 3]:
        op[4] = "0" * 16
    diff = op_trace.first_difference(ops, doctored)
    assert diff["index"] == k and diff["n_differ"] == 3 and diff["by_phase"]["backward"] >= 1
    assert f"op {k} of {len(ops)} (backward: {ops[k][1]}" in op_trace.describe(diff, len(ops))
    renamed = copy.deepcopy(ops)
    renamed[k][1] = "mm_other"
    assert op_trace.first_difference(ops, renamed)["kind"] == "another op sequence"
    assert op_trace.first_difference(ops, ops[:-1])["kind"] == "another op count"


def test_the_command_writes_compares_and_refuses_another_task(
    tiny: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.json"
    assert op_trace.main(["--config", tiny, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["cpu_isa"] == "native" and doc["threads"] == 1 and doc["numerics"]["torch"]
    assert op_trace.main(["--config", tiny, "--against", str(out)]) == 0
    assert "identical: all" in capsys.readouterr().out
    assert op_trace.main(["--config", tiny, "seed=2", "--against", str(out)]) == 1
    assert "first difference at op" in capsys.readouterr().out
    doc["task"] = "order-only"
    out.write_text(json.dumps(doc))
    assert op_trace.main(["--config", tiny, "--against", str(out)]) == 2
    assert "traces order-only" in capsys.readouterr().err
