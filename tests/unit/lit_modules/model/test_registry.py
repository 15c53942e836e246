"""The registries by kind (lit_modules/model/registry.py, ``ablate.components``): a kind that is
not one is a ConfigError naming the kinds, and reading results (``reading()``) builds configs that
name components this process has not registered."""

from __future__ import annotations

import pytest

from ablate import components
from ablate.errors import ConfigError
from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig

KINDS = "the kinds are positional, attention, norm, ffn, block, pooling"


@pytest.mark.parametrize(
    "call",
    [
        lambda: components.get("head", "linear"),
        lambda: components.names("head"),
        lambda: registry.is_builtin("head", "linear"),
    ],
    ids=["get", "names", "is_builtin"],
)
def test_an_unknown_kind_names_the_kinds(call) -> None:
    with pytest.raises(ConfigError, match=rf"unknown component kind 'head'; {KINDS}"):
        call()


def test_reading_accepts_a_component_that_is_not_registered() -> None:
    with pytest.raises(ConfigError, match="model.norm_layer='someone_elses' is not a registered norm"):
        ModelConfig(norm_layer="someone_elses")
    assert not registry.is_reading()
    with registry.reading():
        assert registry.is_reading()
        assert ModelConfig(norm_layer="someone_elses").norm_layer == "someone_elses"
    assert not registry.is_reading()
