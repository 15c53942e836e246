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
- inputs unchanged: the component writes into none of its arguments (a norm's or a block's
  input is the residual stream; the tensors' version counters, so an in-place no-op counts too);
- batch independence: a row's logits are the same alone (batch 1), in a batch of 2 and of 3;
- padding: a copy of the batch padded to a longer length gives the same logits;
- permutation: with ``pe: none`` (or the component itself, for an ``order_free`` encoding) the
  encoder is permutation-invariant: shuffling an example's real tokens leaves its logits;
- attention only (conformance_attention.py): probabilities (at init and after training),
  positional encodings (every registered one; RoPE and ALiBi must reach the output), head mask,
  grouped-query attention (when it has an ``n_kv_heads`` option and admits a value);
- fused vs explicit: ``attn_impl: sdpa`` and ``eager`` (and the probabilities path) agree;
- state dict: a second model loading the first's state dict gives the same logits;
- process independence (conformance_process.py): a fresh process with another ``PYTHONHASHSEED``
  gives the same logits (started beside the checks above, compared after them);

and reports the parameter count beside that of the built-in it replaces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch import Tensor

from ablate.errors import ConfigError
from ablate.lit_modules.components import conformance_attention as attention_checks
from ablate.lit_modules.components import conformance_process
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
DEFAULTS = {
    "positional": "sinusoidal",
    "attention": "mha",
    "norm": "layernorm",
    "ffn": "mlp",
    "block": "pre",
    "pooling": "cls",
}
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
    if kind == "block":
        y, probs = block(x, mask, m.pe, need_weights=True)
        return [("block(x)", y, x.shape), ("probabilities", probs, (3, cfg.n_heads, 7, 7))]
    if kind == "pooling":
        return [("pool(x, keep)", m.pool(x, mask), (3, cfg.d_model))]
    q = torch.randn(3, cfg.n_heads, 7, cfg.head_dim)
    rq, rk = m.pe.rotate(q, q.clone())
    want = [("add(x)", m.pe.add(x), x.shape), ("rotate(q, k)", rq, q.shape), ("rotate(q, k)", rk, q.shape)]
    bias = m.pe.bias(7, x.device, x.dtype)
    return want + ([("bias(L)", bias, (cfg.n_heads, 7, 7))] if bias is not None else [])


def _component_inputs(kind: str, cfg: ModelConfig, m: EncoderClassifier) -> list[tuple[str, Callable, tuple]]:
    """(call, the component's entry point, its tensor arguments) for the ``kind`` component of ``m``."""
    x, mask = torch.randn(3, 7, cfg.d_model), batch()[1]
    pe, block = m.pe, m.blocks[0]
    if kind == "positional":
        q = torch.randn(3, cfg.n_heads, 7, cfg.head_dim)
        return [("add(x)", pe.add, (x,)), ("rotate(q, k)", pe.rotate, (q, q.clone()))]
    if kind == "norm":
        return [("norm(x)", block.norm1, (x,))]
    if kind == "ffn":
        return [("ffn(x, key)", lambda x: block.ffn(x, None), (x,))]
    if kind == "attention":
        return [("attention(x, keep, pos)", lambda x, k: block.attn(x, k, pe, need_weights=True), (x, mask))]
    if kind == "block":
        return [("block(x, keep, pos)", lambda x, k: block(x, k, pe, need_weights=True), (x, mask))]
    return [("pool(x, keep)", m.pool, (x, mask))]


def inputs_unchanged(kind: str, cfg: ModelConfig) -> Result:
    """No in-place write to an input: a norm's or block's input is the residual stream."""
    m = model(cfg).train()
    for what, call, args in _component_inputs(kind, cfg, m):
        before = [(a._version, a.clone()) for a in args]
        with torch.no_grad():
            call(*args)
        for i, (a, (version, copy)) in enumerate(zip(args, before, strict=True)):
            if a._version != version or not torch.equal(a, copy):
                return Result(
                    "inputs unchanged", False,
                    f"{what} writes into its argument {i} in place (max |Δ| {diff(a, copy):.2e}): "
                    "the caller still uses it (a norm's or a block's input is the residual stream); "
                    "compute out of place (x * s, not x.mul_(s))",
                )  # fmt: skip
    return Result("inputs unchanged", True, "no argument written in place")


def batch_independence(cfg: ModelConfig) -> Result:
    """Each example on its own: a row's logits do not depend on the batch it comes in (1 or 2 rows)."""
    m = model(cfg).eval()
    ids, mask = batch()
    worst = 0.0
    with torch.no_grad():
        full = m(ids, mask).logits
        for rows in ([0], [2], [1, 2]):
            d = diff(full[rows], m(ids[rows], mask[rows]).logits)
            if d > TOLERANCE:
                return Result(
                    "batch independence", False,
                    f"rows {rows} alone (batch {len(rows)}) vs in the batch of 3: max |Δ logits| {d:.2e}: "
                    "the output depends on the batch (its size or a statistic over it); treat each example on its own",
                )  # fmt: skip
            worst = max(worst, d)
    return Result("batch independence", True, f"batches of 1 and 2 vs 3: max |Δ logits| {worst:.2e}")


# What keeps padding away from real positions, by kind: the hint of a padding FAIL.
PADDING_HINTS = {
    "attention": "padded keys (keep False) must get no weight and add nothing",
    "norm": "normalize each position on its own, never over the sequence",
    "ffn": "transform each position on its own, never mix the sequence",
    "positional": "a position's encoding must not depend on the input's length",
    "block": "pass keep to the attention and mix positions nowhere else",
    "pooling": "padded positions (keep False) must not change the pooled vector",
}


def pools(kind: str, name: str) -> tuple[str, ...]:
    """The poolings a whole-model check runs under: the component itself, for a pooling."""
    return (name,) if kind == "pooling" else ("cls", "mean")


def padding(kind: str, name: str, cfg: ModelConfig) -> Result:
    ids, mask = batch(7)
    longer_ids = torch.cat([ids, torch.full((3, 4), PAD_ID)], dim=1)  # (3, 11)
    longer_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.bool)], dim=1)
    worst = 0.0
    for pool in pools(kind, name):
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
    return Result(
        "padding",
        True,
        f"pool {' and '.join(pools(kind, name))}, padded from 7 to 11: max |Δ logits| {worst:.2e}",
    )


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
    for pool in pools(kind, name):
        m = model(dataclasses.replace(cfg, pool=pool)).eval()
        with torch.no_grad():
            r = same("permutation", m(ids, mask).logits, m(shuffled, mask).logits)
        if not r.ok:
            return Result("permutation", False, f"pool {pool}: {r.detail} after shuffling the real tokens")
        worst = r
    return Result("permutation", True, f"pe none, pool {' and '.join(pools(kind, name))}: {worst.detail}")


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


def check(kind: str, name: str, plugins: tuple[str, ...] | list[str] = ()) -> list[Result]:
    """Every contract for the ``kind`` component ``name``, cause first; ``plugins`` (imported
    already) are imported again by the process check's fresh process."""
    if kind not in registry.KINDS:
        raise ConfigError(f"unknown component kind {kind!r}; the kinds are {', '.join(registry.KINDS)}")
    registry.get(kind, name)  # a ConfigError naming the registered ones
    try:
        cfg = tiny_config(kind, name)
        model(cfg)
    except Exception as err:  # noqa: BLE001 (whatever the component raises is the finding)
        return [Result("builds", False, f"{type(err).__name__}: {err}")]
    field = registry.OPTIONS_KEYS[kind]
    options = ", ".join(f"{k}={v!r}" for k, v in getattr(cfg, field).items())
    results = [
        Result(
            "builds",
            True,
            f"model.{registry.CONFIG_KEYS[kind]}={name!r} in a tiny encoder"
            + (f"; its options (model.{field}): {options}" if options else "; it has no options"),
        )
    ]
    fresh = conformance_process.Launched(kind, name, tuple(plugins))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: more intra-op threads only add synchronisation
    try:
        for contract, run in checks(kind, name, cfg, fresh):
            try:
                results.append(run())
            except Exception as err:  # noqa: BLE001 (a contract that crashes is broken)
                results.append(Result(contract, False, f"{type(err).__name__}: {err}"))
    finally:
        torch.set_num_threads(threads)
        fresh.stop()
    return results


def checks(
    kind: str, name: str, cfg: ModelConfig, fresh: conformance_process.Launched
) -> list[tuple[str, Callable[[], Result]]]:
    """The checks after ``builds``, in the order they run: each after those that would fail with it."""
    first: list[tuple[str, Callable[[], Result]]] = [
        ("shapes", lambda: shapes(kind, cfg)),
        (RANDOMNESS, lambda: keyed_randomness(cfg)),
        ("inputs unchanged", lambda: inputs_unchanged(kind, cfg)),
        ("batch independence", lambda: batch_independence(cfg)),
        ("padding", lambda: padding(kind, name, cfg)),
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
        (conformance_process.CONTRACT, lambda: fresh.result(kind, name)),
        ("parameters", lambda: parameters(kind, name, cfg)),
    ]
    return first + (own if kind == "attention" else []) + last
