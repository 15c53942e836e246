"""Components by name (lit_modules/model/registry.py), plugins (lit_modules/components/plugins.py), the
conformance kit (lit_modules/components/conformance.py) and the modern built-ins: RMSNorm, GLU FFNs at the
MLP's parameter count, grouped-query and multi-query attention."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from ablate import components, testing
from ablate.errors import ConfigError
from ablate.experiments.schema.config import TrainConfig
from ablate.lit_modules.components import conformance, plugins
from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.model.ffn import glu_hidden

BUILTINS = [(k, n) for k in registry.KINDS for n in registry.names(k) if registry.is_builtin(k, n)]

GOOD = """
import torch
from torch import nn
from ablate import components

@components.register("norm", "{name}")
class Good(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cfg.d_model))
    def forward(self, x):
        return self.weight * x / x.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()
"""
RANDOM = GOOD.replace(
    "return self.weight", "x = x + torch.rand_like(x) * self.training\n        return self.weight"
)
# Statistics over the whole sequence: the padding reaches every position.
PADDED = GOOD.replace("x.pow(2).mean(-1, keepdim=True)", "x.pow(2).mean((1, 2), keepdim=True)")


def plugin(tmp_path: Path, name: str, source: str = GOOD) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source.format(name=name)))
    return str(path)


def test_builtins_are_registered_by_their_own_modules() -> None:
    assert registry.names("positional") == ["alibi", "learned", "none", "rope", "sinusoidal"]
    assert {"layernorm", "rmsnorm"} <= set(registry.names("norm"))
    assert {n for k, n in BUILTINS if k == "ffn"} == {"mlp", "glu"} and ("attention", "mha") in BUILTINS
    for kind, name in BUILTINS:
        assert registry.get(kind, name).__module__ in registry.builtin_modules()


@pytest.mark.parametrize(("kind", "name"), BUILTINS, ids=[f"{k}-{n}" for k, n in BUILTINS])
def test_every_builtin_keeps_every_contract(kind: str, name: str) -> None:
    results = conformance.check(kind, name)
    attention = ["probabilities", "positional encodings", "head mask", "grouped-query attention"]
    assert [r.contract for r in results] == [
        "builds", "shapes", "keyed randomness, stack independence", "inputs unchanged",
        "batch independence", "padding", "permutation",
        *(attention if kind == "attention" else []), "fused vs explicit", "state dict",
        "process independence", "parameters",
    ]  # fmt: skip
    assert not [r.line() for r in results if r.ok is False]
    # a built-in is registered in every fresh process: the process check runs, it is not skipped
    assert next(r for r in results if r.contract == "process independence").ok is True
    permutation = next(r for r in results if r.contract == "permutation")
    # Only an order-free encoding is checked for permutation invariance among the positionals.
    assert (permutation.ok is None) == (kind == "positional" and name != "none")


def test_the_kit_names_the_broken_contract(tmp_path: Path) -> None:
    def broken(source: str, name: str) -> list[str]:
        return [
            r.contract
            for r in testing.check_component("norm", name, [plugin(tmp_path, name, source)])
            if r.ok is False
        ]

    assert broken(GOOD, "good_norm") == []
    assert broken(RANDOM, "random_norm") == ["keyed randomness, stack independence"]
    assert broken(PADDED, "padded_norm") == ["padding"]
    with pytest.raises(AssertionError, match="random_norm' breaks:\nFAIL keyed randomness"):
        testing.assert_conforms("norm", "random_norm")


def test_register_refuses_bad_kinds_names_and_a_second_class() -> None:
    with pytest.raises(
        ConfigError,
        match="unknown kind 'head'; the kinds are positional, attention, norm, ffn, block, pooling",
    ):
        components.register("head", "x")
    with pytest.raises(ConfigError, match="a name is lower-case"):
        components.register("norm", "Scale Norm")

    @components.register("norm", "twice_test")
    class First(nn.Module):
        pass

    with pytest.raises(ConfigError, match="registered twice"):

        @components.register("norm", "twice_test")
        class Second(nn.Module):
            pass

    assert components.register("norm", "twice_test")(First) is First  # the same class again: fine


def test_an_unknown_name_lists_what_is_registered() -> None:
    with pytest.raises(
        ConfigError, match=r"model.ffn='moe' is not a registered ffn component; registered: glu, mlp"
    ):
        ModelConfig(ffn="moe")
    with pytest.raises(
        ConfigError,
        match=r"unknown option\(s\) model.pe_options.form of the positional component model.pe='sinusoidal'; it has no options",
    ):
        ModelConfig(pe_options={"form": "directional"})
    with pytest.raises(ConfigError, match="needs an even head_dim"):
        ModelConfig(pe="rope", d_model=12, n_heads=4)


def test_a_plugin_file_registers_in_a_config_and_is_recorded(tmp_path: Path) -> None:
    path = plugin(tmp_path, "file_norm")
    cfg = TrainConfig.from_dict({"plugins": [path], "model": {"norm_layer": "file_norm"}})
    assert cfg.plugins == (path,) and cfg.to_dict()["plugins"] == [path]
    m = EncoderClassifier(cfg.model, vocab_size=10, n_classes=2)
    assert type(m.blocks[0].norm1).__name__ == "Good"
    rec = plugins.record(path)
    assert rec["name"] == path and rec["file"] == path and rec["distribution"] is None
    before = rec["sha256"]
    Path(path).write_text(Path(path).read_text() + "# changed\n")
    assert plugins.source_hash(sys.modules[rec["module"]]) != before  # the identity sees an edit


def test_plugin_errors_name_the_plugin(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"plugin .*nowhere.py: file not found"):
        TrainConfig.from_dict({"plugins": [str(tmp_path / "nowhere.py")]})
    (tmp_path / "broken.py").write_text("raise RuntimeError('half written')\n")
    with pytest.raises(ConfigError, match=r"broken.py failed to import: RuntimeError: half written"):
        plugins.import_plugin(str(tmp_path / "broken.py"))
    with pytest.raises(ConfigError, match=r"plugin 'no_such_module_xyz': no such module"):
        plugins.import_plugin("no_such_module_xyz")


def test_installed_entry_points_are_loaded_when_a_name_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package that declares ``ablate.components`` needs no plugins: line."""
    (tmp_path / "ep_norms.py").write_text(GOOD.format(name="ep_norm"))
    dist = tmp_path / "ep_norms-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-norms\nVersion: 1.2\n")
    (dist / "entry_points.txt").write_text("[ablate.components]\nnorms = ep_norms\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry._state, "entry_points", False)
    monkeypatch.setattr(registry, "_entry_points", [])
    assert ModelConfig(norm_layer="ep_norm").norm_layer == "ep_norm"
    assert [ep.value for ep in registry.loaded_entry_points()] == ["ep_norms"]


# ---- the modern built-ins ---------------------------------------------------------------------


def params(**over: object) -> int:
    return sum(
        p.numel() for p in EncoderClassifier(ModelConfig(**over), vocab_size=50, n_classes=2).parameters()
    )


@pytest.mark.parametrize(("d_model", "d_ff"), [(64, 128), (16, 24), (128, 512), (10, 7)])
def test_glu_has_the_mlp_parameter_count_to_one_hidden_unit(d_model: int, d_ff: int) -> None:
    """Shazeer 2020's 2/3 rule with biases: h = round(d_ff (2d + 1) / (3d + 2)); the counts differ
    by at most half a hidden unit's parameters (3d + 2), per block."""
    mlp = params(d_model=d_model, n_heads=2, d_ff=d_ff, n_layers=1)
    glu = params(d_model=d_model, n_heads=2, d_ff=d_ff, n_layers=1, ffn="glu", activation="silu")
    assert abs(glu - mlp) <= (3 * d_model + 2) / 2
    assert glu_hidden(64, 128) == 85 and abs(glu_hidden(64, 128) - 2 * 128 / 3) < 1


def test_swiglu_computes_silu_gate_times_up() -> None:
    torch.manual_seed(0)
    ffn = registry.get("ffn", "glu")(ModelConfig(ffn="glu", activation="silu", dropout=0.0))
    x = torch.randn(2, 3, 64)
    want = ffn.down(nn.functional.silu(ffn.gate(x)) * ffn.up(x))
    torch.testing.assert_close(ffn(x), want)


def test_rmsnorm_is_x_over_its_rms_times_a_gain() -> None:
    norm = registry.get("norm", "rmsnorm")(ModelConfig(norm_layer="rmsnorm"))
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(2, 5, 64)
    want = x / x.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt() * norm.weight
    torch.testing.assert_close(norm(x), want)
    assert sum(p.numel() for p in norm.parameters()) == 64  # a gain, no bias


@pytest.mark.parametrize("kv", [4, 2, 1])
def test_grouped_query_attention_shares_key_value_heads(kv: int) -> None:
    """n_kv_heads key-value heads, each serving n_heads / n_kv_heads query heads; probabilities
    still per query head; the projection shrinks by the key-value heads it drops."""
    cfg = ModelConfig(n_heads=4, attention_options={"n_kv_heads": kv}, attn_impl="eager", dropout=0.0)
    torch.manual_seed(0)
    attn = registry.get("attention", "mha")(cfg).eval()
    assert attn.qkv.weight.shape == (64 + 2 * kv * 16, 64)
    x = torch.randn(2, 6, 64)
    keep = torch.ones(2, 6, dtype=torch.bool)
    pos = registry.get("positional", "none")(cfg)
    y, probs = attn(x, keep, pos, need_weights=True)
    assert probs.shape == (2, 4, 6, 6)
    qkv = attn.qkv(x).view(2, 6, 4 + 2 * kv, 16).transpose(1, 2)
    q, k, v = qkv[:, :4], qkv[:, 4 : 4 + kv], qkv[:, 4 + kv :]
    heads = []
    for h in range(4):  # query head h reads key-value head h // (4 / kv)
        g = h // (4 // kv)
        p = (q[:, h] @ k[:, g].transpose(-1, -2) / math.sqrt(16)).softmax(-1)
        torch.testing.assert_close(probs[:, h], p)
        heads.append(p @ v[:, g])  # (2, 6, 16)
    torch.testing.assert_close(y, attn.out(torch.cat(heads, dim=-1)))
    fused = registry.get("attention", "mha")(
        ModelConfig(n_heads=4, attention_options={"n_kv_heads": kv})
    ).eval()
    fused.load_state_dict(attn.state_dict())
    torch.testing.assert_close(fused(x, keep, pos)[0], y, atol=1e-5, rtol=1e-5)


def test_the_default_mha_is_the_standard_projection() -> None:
    """n_kv_heads null: one key-value head per query head, torch's (D, 3D) in_proj shape, so existing
    configs build the same weights in the same order (their results do not move)."""
    assert ModelConfig().kv_heads == 4 and ModelConfig(attention_options={"n_kv_heads": 4}) != ModelConfig()
    attn = registry.get("attention", "mha")(ModelConfig())
    assert attn.qkv.weight.shape == (3 * 64, 64)
