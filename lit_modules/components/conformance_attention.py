"""The conformance checks only an attention component has: what a study reads from it.

- probabilities: the weights it returns with ``need_weights`` (heatmaps, entropy, probes) are
  finite, >= 0, rows summing to 1 over the keys and 0 on padded keys, at init and again after
  a few AdamW steps (a talking-heads mix of probabilities is a distribution only at init);
- positional encodings: under every registered encoding the config admits, it runs, and where
  the built-in ``mha``'s output changes with the encoding (RoPE rotates q and k, ALiBi biases
  the scores: both act inside attention), its output changes too. The same module on the same
  input with ``pos`` the encoding and with ``pe: none``: identical outputs mean it never calls
  ``pos.rotate`` / ``pos.bias`` (or drops what they return), and a ``pe: rope`` variant would
  silently measure no positional encoding;
- head mask: ``head_mask`` scales each head's output, as the head-importance column needs
  (Michel et al. 2019): ones change nothing, masking head h changes the output, with every
  head masked nothing of the input remains, and the heads' parts add up to the whole;
- fused vs explicit (a part of conformance.py's check): the component alone, under every
  encoding, gives one output with ``attn_impl`` sdpa and eager, with and without ``need_weights``
  (the encoder at init, with its small weights, hardly sees a wrong scale on one path);
- grouped-query attention: when it has the option ``n_kv_heads`` and admits one < ``n_heads``, it
  builds with it, keeps the shapes, does not compute exactly what it computes without it (that
  is ignoring the field), and keeps padding and probabilities as it does without it.

Probabilities reads the kit's encoder (its own init, then trained); the others work on the
component alone, built as a plain module (PyTorch's init: larger weights than the encoder's, so a
wrong path shows), on fixed inputs x (3, 7, d_model) and the kit's key mask.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.errors import ConfigError
from ablate.lit_modules.components.conformance_base import TOLERANCE, Result, batch, diff, model
from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.positional import PositionalEncoding

MOVED = 1e-6  # an output that moves by less than this did not move (an ignored input moves by 0)
TRAIN_STEPS, TRAIN_LR = 5, 0.05  # enough to move every weight well off its init


def attention(cfg: ModelConfig, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return registry.get("attention", cfg.attention)(cfg).eval()


def positional(cfg: ModelConfig, name: str) -> PositionalEncoding:
    torch.manual_seed(0)
    return registry.get("positional", name)(cfg).eval()


def inputs(cfg: ModelConfig, length: int = 7) -> tuple[Tensor, Tensor]:
    """x (3, length, d_model) ~ N(0, 1) and keep (3, length), True = real token."""
    x = torch.randn(3, length, cfg.d_model, generator=torch.Generator().manual_seed(1))
    return x, batch(length)[1]


def probability_problem(probs: Tensor, keep: Tensor) -> str | None:
    """What is wrong with probabilities (B, H, L, L) for keys ``keep`` (B, L); None: nothing."""
    if not bool(torch.isfinite(probs).all()):
        return "not finite"
    if float(probs.min()) < 0:
        return f"negative (min {float(probs.min()):.2e})"
    rows = probs.sum(-1)
    if diff(rows, torch.ones_like(rows)) > 1e-4:
        return f"rows sum to {float(rows.min()):.4f}..{float(rows.max()):.4f}, not 1"
    padded = probs.masked_select(~keep[:, None, None, :])
    if padded.numel() and float(padded.abs().max()) > 0:
        return f"weight {float(padded.abs().max()):.2e} on padded keys"
    return None


def _model_problem(m: nn.Module, ids: Tensor, mask: Tensor, cfg: ModelConfig) -> str | None:
    """The first problem of any layer's probabilities in the encoder ``m``; None: none."""
    with torch.no_grad():
        layers = m(ids, mask, return_attention=True).attentions
    keep = torch.cat([mask.new_ones(3, 1), mask], dim=1) if cfg.cls_token else mask  # (B, L')
    L = keep.shape[1]
    for i, probs in enumerate(layers):
        if tuple(probs.shape) != (3, cfg.n_heads, L, L):
            return "shape"
        problem = probability_problem(probs, keep)
        if problem:
            return f"layer {i}: {problem}"
    return None if len(layers) == cfg.n_layers else "shape"


def _train(m: nn.Module, ids: Tensor, mask: Tensor) -> None:
    """A few AdamW steps on the kit's batch, dropout off (randomness has its own check)."""
    opt = torch.optim.AdamW(m.parameters(), lr=TRAIN_LR)
    labels = torch.tensor([0, 1, 2])
    for _ in range(TRAIN_STEPS):
        loss = F.cross_entropy(m(ids, mask).logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()


def probabilities(cfg: ModelConfig) -> Result:
    what = "probabilities"
    m = model(cfg).eval()
    ids, mask = batch()
    for when in ("at init", f"after {TRAIN_STEPS} AdamW steps"):
        if when != "at init":
            _train(m, ids, mask)
        problem = _model_problem(m, ids, mask, cfg)
        if problem == "shape":
            return Result(what, None, "not checked: they do not have the contract's shape (shapes)")
        if problem:
            return Result(
                what, False,
                f"{when}, {problem}: return softmax probabilities per query head, >= 0, each row "
                "summing to 1 over the keys, 0 on padded keys (the report's entropy and heatmaps read them)",
            )  # fmt: skip
    return Result(what, True, f"finite, >= 0, rows sum to 1, 0 on padded keys: at init and {when}")


def _calls(cls: type) -> str:
    """How an attention uses the encoding ``cls``: the hooks it overrides."""
    hooks = {"rotate": "q, k = pos.rotate(q, k)", "bias": "scores + pos.bias(L, device, dtype)"}
    used = [
        call for hook, call in hooks.items() if getattr(cls, hook) is not getattr(PositionalEncoding, hook)
    ]
    return " and ".join(used) or "the pos it is given"


def positional_encodings(cfg: ModelConfig) -> Result:
    what = "positional encodings"
    x, keep = inputs(cfg)
    moved, outside, refused = [], [], []
    for name in registry.names("positional"):
        try:
            cfg_p = dataclasses.replace(cfg, pe=name)
        except ConfigError:
            refused.append(name)
            continue
        pos, none = positional(cfg_p, name), positional(cfg_p, "none")
        with torch.no_grad():
            ref = attention(dataclasses.replace(cfg_p, attention="mha"))
            moves = diff(ref(x, keep, pos)[0], ref(x, keep, none)[0])
            a = attention(cfg_p)
            y, y_none = a(x, keep, pos)[0], a(x, keep, none)[0]
        if tuple(y.shape) != tuple(x.shape) or not bool(torch.isfinite(y).all()):
            return Result(
                what, False, f"pe {name}: output {tuple(y.shape)}, finite: {bool(torch.isfinite(y).all())}"
            )
        if moves <= MOVED:
            outside.append(name)  # it acts through add(x), outside attention: it ran
        elif diff(y, y_none) <= MOVED:
            return Result(
                what, False,
                f"pe {name}: its output is the same as with pe none (mha's moves by {moves:.1e}): "
                f"it ignores the encoding; use {_calls(type(pos))} on every head",
            )  # fmt: skip
        else:
            moved.append(f"{name} (Δ {diff(y, y_none):.1e})")
    detail = (
        f"its output moves with pe {', '.join(moved)}, as mha's does"
        if moved
        else "no encoding acts inside attention"
    )
    detail += f"; runs with {', '.join(outside)} (they act outside attention)" if outside else ""
    return Result(what, True, detail + (f"; refused: {', '.join(refused)}" if refused else ""))


def head_mask(cfg: ModelConfig) -> Result:
    what, H = "head mask", cfg.n_heads
    a, pos = attention(cfg), positional(cfg, "none")
    x, keep = inputs(cfg)
    for need_weights in (False, True):
        with torch.no_grad():
            outs = [a(x, keep, pos, need_weights=need_weights, head_mask=m)[0] for m in _head_masks(H)]
        full, ones, off, *masked = outs
        problem = _head_mask_problem(full, ones, off, [full - y for y in masked])
        if problem:
            return Result(
                what, False,
                f"{'with' if need_weights else 'without'} need_weights: {problem}; scale each head's "
                "output (B, H, L, Dh) by head_mask[h] before the output projection (the report's "
                "head importance masks one head at a time)",
            )  # fmt: skip
    return Result(what, True, f"each of the {H} heads' parts removed exactly, on both paths")


def _head_masks(H: int) -> list[Tensor | None]:
    """None, every head kept, every head masked, then each head masked alone."""
    alone = [1.0 - F.one_hot(torch.tensor(h), H).float() for h in range(H)]
    return [None, torch.ones(H), torch.zeros(H), *alone]


def _head_mask_problem(full: Tensor, ones: Tensor, off: Tensor, parts: list[Tensor]) -> str | None:
    """full: no head_mask; ones: every head kept; off: every head masked; parts[h]: full minus the
    output with head h masked."""
    if diff(full, ones) > TOLERANCE:
        return f"head_mask of ones changes the output by {diff(full, ones):.2e}"
    ignored = [h for h, part in enumerate(parts) if float(part.abs().max()) <= MOVED]
    if ignored:
        return f"masking head {ignored[0]} changes nothing: head_mask is ignored"
    if diff(off, off[:1, :1].expand_as(off)) > TOLERANCE:
        return "with every head masked, the output still depends on the input"
    if diff(sum(parts), full - off) > 10 * TOLERANCE:
        return "the heads' parts do not add up to the whole: masking head h removes more than head h"
    return None


def grouped_query(cfg: ModelConfig) -> Result:
    what, kv = "grouped-query attention", cfg.n_heads // 2
    try:
        cfg_g = dataclasses.replace(cfg, attention_options={**cfg.attention_options, "n_kv_heads": kv})
    except ConfigError as err:
        return Result(what, None, f"model.attention_options.n_kv_heads={kv} is refused: {err}")
    plain, grouped = attention(cfg), attention(cfg_g)
    pos = positional(cfg, "none")
    x, keep = inputs(cfg)
    with torch.no_grad():
        (y, probs), (y0, probs0) = (m(x, keep, pos, need_weights=True) for m in (grouped, plain))
    if not _shapes_hold(y0, probs0, cfg):
        return Result(what, None, "not checked: without it the shapes do not hold either (shapes)")
    if not _shapes_hold(y, probs, cfg):
        got = None if probs is None else tuple(probs.shape)
        return Result(what, False, f"n_kv_heads={kv}: output {tuple(y.shape)}, probabilities {got}")
    if _same_function(plain, grouped, x, keep, pos):
        return Result(
            what, False,
            f"n_kv_heads={kv} takes the weights of n_kv_heads null and computes the same: it ignores its n_kv_heads option; "
            "share each key-value head among n_heads / n_kv_heads query heads, or refuse the value in check(cfg)",
        )  # fmt: skip
    problem = probability_problem(probs, keep)
    if problem and not probability_problem(probs0, keep):
        return Result(what, False, f"n_kv_heads={kv}: probabilities {problem} (without it they are not)")
    leak, leak0 = _padding_leak(grouped, cfg), _padding_leak(plain, cfg)
    if leak > TOLERANCE >= leak0:
        return Result(what, False, f"n_kv_heads={kv}: padding keys change real positions by {leak:.2e}")
    return Result(what, True, f"n_kv_heads={kv} changes the module; shapes, padding and probabilities hold")


def _shapes_hold(y: Tensor, probs: Tensor | None, cfg: ModelConfig) -> bool:
    return (
        tuple(y.shape) == (3, 7, cfg.d_model)
        and probs is not None
        and tuple(probs.shape) == (3, cfg.n_heads, 7, 7)
    )


def _same_function(
    plain: nn.Module, grouped: nn.Module, x: Tensor, keep: Tensor, pos: PositionalEncoding
) -> bool:
    """Whether ``grouped`` takes ``plain``'s state dict as it is and then computes what it computes."""
    try:
        grouped.load_state_dict(plain.state_dict())
    except RuntimeError:  # other keys or shapes: the field changed the module
        return False
    with torch.no_grad():
        return diff(plain(x, keep, pos)[0], grouped(x, keep, pos)[0]) <= MOVED / 10


def _padding_leak(a: nn.Module, cfg: ModelConfig) -> float:
    """How much 4 more padded keys move the real positions' outputs of the attention ``a``."""
    x, keep = inputs(cfg)
    pad = torch.randn(3, 4, cfg.d_model, generator=torch.Generator().manual_seed(2))
    pos = positional(cfg, "none")
    with torch.no_grad():
        y = a(x, keep, pos)[0]
        longer = a(
            torch.cat([x, pad], dim=1), torch.cat([keep, torch.zeros(3, 4, dtype=torch.bool)], 1), pos
        )[0]
    return diff(y[keep], longer[:, :7][keep])


def paths_problem(cfg: ModelConfig) -> str | None:
    """Whether the component alone gives one output on every path, under every admitted encoding."""
    x, keep = inputs(cfg)
    for name in registry.names("positional"):
        try:
            cfg_p = dataclasses.replace(cfg, pe=name, attn_impl="sdpa")
        except ConfigError:
            continue
        pos = positional(cfg_p, name)
        fused, explicit = attention(cfg_p), attention(dataclasses.replace(cfg_p, attn_impl="eager"))
        with torch.no_grad():
            y = fused(x, keep, pos)[0]
            others = {
                "attn_impl eager": explicit(x, keep, pos)[0],
                "need_weights": fused(x, keep, pos, need_weights=True)[0],
            }
        for what, other in others.items():
            if diff(y, other) > TOLERANCE:
                return f"the component alone, pe {name}: {what} moves its output by {diff(y, other):.2e} > {TOLERANCE:g}"
    return None
