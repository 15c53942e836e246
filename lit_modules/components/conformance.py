"""The conformance kit: does a component keep the guarantees a built-in keeps?

``check(kind, name)`` builds a tiny encoder (conformance_base.py: batch 3, length 7, d_model 16,
4 heads, dropout on) with the component in its place and checks each contract on its own
(``ablate check-component KIND NAME``; ``ablate.testing`` in pytest), cause first: a check runs
after those whose failure would make it fail too, so the first FAIL names the cause.

- builds: the config is accepted (its ``check``) and the model builds;
- shapes: the component maps its inputs to the contract's shapes, the model gives (B, C) logits;
- keyed randomness: the component trains inside a seed-parallel stack under
  ``vmap(randomness="error")`` (so any random draw but ``KeyedDropout``'s fails), and after three
  AdamW steps the member of seed 1 is bit-identical in a stack of seeds (0, 1) and one of (1, 2).
  Before the comparisons below, which a random draw breaks too;
- padding: a copy of the batch padded to a longer length gives the same logits;
- permutation: with ``pe: none`` (or the component itself, for an ``order_free`` encoding) the
  encoder is permutation-invariant: shuffling an example's real tokens leaves its logits;
- attention only (conformance_attention.py): probabilities (at init and after training),
  positional encodings (every registered one; RoPE and ALiBi must reach the output), head mask,
  grouped-query attention (when its ``check`` admits ``model.n_kv_heads``);
- fused vs explicit: ``attn_impl: sdpa`` and ``eager`` (and the probabilities path) agree;
- state dict: a second model loading the first's state dict gives the same logits;

and reports the parameter count beside that of the built-in it replaces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch import Tensor

from ablate.errors import ConfigError
from ablate.lit_modules.components import conformance_attention as attention_checks
from ablate.lit_modules.components.conformance_base import (
    CLASSES,
    LENGTHS,
    TOLERANCE,
    VOCAB,
    Result,
    batch,
    diff,
    model,
    same,
    tiny_config,
)
from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import PAD_ID, EncoderClassifier

__all__ = ["Result", "batch", "check", "checks", "diff", "model", "tiny_config"]
DEFAULTS = {"positional": "sinusoidal", "attention": "mha", "norm": "layernorm", "ffn": "mlp"}
RANDOMNESS = "keyed randomness, stack independence"


def shapes(kind: str, cfg: ModelConfig) -> Result:
    m = model(cfg).eval()
    ids, mask = batch()
    x = torch.randn(3, 7, cfg.d_model)
    with torch.no_grad():
        logits = m(ids, mask).logits
        if tuple(logits.shape) != (3, CLASSES):
            return Result("shapes", False, f"logits {tuple(logits.shape)}, expected (3, {CLASSES})")
        want = _component_shapes(kind, cfg, m, x, mask)
    bad = [
        f"{what} gives {'None' if t is None else tuple(t.shape)}, expected {tuple(s)}"
        for what, t, s in want
        if t is None or tuple(t.shape) != tuple(s)
    ]
    return Result("shapes", not bad, "; ".join(bad) or "component and logits as the contract says")


def _component_shapes(kind: str, cfg: ModelConfig, m: EncoderClassifier, x: Tensor, mask: Tensor) -> list:
    """(what, tensor or None, the contract's shape) for the first block's ``kind`` component."""
    block = m.blocks[0]
    if kind == "norm":
        return [("norm(x)", block.norm1(x), x.shape)]
    if kind == "ffn":
        return [("ffn(x, key)", block.ffn(x, None), x.shape)]
    if kind == "attention":
        y, probs = block.attn(x, mask, m.pe, need_weights=True)
        return [("attention(x)", y, x.shape), ("probabilities", probs, (3, cfg.n_heads, 7, 7))]
    q = torch.randn(3, cfg.n_heads, 7, cfg.head_dim)
    rq, rk = m.pe.rotate(q, q.clone())
    want = [("add(x)", m.pe.add(x), x.shape), ("rotate(q, k)", rq, q.shape), ("rotate(q, k)", rk, q.shape)]
    bias = m.pe.bias(7, x.device, x.dtype)
    return want + ([("bias(L)", bias, (cfg.n_heads, 7, 7))] if bias is not None else [])


# What keeps padding away from real positions, by kind: the hint of a padding FAIL.
PADDING_HINTS = {
    "attention": "padded keys (keep False) must get no weight and add nothing",
    "norm": "normalize each position on its own, never over the sequence",
    "ffn": "transform each position on its own, never mix the sequence",
    "positional": "a position's encoding must not depend on the input's length",
}


def padding(kind: str, cfg: ModelConfig) -> Result:
    ids, mask = batch(7)
    longer_ids = torch.cat([ids, torch.full((3, 4), PAD_ID)], dim=1)  # (3, 11)
    longer_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.bool)], dim=1)
    worst = 0.0
    for pool in ("cls", "mean"):
        m = model(dataclasses.replace(cfg, pool=pool)).eval()
        with torch.no_grad():
            d = diff(m(ids, mask).logits, m(longer_ids, longer_mask).logits)
        if d > TOLERANCE:
            return Result(
                "padding", False,
                f"pool {pool}, padded from 7 to 11: max |Δ logits| {d:.2e}: padding reaches real "
                f"positions ({PADDING_HINTS[kind]})",
            )  # fmt: skip
        worst = max(worst, d)
    return Result("padding", True, f"pool cls and mean, padded from 7 to 11: max |Δ logits| {worst:.2e}")


def permutation(kind: str, name: str, cfg: ModelConfig) -> Result:
    if kind == "positional":
        if not getattr(registry.get(kind, name), "order_free", False):
            return Result(
                "permutation", None, "an encoding that gives position information (order_free False)"
            )
    else:
        cfg = dataclasses.replace(cfg, pe="none")
    ids, mask = batch()
    perm = torch.tensor([4, 0, 6, 2, 1, 5, 3])
    shuffled = ids.clone()
    for row, n in enumerate(LENGTHS):  # permute each row's real tokens, padding stays on the right
        keep = perm[perm < n]
        shuffled[row, :n] = ids[row, keep]
    worst = Result("permutation", True)
    for pool in ("cls", "mean"):
        m = model(dataclasses.replace(cfg, pool=pool)).eval()
        with torch.no_grad():
            r = same("permutation", m(ids, mask).logits, m(shuffled, mask).logits)
        if not r.ok:
            return Result("permutation", False, f"pool {pool}: {r.detail} after shuffling the real tokens")
        worst = r
    return Result("permutation", True, f"pe none, pool cls and mean: {worst.detail}")


def fused_explicit(kind: str, cfg: ModelConfig) -> Result:
    what = "fused vs explicit"
    problem = attention_checks.paths_problem(cfg) if kind == "attention" else None
    if problem:  # the component alone first: its larger weights show a wrong path more clearly
        return Result(what, False, problem)
    # Both from seed 0: the same weights, without the state dict (it has a check of its own).
    fused = model(dataclasses.replace(cfg, attn_impl="sdpa")).eval()
    explicit = model(dataclasses.replace(cfg, attn_impl="eager")).eval()
    ids, mask = batch()
    with torch.no_grad():
        a = fused(ids, mask).logits
        impl = diff(a, explicit(ids, mask).logits)
        weights = diff(a, fused(ids, mask, return_attention=True).logits)
    if impl > TOLERANCE:
        return Result(what, False, f"attn_impl sdpa vs eager: max |Δ logits| {impl:.2e} > {TOLERANCE:g}")
    if weights > TOLERANCE:
        return Result(
            what, False, f"with vs without the probabilities: max |Δ logits| {weights:.2e} > {TOLERANCE:g}"
        )
    alone = "; the component alone under every encoding" if kind == "attention" else ""
    return Result(
        what, True, f"attn_impl sdpa vs eager and the probabilities path: max |Δ logits| {impl:.2e}{alone}"
    )


def _trained_member(cfg: ModelConfig, seeds: list[int], member: int, steps: int = 3) -> list[Tensor]:
    """Member ``member``'s weights after ``steps`` AdamW steps of a stack of ``seeds``, on a batch
    without padding: padding has its own check, and where padding reaches the loss, torch's
    embedding backward under vmap gives the padding row of every member but the first a gradient
    (a difference between stacks that is not the component's randomness)."""
    from ablate.lit_modules.systems.classifier import dropout_keys, train_losses
    from ablate.lit_modules.systems.seed_parallel import StackedEncoder

    stack = StackedEncoder(cfg, vocab_size=VOCAB, n_classes=CLASSES, seeds=seeds).train()
    opt = torch.optim.AdamW(stack.parameters(), lr=1e-2)
    ids, mask = batch(lengths=(7, 7, 7))
    labels = torch.tensor([0, 1, 2])
    K = len(seeds)
    seed_t = torch.tensor(seeds, dtype=torch.int64)
    for step in range(steps):
        logits = stack(ids.expand(K, -1, -1), mask.expand(K, -1, -1), dropout_keys(seed_t, step))
        opt.zero_grad()
        train_losses(logits, labels.expand(K, -1)).sum().backward()
        opt.step()
    return [w[member].detach().clone() for w in stack.weights]


def keyed_randomness(cfg: ModelConfig) -> Result:
    try:
        a = _trained_member(cfg, [0, 1], member=1)
        b = _trained_member(cfg, [1, 2], member=0)
    except RuntimeError as err:
        if "random" in str(err).lower():
            return Result(
                RANDOMNESS, False,
                "it draws random numbers itself (vmap randomness='error' refused it); use KeyedDropout "
                "with the key it is given",
            )  # fmt: skip
        return Result(RANDOMNESS, False, f"it does not run in a seed-parallel stack: {err}")
    same_bits = all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    return Result(
        RANDOMNESS,
        same_bits,
        "seed 1 after 3 steps: bit-identical in stacks (0, 1) and (1, 2)"
        if same_bits
        else "seed 1's weights after 3 steps differ between stacks (0, 1) and (1, 2)",
    )


def state_dict(cfg: ModelConfig) -> Result:
    a = model(cfg, seed=0).eval()
    b = model(cfg, seed=1)
    try:
        b.load_state_dict(a.state_dict())
    except RuntimeError as err:
        return Result("state dict", False, "load_state_dict: " + " ".join(str(err).split()[:40]))
    b.eval()
    ids, mask = batch()
    with torch.no_grad():
        return same("state dict", a(ids, mask).logits, b(ids, mask).logits, tol=0.0)


def parameters(kind: str, name: str, cfg: ModelConfig) -> Result:
    default = DEFAULTS[kind]
    n = sum(p.numel() for p in model(cfg).parameters())
    ref = sum(p.numel() for p in model(tiny_config(kind, default)).parameters())
    return Result("parameters", None, f"{n:,} in the kit's model; with the built-in {default!r}: {ref:,}")


def check(kind: str, name: str) -> list[Result]:
    """Every contract for the ``kind`` component ``name`` (imported plugins included), cause first."""
    if kind not in registry.KINDS:
        raise ConfigError(f"unknown component kind {kind!r}; the kinds are {', '.join(registry.KINDS)}")
    registry.get(kind, name)  # a ConfigError naming the registered ones
    try:
        cfg = tiny_config(kind, name)
        model(cfg)
    except Exception as err:  # noqa: BLE001 (whatever the component raises is the finding)
        return [Result("builds", False, f"{type(err).__name__}: {err}")]
    results = [Result("builds", True, f"model.{registry.CONFIG_KEYS[kind]}={name!r} in a tiny encoder")]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: more intra-op threads only add synchronisation
    try:
        for contract, run in checks(kind, name, cfg):
            try:
                results.append(run())
            except Exception as err:  # noqa: BLE001 (a contract that crashes is broken)
                results.append(Result(contract, False, f"{type(err).__name__}: {err}"))
    finally:
        torch.set_num_threads(threads)
    return results


def checks(kind: str, name: str, cfg: ModelConfig) -> list[tuple[str, Callable[[], Result]]]:
    """The checks after ``builds``, in the order they run: each after those that would fail with it."""
    first: list[tuple[str, Callable[[], Result]]] = [
        ("shapes", lambda: shapes(kind, cfg)),
        (RANDOMNESS, lambda: keyed_randomness(cfg)),
        ("padding", lambda: padding(kind, cfg)),
        ("permutation", lambda: permutation(kind, name, cfg)),
    ]
    own: list[tuple[str, Callable[[], Result]]] = [
        ("probabilities", lambda: attention_checks.probabilities(cfg)),
        ("positional encodings", lambda: attention_checks.positional_encodings(cfg)),
        ("head mask", lambda: attention_checks.head_mask(cfg)),
        ("grouped-query attention", lambda: attention_checks.grouped_query(cfg)),
    ]
    last: list[tuple[str, Callable[[], Result]]] = [
        ("fused vs explicit", lambda: fused_explicit(kind, cfg)),
        ("state dict", lambda: state_dict(cfg)),
        ("parameters", lambda: parameters(kind, name, cfg)),
    ]
    return first + (own if kind == "attention" else []) + last
