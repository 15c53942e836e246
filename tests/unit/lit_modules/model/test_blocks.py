"""The block and pooling kinds (blocks.py, pooling.py): each built-in computes its paper's
arrangement, the encoder wires [CLS] and the final norm from the components, and the kit catches
a block that lets padding in and a pooling that counts it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from ablate import components
from ablate.lit_modules.components import conformance
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.model.registry import get
from tests.helpers.registry import isolated_registry

B, L, D = 3, 6, 16


def cfg(**kw: object) -> ModelConfig:
    return ModelConfig(**{"d_model": D, "n_heads": 2, "d_ff": 24, "dropout": 0.0, "pe": "none", **kw})  # type: ignore[arg-type]


def parts(block: nn.Module, x: torch.Tensor, keep: torch.Tensor):
    pe = get("positional", "none")(cfg())

    def attn(h: torch.Tensor) -> torch.Tensor:
        return block.attn(h, keep, pe)[0]

    return pe, attn, lambda h: block.ffn(h, None)


@pytest.mark.parametrize("name", ["pre", "post", "sandwich", "parallel", "rezero"])
def test_each_block_computes_its_arrangement(name: str) -> None:
    torch.manual_seed(0)
    c = cfg(block=name)
    block = get("block", name)(c).eval()
    for m in block.modules():  # non-trivial norms, so that a swapped or skipped norm shows
        if isinstance(m, nn.LayerNorm):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.5, 0.5)
    if name == "rezero":
        with torch.no_grad():
            block.alpha.fill_(0.7)
    x = torch.randn(B, L, D)
    keep = torch.ones(B, L, dtype=torch.bool)
    pe, attn, ffn = parts(block, x, keep)
    n = {i: getattr(block, f"norm{i}", None) for i in range(1, 5)}
    with torch.no_grad():
        if name == "pre":
            h = x + attn(n[1](x))
            want = h + ffn(n[2](h))
        elif name == "post":
            h = n[1](x + attn(x))
            want = n[2](h + ffn(h))
        elif name == "sandwich":
            h = x + n[3](attn(n[1](x)))
            want = h + n[4](ffn(n[2](h)))
        elif name == "parallel":
            want = x + attn(n[1](x)) + ffn(n[1](x))
        else:
            h = x + 0.7 * attn(x)
            want = h + 0.7 * ffn(h)
        got, _ = block(x, keep, pe)
    torch.testing.assert_close(got, want)
    norms = sum(isinstance(m, nn.LayerNorm) for m in block.modules())
    assert norms == {"pre": 2, "post": 2, "sandwich": 4, "parallel": 1, "rezero": 0}[name]


def test_rezero_starts_as_the_identity_and_the_final_norm_follows_the_block() -> None:
    block = get("block", "rezero")(cfg(block="rezero")).eval()
    x, keep = torch.randn(B, L, D), torch.ones(B, L, dtype=torch.bool)
    with torch.no_grad():
        assert torch.equal(block(x, keep, get("positional", "none")(cfg()))[0], x)
    finals = {
        n: type(EncoderClassifier(cfg(block=n), 10, 2).norm).__name__
        for n in ("pre", "post", "rezero", "sandwich")
    }
    assert finals == {"pre": "LayerNorm", "post": "Identity", "rezero": "Identity", "sandwich": "LayerNorm"}


def test_poolings_read_real_tokens_only() -> None:
    x = torch.randn(B, L, D)
    keep = torch.tensor([[True] * 6, [True] * 3 + [False] * 3, [False] * 6])
    junk = x.masked_fill(keep.unsqueeze(-1), 0) * 1e3  # whatever padding holds must not count
    c = cfg()
    for name in ("mean", "max", "attention"):
        pool = get("pooling", name)(c)
        with torch.no_grad():
            a, b = pool(x, keep), pool(x.where(keep.unsqueeze(-1), junk), keep)
        torch.testing.assert_close(a, b)
        assert torch.isfinite(a).all() and torch.equal(a[2], torch.zeros(D)), name  # no real token: 0
    with torch.no_grad():
        torch.testing.assert_close(get("pooling", "max")(c)(x, keep)[1], x[1, :3].amax(0))
        torch.testing.assert_close(get("pooling", "cls")(c)(x, keep), x[:, 0])
    assert [cfg(pool=p).cls_token for p in ("cls", "mean", "max", "attention")] == [True, False, False, False]
    assert EncoderClassifier(cfg(pool="max"), 10, 2).cls is None


def test_attention_pooling_is_trained_and_leaves_the_others_init() -> None:
    """Its scorer is registered after the head, so the encoder's other weights draw as before."""
    torch.manual_seed(0)
    mean = EncoderClassifier(cfg(pool="mean"), 10, 2)
    torch.manual_seed(0)
    att = EncoderClassifier(cfg(pool="attention"), 10, 2)
    shared = mean.state_dict()
    assert all(torch.equal(v, att.state_dict()[k]) for k, v in shared.items())
    assert set(att.state_dict()) - set(shared) == {"pool.score.weight", "pool.score.bias"}


def test_the_kit_catches_a_block_that_lets_padding_in_and_a_pooling_that_counts_it() -> None:
    with isolated_registry():

        @components.register("block", "kit-block-ignores-keep")
        class IgnoresKeep(get("block", "pre")):  # type: ignore[misc]
            def forward(self, x, keep, pos, **kw):
                return super().forward(x, torch.ones_like(keep), pos, **kw)

        @components.register("pooling", "kit-pool-counts-padding")
        class CountsPadding(nn.Module):
            uses_cls = False

            def __init__(self, cfg) -> None:
                super().__init__()

            def forward(self, x, keep):
                return x.mean(dim=1)

        for kind, name in (("block", "kit-block-ignores-keep"), ("pooling", "kit-pool-counts-padding")):
            failed = [r for r in conformance.check(kind, name) if r.ok is False]
            assert [r.contract for r in failed] == ["padding"], [r.line() for r in failed]
        assert "pool kit-pool-counts-padding" in failed[0].detail
