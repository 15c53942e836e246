"""A component's own options (kinds.options, registry.resolve_options): set under one key per
kind (``model.<key>_options``), checked by type and range, filled in with their defaults, swept as
variants, part of the identity; the built-ins' options keep their older keys."""

from __future__ import annotations

import pytest
import torch

from ablate.errors import ConfigError
from ablate.experiments.schema.config import TrainConfig, without_later_defaults
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.model.registry import get
from tests.helpers.paths import REPO

SCALENORM = str(REPO / "examples" / "scalenorm.py")


def config(*overrides: str, plugins: tuple[str, ...] = ()) -> TrainConfig:
    return TrainConfig.from_dict({"plugins": list(plugins)}).override(list(overrides))


def test_a_plugin_norms_option_is_swept_as_two_variants() -> None:
    base = config("model.norm_layer=scalenorm", "model.d_model=16", "model.n_heads=2", plugins=(SCALENORM,))
    assert base.model.norm_layer_options == {"eps": 1e-5}  # filled in: the resolved config shows it
    spec = ExperimentSpec(
        name="eps",
        base=base,
        variants={
            "baseline": {"model.norm_layer_options.eps": 1e-3},
            "tiny": {"model.norm_layer_options.eps": 1e-8},
        },
        seeds=(0,),
        heatmap_seeds=(),
    )
    eps = {v: spec.cell_config(v, 0).model.options("norm").eps for v in spec.variants}
    assert eps == {"baseline": 1e-3, "tiny": 1e-8}
    built = EncoderClassifier(spec.cell_config("tiny", 0).model, vocab_size=10, n_classes=2)
    assert built.blocks[0].norm1.eps == 1e-8  # the component reads it
    assert spec.cell_config("tiny", 0).flat()["model.norm_layer_options.eps"] == 1e-8  # W&B, CSV

    # Part of the identity: another default is another study.
    def study(b: TrainConfig) -> str:
        return ExperimentSpec(
            name="eps", base=b, variants={"baseline": {}}, seeds=(0,), heatmap_seeds=()
        ).identity()

    assert study(base.override(["model.norm_layer_options.eps=1e-4"])) != study(base)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["model.pe=rope", "model.pe_options.bse=3"],
            r"model.pe_options.bse .*model.pe='rope'; its options: base",
        ),
        (["model.norm_layer_options.eps=1e-3"], r"model.norm_layer='layernorm'; it has no options"),
        (
            ["model.pe=rope", "model.pe_options.base=0"],
            r"model.pe_options.base=0.0 is out of range; valid: \[1, ",
        ),
        (
            ["model.pe=alibi", "model.pe_options.form=left"],
            r"'left' is not a valid choice; choose one of 'symmetric'",
        ),
        (["model.d_model.x=1"], r"only a component's options"),
    ],
)
def test_a_bad_option_names_the_valid_ones(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(*overrides)


def test_an_option_of_another_component_is_refused() -> None:
    """``n_kv_heads`` is mha's option: with an attention that has no such option it is an error
    (it used to be ignored silently)."""
    from torch import nn

    from ablate import components
    from ablate.lit_modules.model import kinds

    @components.register("attention", "test_no_options")
    class NoOptions(nn.Module):  # an attention without options, for this test only
        def __init__(self, cfg) -> None:
            super().__init__()

    try:
        with pytest.raises(
            ConfigError,
            match=r"model.attention_options.n_kv_heads of the attention component model.attention='test_no_options'",
        ):
            config("model.attention=test_no_options", "model.n_kv_heads=2")
    finally:
        del kinds.TABLES["attention"]["test_no_options"]


def test_older_keys_are_the_options_they_became() -> None:
    assert config("model.n_kv_heads=2") == config("model.attention_options.n_kv_heads=2")
    assert config("model.n_kv_heads=2").model.kv_heads == 2
    assert config("model.pe=alibi", "model.alibi=directional") == config(
        "model.pe=alibi", "model.pe_options.form=directional"
    )
    assert config("model.norm=post") == config("model.block=post")
    # In a file: both names with two values is one of them too many.
    with pytest.raises(ConfigError, match="model.norm is the older name of model.block"):
        TrainConfig.from_dict({"model": {"norm": "post", "block": "pre"}})
    with pytest.raises(ConfigError, match="older name of model.attention_options.n_kv_heads"):
        TrainConfig.from_dict({"model": {"n_kv_heads": 2, "attention_options": {"n_kv_heads": 1}}})
    # What a study recorded before the options existed still reads: alibi symmetric beside another pe.
    old = TrainConfig.from_dict({"model": {"alibi": "symmetric", "n_kv_heads": None, "norm": "post"}})
    assert old == config("model.block=post")


def test_the_identity_keeps_the_first_recorded_names() -> None:
    """At the defaults the identity's base is the one studies recorded before the options and the
    block kind existed (model.norm, model.alibi; no options), so they still resume."""
    model = without_later_defaults(config().to_dict())["model"]
    assert model["norm"] == "pre" and model["alibi"] == "symmetric" and "block" not in model
    assert not [k for k in model if k.endswith("_options")]
    gqa = without_later_defaults(config("model.attention_options.n_kv_heads=2").to_dict())["model"]
    assert gqa["n_kv_heads"] == 2 and "attention_options" not in gqa
    rope = without_later_defaults(config("model.pe=rope", "model.pe_options.base=500").to_dict())["model"]
    assert rope["pe_options"] == {"base": 500.0}


def test_rope_base_is_its_option() -> None:
    def rotated(*overrides: str) -> torch.Tensor:
        cfg = config("model.pe=rope", *overrides).model
        q = torch.ones(1, cfg.n_heads, 5, cfg.head_dim)
        return get("positional", "rope")(cfg).rotate(q, q)[0]

    default, again, other = (
        rotated(),
        rotated("model.pe_options.base=10000"),
        rotated("model.pe_options.base=100"),
    )
    assert torch.equal(default, again) and not torch.allclose(default, other)


def test_check_component_shows_the_options() -> None:
    from ablate.lit_modules.components import conformance

    first = conformance.check("positional", "rope")[0]
    assert first.ok and "its options (model.pe_options): base=10000.0" in first.detail
