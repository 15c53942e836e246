"""The conformance kit (lit_modules/components/conformance*.py): each check catches its own broken
plugin and nothing else does (broken_plugins.py), the checks run cause first, and the shipped
examples (examples/*.py) keep every contract, through ``ablate check-component`` itself."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ablate import testing
from ablate.cli import main
from ablate.experiments.specs.spec_file import load_spec
from ablate.lit_modules.components import plugins
from ablate.lit_modules.model import kinds
from tests.helpers.paths import REPO
from tests.helpers.registry import isolated_registry

BROKEN = Path(__file__).with_name("broken_plugins.py")
EXAMPLES = REPO / "examples"
# (kind, name, plugin file, spec file) of each shipped example.
SHIPPED = [
    ("norm", "scalenorm", "scalenorm.py", "scalenorm.yaml"),
    ("attention", "qknorm", "qknorm.py", "qknorm.yaml"),
    ("positional", "t5-bias", "t5bias.py", "t5bias.yaml"),
]
RANDOMNESS = "keyed randomness, stack independence"


@pytest.fixture
def isolated() -> Iterator[None]:
    with isolated_registry():
        yield


@pytest.fixture(scope="module")
def broken() -> Iterator[ModuleType]:
    """broken_plugins.py imported as a plugin file, as ``--plugins`` imports a user's."""
    with isolated_registry():
        yield plugins.import_plugin(str(BROKEN))


@functools.cache
def results(name: str) -> tuple[testing.Result, ...]:
    """The kit's results for the broken plugin ``name`` (broken_plugins.py), once per session."""
    return tuple(testing.check_component("attention", name, [str(BROKEN)]))


def fails(name: str) -> list[str]:
    """The contracts the kit FAILs for ``name``, in the order it prints them."""
    return [r.contract for r in results(name) if r.ok is False]


def test_the_reference_plugin_keeps_every_contract(broken: ModuleType) -> None:
    assert [r.contract for r in results("kit-reference")] == [
        "builds", "shapes", RANDOMNESS, "inputs unchanged", "batch independence", "padding", "permutation", "probabilities",
        "positional encodings", "head mask", "grouped-query attention", "fused vs explicit",
        "state dict", "process independence", "parameters",
    ]  # fmt: skip
    assert [r.line() for r in results("kit-reference") if r.ok is not True] == [
        "--   parameters: 4,227 in the kit's model; with the built-in 'mha': 4,227"
    ]


@pytest.mark.parametrize(
    "name",
    [
        "kit-needs-width", "kit-head-averaged", "kit-torch-dropout", "kit-leaks-padding",
        "kit-own-positions", "kit-talking-heads", "kit-ignores-rope", "kit-ignores-alibi",
        "kit-ignores-head-mask", "kit-masks-queries", "kit-ignores-kv-heads",
        "kit-fast-path-scale", "kit-unsaved-temperature", "kit-writes-input", "kit-batch-scaled",
        "kit-hash-scaled",
    ],
)  # fmt: skip
def test_each_broken_plugin_fails_exactly_the_check_that_catches_it(broken: ModuleType, name: str) -> None:
    assert fails(name) == [broken.CAUGHT_BY[name]]


def test_every_check_catches_a_broken_plugin_of_its_own(broken: ModuleType) -> None:
    """A check exists only when some plugin breaks what it checks and only it catches that."""
    checks = [r.contract for r in results("kit-reference")]
    assert set(broken.CAUGHT_BY.values()) == set(checks) - {"parameters"}  # parameters: a count


def test_the_first_fail_names_the_cause(broken: ModuleType) -> None:
    """A random draw breaks every comparison, so randomness runs before them; a plugin that
    ignores the key mask fails padding first, and not randomness (a batch without padding)."""
    assert fails("kit-draws-randn")[0] == RANDOMNESS
    assert fails("kit-ignores-key-mask") == ["padding", "probabilities"]


def test_what_the_fails_say(broken: ModuleType) -> None:
    def first(name: str) -> str:
        return next(r.line() for r in results(name) if r.ok is False)

    assert "pe rope: its output is the same as with pe none" in first("kit-ignores-rope")
    assert "q, k = pos.rotate(q, k)" in first("kit-ignores-rope")
    assert "scores + pos.bias(L, device, dtype)" in first("kit-ignores-alibi")
    assert "masking head 0 changes nothing: head_mask is ignored" in first("kit-ignores-head-mask")
    assert "with every head masked, the output still depends on the input" in first("kit-masks-queries")
    assert f"after {5} AdamW steps, layer 0:" in first("kit-talking-heads")
    assert "it ignores its n_kv_heads option" in first("kit-ignores-kv-heads")
    assert "the component alone, pe alibi: need_weights moves its output" in first("kit-fast-path-scale")
    assert "padded keys (keep False) must get no weight" in first("kit-ignores-key-mask")


@pytest.mark.parametrize(("kind", "name", "file", "spec"), SHIPPED, ids=[s[1] for s in SHIPPED])
def test_the_examples_pass_check_component(
    kind: str, name: str, file: str, spec: str, isolated: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-component", kind, name, "--plugins", str(EXAMPLES / file)]) == 0
    printed = capsys.readouterr()
    assert "FAIL" not in printed.out and f"{kind} {name}: every contract holds: exit 0" in printed.err


def test_check_component_exits_1_with_the_cause_first(
    isolated: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-component", "attention", "kit-ignores-rope", "--plugins", str(BROKEN)]) == 1
    printed = capsys.readouterr()
    assert [line for line in printed.out.splitlines() if line.startswith("FAIL")] == [
        next(line for line in printed.out.splitlines() if line.startswith("FAIL positional encodings"))
    ]
    assert "1 contract(s) broken: exit 1" in printed.err


@pytest.mark.parametrize(("kind", "name", "file", "spec"), SHIPPED, ids=[s[1] for s in SHIPPED])
def test_the_example_specs_load_their_plugin_and_name_its_component(
    kind: str, name: str, file: str, spec: str, isolated: None
) -> None:
    loaded = load_spec(EXAMPLES / spec)
    assert loaded.base.plugins == (str(EXAMPLES / file),)
    key = f"model.{kinds.CONFIG_KEYS[kind]}"
    assert any(overrides.get(key) == name for overrides in loaded.variants.values())
