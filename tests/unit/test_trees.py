"""flatten: nested mappings as dotted keys, one rule for empty mappings (ablate/trees.py)."""

from __future__ import annotations

from types import MappingProxyType

from ablate.experiments.schema.config import TrainConfig
from ablate.trees import flatten


def test_nested_mappings_become_dotted_keys_in_order() -> None:
    tree = {"b": {"y": 1, "x": {"deep": 2}}, "a": 3, 4: {"k": [5]}}
    assert flatten(tree) == {"b.y": 1, "b.x.deep": 2, "a": 3, "4.k": [5]}
    assert list(flatten(tree)) == ["b.y", "b.x.deep", "a", "4.k"]
    assert flatten(MappingProxyType({"m": MappingProxyType({"n": 1})})) == {"m.n": 1}


def test_an_empty_mapping_is_a_value_at_every_level() -> None:
    """The one rule: ``{}`` is never dropped (a variant without overrides is still named; a key
    that holds {} differs from one that is absent)."""
    assert flatten({"variants": {"baseline": {}, "no_pe": {"model": {"pe": "none"}}}}) == {
        "variants.baseline": {},
        "variants.no_pe.model.pe": "none",
    }
    assert flatten({"a": {}}) == {"a": {}} and flatten({}) == {}
    assert flatten({"a": {}}) != flatten({})


def test_depth_joins_that_many_levels_and_leaves_deeper_mappings_whole() -> None:
    tree = {"model": {"d_model": 64, "options": {"scale": 2}}, "seed": 0}
    assert flatten(tree, depth=1) == {"model.d_model": 64, "model.options": {"scale": 2}, "seed": 0}
    assert flatten(tree, depth=0) == tree
    assert flatten(tree, depth=5) == flatten(tree)


def test_a_train_configs_flat_keys_are_its_dotted_override_keys() -> None:
    cfg = TrainConfig()
    flat = cfg.flat()
    # section.field, and one key per option of a component (model.attention_options.n_kv_heads)
    options = {k for k in flatten(cfg.to_dict(), depth=1) if k.endswith("_options")}
    assert {k: v for k, v in flat.items() if k.rpartition(".")[0] not in options} == {
        k: v for k, v in flatten(cfg.to_dict(), depth=1).items() if k not in options or not v
    }
    assert flat["model.attention_options.n_kv_heads"] is None
    assert flat["model.d_model"] == cfg.model.d_model and flat["seed"] == cfg.seed
    assert all(key.count(".") <= 1 or key.split(".")[1].endswith("_options") for key in flat)
    assert cfg.override({"model.d_model": 32}).flat()["model.d_model"] == 32
