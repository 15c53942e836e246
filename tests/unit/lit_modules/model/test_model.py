"""The model's invariants (docs/pages/design.md, Invariants): parity with torch, permutation invariance without PE,
padding invariance, explicit == fused attention, and the positional encodings' formulas.

Tiny odd sizes (batch 3, length 7, d_model 32) catch shape bugs; init_std is large enough
that a broken component moves the outputs well above the tolerances.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from ablate.lit_modules.model.attention import MultiHeadAttention
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.model.positional import alibi_slopes
from ablate.lit_modules.model.registry import get, is_builtin, names

PES = [n for n in names("positional") if is_builtin("positional", n)]
POOLS = ["cls", "mean"]
VOCAB, CLASSES, B, L = 20, 3, 3, 7


def cfg(**over: object) -> ModelConfig:
    base = dict(d_model=32, n_layers=2, n_heads=4, d_ff=48, dropout=0.0, init_std=0.2)
    return ModelConfig(**{**base, **over})


def model(**over: object) -> EncoderClassifier:
    torch.manual_seed(0)
    return EncoderClassifier(cfg(**over), VOCAB, CLASSES).eval()


def batch(lengths: tuple[int, ...] = (7, 4, 5), total: int = L) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (pad id 0) and the bool mask; fixed content per example."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (len(lengths), total), generator=g)
    mask = torch.arange(total)[None, :] < torch.tensor(lengths)[:, None]
    return ids.masked_fill(~mask, 0), mask


# --- parity with torch.nn.TransformerEncoderLayer --------------------------------------------


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_block_matches_torch_encoder_layer(norm: str, activation: str) -> None:
    c = cfg(pe="none", block=norm, activation=activation, d_ff=40)
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(
        c.d_model, c.n_heads, c.d_ff, dropout=0.0, activation=activation,
        batch_first=True, norm_first=norm == "pre",
    ).eval()  # fmt: skip
    ours = get("block", c.block)(c).eval()
    with torch.no_grad():
        ours.attn.qkv.weight.copy_(ref.self_attn.in_proj_weight)
        ours.attn.qkv.bias.copy_(ref.self_attn.in_proj_bias)
        ours.attn.out.load_state_dict(ref.self_attn.out_proj.state_dict())
        ours.ffn.fc1.load_state_dict(ref.linear1.state_dict())
        ours.ffn.fc2.load_state_dict(ref.linear2.state_dict())
        ours.norm1.load_state_dict(ref.norm1.state_dict())
        ours.norm2.load_state_dict(ref.norm2.state_dict())
        for ln in (ours.norm1, ours.norm2):  # non-trivial affine so a swapped norm is caught
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
        ref.norm1.load_state_dict(ours.norm1.state_dict())
        ref.norm2.load_state_dict(ours.norm2.state_dict())
    x = torch.randn(B, L, c.d_model)
    _, keep = batch()
    pe = get("positional", "none")(c)
    with torch.no_grad():
        full = torch.ones(B, L, dtype=torch.bool)
        torch.testing.assert_close(ours(x, full, pe)[0], ref(x), atol=1e-5, rtol=1e-5)
        got = ours(x, keep, pe)[0]
        want = ref(x, src_key_padding_mask=~keep)
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=1e-5)


# --- permutation invariance (padding: every component's conformance, test_components.py) -------------------------------------------------------


@pytest.mark.parametrize("pool", POOLS)
def test_no_pe_is_permutation_invariant_and_sinusoidal_is_not(pool: str) -> None:
    ids, mask = batch()
    shuffled = ids.clone()
    for b, n in enumerate(mask.sum(1).tolist()):
        perm = torch.roll(torch.arange(n), 1)  # a permutation that moves every real token
        shuffled[b, :n] = ids[b, :n][perm]
    with torch.no_grad():
        m = model(pe="none", pool=pool)
        torch.testing.assert_close(m(shuffled, mask).logits, m(ids, mask).logits, atol=1e-5, rtol=1e-5)
        m = model(pe="sinusoidal", pool=pool)
        assert (m(shuffled, mask).logits - m(ids, mask).logits).abs().max() > 1e-3


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_head_sees_layer_normalised_states(norm: str) -> None:
    """Post-LN ends on LN2; Pre-LN needs its final LayerNorm (Xiong et al. 2020)."""
    m = model(block=norm)
    seen: list[torch.Tensor] = []
    m.head.register_forward_hook(lambda mod, args, out: seen.append(args[0]))
    with torch.no_grad():
        m(*batch())
    torch.testing.assert_close(seen[0].mean(-1), torch.zeros(B), atol=1e-5, rtol=0)
    torch.testing.assert_close(seen[0].var(-1, unbiased=False), torch.ones(B), atol=1e-3, rtol=0)


# --- attention paths --------------------------------------------------------------------------


@pytest.mark.parametrize("pe", PES)
def test_explicit_path_matches_sdpa(pe: str) -> None:
    ids, mask = batch()
    with torch.no_grad():
        fused = model(pe=pe, attn_impl="sdpa")(ids, mask)
        explicit = model(pe=pe, attn_impl="sdpa")(ids, mask, return_attention=True)
        eager = model(pe=pe, attn_impl="eager")(ids, mask)
    assert fused.attentions is None and eager.attentions is None
    torch.testing.assert_close(explicit.logits, fused.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(eager.logits, fused.logits, atol=1e-5, rtol=1e-5)
    assert len(explicit.attentions) == 2
    keep = torch.cat([torch.ones(B, 1, dtype=torch.bool), mask], dim=1)  # [CLS] is real
    for probs in explicit.attentions:
        assert probs.shape == (B, 4, L + 1, L + 1)
        torch.testing.assert_close(probs.sum(-1), torch.ones(B, 4, L + 1))
        assert (probs.masked_select(~keep[:, None, None, :]) == 0).all()


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_fully_padded_row_is_finite(impl: str) -> None:
    c = cfg(pe="alibi", attn_impl=impl)
    attn = MultiHeadAttention(c).eval()
    keep = torch.ones(B, L, dtype=torch.bool)
    keep[1] = False
    pe = get("positional", "alibi")(c)
    out, probs = attn(torch.randn(B, L, c.d_model), keep, pe, need_weights=True)
    assert torch.isfinite(out).all() and torch.isfinite(probs).all()
    out, _ = attn(torch.randn(B, L, c.d_model), keep, pe)
    assert torch.isfinite(out).all()
    ids, mask = batch()
    mask[2] = False
    with torch.no_grad():
        assert torch.isfinite(model(pool="mean", attn_impl=impl)(ids, mask).logits).all()


def test_head_mask() -> None:
    m = model(pe="rope")
    ids, mask = batch()
    with torch.no_grad():
        base = m(ids, mask).logits
        torch.testing.assert_close(m(ids, mask, head_mask=torch.ones(2, 4)).logits, base)
        hm = torch.ones(2, 4)
        hm[0, 1] = 0.0
        assert (m(ids, mask, head_mask=hm).logits - base).abs().max() > 1e-4
        # Zeroing a head is the same as zeroing its slice of the output projection's input.
        m.blocks[0].attn.out.weight[:, 8:16] = 0.0
        torch.testing.assert_close(m(ids, mask).logits, m(ids, mask, head_mask=hm).logits)


# --- positional encodings ---------------------------------------------------------------------


def test_rope_scores_depend_only_on_offset() -> None:
    c = cfg(pe="rope")
    pe = get("positional", "rope")(c)
    # The same q and k vector at every position: any score difference comes from position.
    q = torch.randn(1, 4, 1, c.head_dim).expand(1, 4, 12, c.head_dim)
    k = torch.randn(1, 4, 1, c.head_dim).expand(1, 4, 12, c.head_dim)
    rq, rk = pe.rotate(q, k)
    scores = rq @ rk.transpose(-2, -1)  # (1, H, 12, 12)
    for i, j, s in [(0, 3, 5), (2, 1, 7), (4, 4, 6)]:
        torch.testing.assert_close(scores[..., i, j], scores[..., i + s, j + s], atol=1e-5, rtol=1e-5)
    assert (scores[..., 0, 1] - scores[..., 0, 5]).abs().max() > 1e-3  # and it does depend on offset
    torch.testing.assert_close(rq.norm(dim=-1), q.norm(dim=-1))  # a rotation


def test_sinusoidal_matches_closed_form_times_scale() -> None:
    c = cfg(pe="sinusoidal", d_model=10, n_heads=2, max_len=4, init_std=0.3, scale_embeddings=False)
    embed_rms = 0.3
    pe = get("positional", "sinusoidal")(c)
    length = 9  # beyond max_len: computed on demand
    got = pe.add(torch.zeros(1, length, 10))[0]
    want = torch.tensor(
        [[(math.sin if d % 2 == 0 else math.cos)(p / 10000 ** ((d - d % 2) / 10)) for d in range(10)]
         for p in range(length)]
    )  # fmt: skip
    torch.testing.assert_close(got, want * embed_rms / math.sqrt(0.5))


@torch.no_grad()
def test_additive_pe_matches_token_embedding_rms() -> None:
    """The scale rule: at init, additive PE and token embedding have the same per-element RMS."""
    for scale in (True, False):
        torch.manual_seed(0)
        m = EncoderClassifier(cfg(pe="learned", d_model=64, max_len=512, scale_embeddings=scale), 4000, 2)
        tok_rms = m.embed.weight[1:].mul(m.embed_scale).pow(2).mean().sqrt().item()
        assert tok_rms == pytest.approx(m.embed_rms, rel=0.03)
        assert m.pe.table.mul(m.pe.scale).pow(2).mean().sqrt().item() == pytest.approx(m.embed_rms, rel=0.03)
        sin = get("positional", "sinusoidal")(m.cfg).add(torch.zeros(1, 512, 64))
        assert sin.pow(2).mean().sqrt().item() == pytest.approx(m.embed_rms, rel=0.03)


def test_learned_pe_rejects_inputs_beyond_max_len() -> None:
    for pool, fits in [("cls", 7), ("mean", 8)]:  # [CLS] takes a row of the table
        m = model(pe="learned", pool=pool, max_len=8)
        m(*batch(lengths=(fits, 2, 3), total=fits))
        with pytest.raises(ValueError, match="max_len=8"):
            m(*batch(lengths=(fits + 1, 2, 3), total=fits + 1))
    for pe in ["none", "sinusoidal", "rope", "alibi"]:
        m = model(pe=pe, max_len=8)
        assert m(*batch(lengths=(12, 2, 3), total=12)).logits.shape == (3, CLASSES)


def test_alibi_slopes() -> None:
    assert alibi_slopes(8) == [2.0**-k for k in range(1, 9)]
    # Not a power of 2: the 4-head slopes, then every other slope of the 8-head set.
    assert alibi_slopes(6) == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]
    pe = get("positional", "alibi")(cfg(pe="alibi", n_heads=8))
    bias = pe.bias(5, torch.device("cpu"), torch.float32)
    assert bias.shape == (8, 5, 5)
    assert bias[0, 1, 4] == bias[0, 4, 1] == -3 * 0.5  # symmetric: -slope * |i - j|


def test_learned_pe_learns_at_the_token_embeddings_rate() -> None:
    """Adam moves every parameter by ~lr per step (exactly lr * sign(g) at the first step); in
    input units the learned PE table must move like the token embeddings it is added to (it
    moved sqrt(d_model) = 8x slower when stored at the embedding's RMS and added unscaled).
    Rows compared: those the batch uses. Over many steps the ratio drifts with the gradients'
    sign agreement (0.5 after 10 steps here), which is the data's doing, not the scale's."""
    torch.manual_seed(0)
    m = EncoderClassifier(cfg(pe="learned", d_model=64, d_ff=64, max_len=16, init_std=0.02), 50, 2).train()
    ids = torch.randint(1, 50, (32, 15))
    labels = (ids[:, 0] > 25).long()
    mask = torch.ones_like(ids, dtype=torch.bool)
    tok0 = m.embed.weight.detach().clone()
    pe0 = m.pe.table.detach().clone()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for _ in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(m(ids, mask).logits, labels).backward()
        opt.step()
    used = ids.unique()
    tok_move = (m.embed.weight.detach() - tok0)[used].abs().mean() * m.embed_scale
    pe_move = (m.pe.table.detach() - pe0)[: 1 + ids.shape[1]].abs().mean() * m.pe.scale  # [CLS] row too
    assert pe_move / tok_move == pytest.approx(1.0, rel=0.2)


def _reversed(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each example's real tokens in reverse order; padding stays on the right."""
    out = ids.clone()
    for b, n in enumerate(mask.sum(1).tolist()):
        out[b, :n] = ids[b, :n].flip(0)
    return out


@torch.no_grad()
def test_symmetric_alibi_cannot_tell_left_from_right_and_directional_can() -> None:
    """bias = -m|i - j| is unchanged when the real tokens are reversed, so with mean pooling
    (no [CLS] at position 0) every logit is too; the directional form is not."""
    ids, mask = batch()
    flipped = _reversed(ids, mask)
    m = model(pe="alibi", pool="mean")
    torch.testing.assert_close(m(flipped, mask).logits, m(ids, mask).logits, atol=1e-5, rtol=1e-5)
    m = model(pe="alibi", pe_options={"form": "directional"}, pool="mean")
    assert (m(flipped, mask).logits - m(ids, mask).logits).abs().max() > 1e-3


def test_directional_alibi_heads_look_one_way_each() -> None:
    pe = get("positional", "alibi")(cfg(pe="alibi", pe_options={"form": "directional"}, n_heads=4))
    bias = pe.bias(5, torch.device("cpu"), torch.float32)  # (H, L, L), [query, key]
    slopes = alibi_slopes(4)
    assert bias[0, 4, 1] == -3 * slopes[0] and bias[0, 1, 4] == pe.BLOCKED  # even head: keys left
    assert bias[1, 1, 4] == -3 * slopes[1] and bias[1, 4, 1] == pe.BLOCKED  # odd head: keys right
    assert (bias.diagonal(dim1=1, dim2=2) == 0).all()  # every query sees itself


@torch.no_grad()
@pytest.mark.parametrize("pool", POOLS)
def test_directional_alibi_ignores_padding_and_fused_matches_explicit(pool: str) -> None:
    ids, mask = batch()
    longer_ids = torch.cat([ids, torch.zeros(B, 6, dtype=ids.dtype)], dim=1)
    longer_mask = torch.cat([mask, torch.zeros(B, 6, dtype=torch.bool)], dim=1)
    fused = model(pe="alibi", pe_options={"form": "directional"}, pool=pool)
    eager = model(pe="alibi", pe_options={"form": "directional"}, pool=pool, attn_impl="eager")
    want = eager(ids, mask).logits
    torch.testing.assert_close(fused(ids, mask).logits, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused(longer_ids, longer_mask).logits, want, atol=1e-5, rtol=1e-5)


# --- training smoke ---------------------------------------------------------------------------


@pytest.mark.parametrize("pe", PES)
@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("pool", POOLS)
def test_gradients_flow_and_loss_decreases(pe: str, norm: str, pool: str) -> None:
    torch.manual_seed(0)
    m = EncoderClassifier(cfg(pe=pe, block=norm, pool=pool, dropout=0.1, init_std=0.02), VOCAB, CLASSES)
    ids, mask = batch()
    y = torch.tensor([0, 1, 2])
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    losses = []
    for _ in range(20):
        loss = nn.functional.cross_entropy(m(ids, mask).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert m.blocks[0].attn.qkv.weight.grad.abs().sum() > 0
    assert m.embed.weight.grad.abs().sum() > 0
    if pe == "learned":
        assert m.pe.table.grad.abs().sum() > 0
    assert losses[-1] < 0.8 * losses[0]
