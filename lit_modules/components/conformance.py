"""The conformance kit: does a component keep the guarantees a built-in keeps?

``check(kind, name)`` builds a tiny encoder (batch 3, length 7, d_model 16, 4 heads, dropout on,
odd sizes that catch shape bugs) with the component in its place and checks, each contract on
its own (``ablate check-component KIND NAME``; ``ablate.testing`` in pytest):

- builds: the config is accepted (its ``check``) and the model builds;
- shapes: the component maps its inputs to the contract's shapes, the model gives (B, C) logits;
- padding: a copy of the batch padded to a longer length gives the same logits;
- permutation: with ``pe: none`` (or the component itself, for an ``order_free`` encoding) the
  encoder is permutation-invariant: shuffling an example's real tokens leaves its logits;
- fused vs explicit: ``attn_impl: sdpa`` and ``eager`` (and the probabilities path) agree;
- keyed randomness: the component trains inside a seed-parallel stack under
  ``vmap(randomness="error")`` (so any random draw but ``KeyedDropout``'s fails), and after three
  AdamW steps the member of seed 1 is bit-identical in a stack of seeds (0, 1) and one of (1, 2);
- state dict: a second model loading the first's state dict gives the same logits;

and reports the parameter count beside that of the built-in it replaces.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ablate.errors import ConfigError
from ablate.lit_modules.model import registry
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import PAD_ID, EncoderClassifier

DEFAULTS = {"positional": "sinusoidal", "attention": "mha", "norm": "layernorm", "ffn": "mlp"}
TINY = {
    "d_model": 16,
    "n_layers": 2,
    "n_heads": 4,
    "d_ff": 24,
    "dropout": 0.1,
    "attn_dropout": 0.1,
    "max_len": 32,
}
VOCAB, CLASSES, LENGTHS = 13, 3, (7, 5, 2)  # batch 3, one full row, two padded rows
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Result:
    contract: str
    ok: bool | None  # None: does not apply (with the reason in detail) or an information line
    detail: str = ""

    def line(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[self.ok]
        return f"{mark} {self.contract}" + (f": {self.detail}" if self.detail else "")


def tiny_config(kind: str, name: str, **over: object) -> ModelConfig:
    """The kit's model config with the component ``name`` as the ``kind``."""
    return ModelConfig(**{**TINY, registry.CONFIG_KEYS[kind]: name, **over})  # type: ignore[arg-type]


def batch(length: int = 7) -> tuple[Tensor, Tensor]:
    """Fixed ids (3, length) padded on the right to the rows' LENGTHS, and their mask."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, VOCAB, (3, length), generator=g)
    mask = torch.arange(length)[None, :] < torch.tensor(LENGTHS)[:, None]
    return ids.masked_fill(~mask, PAD_ID), mask


def model(cfg: ModelConfig, seed: int = 0) -> EncoderClassifier:
    torch.manual_seed(seed)
    return EncoderClassifier(cfg, vocab_size=VOCAB, n_classes=CLASSES)


def _diff(a: Tensor, b: Tensor) -> float:
    return float((a.float() - b.float()).abs().max()) if a.shape == b.shape else math.inf


def _same(what: str, a: Tensor, b: Tensor, tol: float = TOLERANCE) -> Result:
    d = _diff(a, b)
    return Result(what, d <= tol, f"max |Δ logits| {d:.2e}" + ("" if d <= tol else f" > {tol:g}"))


def shapes(kind: str, cfg: ModelConfig) -> Result:
    m = model(cfg).eval()
    ids, mask = batch()
    x = torch.randn(3, 7, cfg.d_model)
    with torch.no_grad():
        logits = m(ids, mask).logits
        if tuple(logits.shape) != (3, CLASSES):
            return Result("shapes", False, f"logits {tuple(logits.shape)}, expected (3, {CLASSES})")
        block = m.blocks[0]
        if kind == "norm":
            out = block.norm1(x)
            want = [("norm(x)", out, x.shape)]
        elif kind == "ffn":
            want = [("ffn(x, key)", block.ffn(x, None), x.shape)]
        elif kind == "attention":
            y, probs = block.attn(x, mask, m.pe, need_weights=True)
            want = [("attention(x)", y, x.shape), ("probabilities", probs, (3, cfg.n_heads, 7, 7))]
        else:
            q = torch.randn(3, cfg.n_heads, 7, cfg.head_dim)
            rq, rk = m.pe.rotate(q, q.clone())
            want = [
                ("add(x)", m.pe.add(x), x.shape),
                ("rotate(q, k)", rq, q.shape),
                ("rotate(q, k)", rk, q.shape),
            ]
            bias = m.pe.bias(7, x.device, x.dtype)
            if bias is not None:
                want.append(("bias(L)", bias, (cfg.n_heads, 7, 7)))
    bad = [
        f"{what} gives {tuple(t.shape)}, expected {tuple(s)}"
        for what, t, s in want
        if tuple(t.shape) != tuple(s)
    ]
    if kind == "attention" and not bad:
        rows = probs.sum(-1)
        if (
            _diff(rows, torch.ones_like(rows)) > 1e-4
            or float(probs.masked_select(~mask[:, None, None, :]).abs().max()) > 0
        ):
            bad.append("probabilities must sum to 1 over the keys and be 0 on padded keys")
    return Result("shapes", not bad, "; ".join(bad) or "component and logits as the contract says")


def padding(cfg: ModelConfig) -> Result:
    ids, mask = batch(7)
    longer_ids = torch.cat([ids, torch.full((3, 4), PAD_ID)], dim=1)  # (3, 11)
    longer_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.bool)], dim=1)
    worst = 0.0
    for pool in ("cls", "mean"):
        m = model(dataclasses.replace(cfg, pool=pool)).eval()
        with torch.no_grad():
            d = _diff(m(ids, mask).logits, m(longer_ids, longer_mask).logits)
        if d > TOLERANCE:
            return Result("padding", False, f"pool {pool}, padded from 7 to 11: max |Δ logits| {d:.2e}")
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
            r = _same("permutation", m(ids, mask).logits, m(shuffled, mask).logits)
        if not r.ok:
            return Result("permutation", False, f"pool {pool}: {r.detail} after shuffling the real tokens")
        worst = r
    return Result("permutation", True, f"pe none, pool cls and mean: {worst.detail}")


def fused_explicit(cfg: ModelConfig) -> Result:
    fused = model(dataclasses.replace(cfg, attn_impl="sdpa")).eval()
    explicit = model(dataclasses.replace(cfg, attn_impl="eager"))
    explicit.load_state_dict(fused.state_dict())
    explicit.eval()
    ids, mask = batch()
    with torch.no_grad():
        a = fused(ids, mask).logits
        r = _same("fused vs explicit", a, explicit(ids, mask).logits)
        probs = _same("fused vs explicit", a, fused(ids, mask, return_attention=True).logits)
    if not r.ok:
        return Result(r.contract, False, f"attn_impl sdpa vs eager: {r.detail}")
    if not probs.ok:
        return Result(r.contract, False, f"with vs without the probabilities: {probs.detail}")
    return Result(r.contract, True, f"attn_impl sdpa vs eager and the probabilities path: {r.detail}")


def _trained_member(cfg: ModelConfig, seeds: list[int], member: int, steps: int = 3) -> list[Tensor]:
    """Member ``member``'s weights after ``steps`` AdamW steps of a stack of ``seeds``."""
    from ablate.lit_modules.systems.classifier import dropout_keys, train_losses
    from ablate.lit_modules.systems.seed_parallel import StackedEncoder

    stack = StackedEncoder(cfg, vocab_size=VOCAB, n_classes=CLASSES, seeds=seeds).train()
    opt = torch.optim.AdamW(stack.parameters(), lr=1e-2)
    ids, mask = batch()
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
                "keyed randomness, stack independence", False,
                "it draws random numbers itself (vmap randomness='error' refused it); use KeyedDropout "
                "with the key it is given",
            )  # fmt: skip
        return Result(
            "keyed randomness, stack independence", False, f"it does not run in a seed-parallel stack: {err}"
        )
    same = all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    return Result(
        "keyed randomness, stack independence",
        same,
        "seed 1 after 3 steps: bit-identical in stacks (0, 1) and (1, 2)"
        if same
        else "seed 1's weights after 3 steps differ between stacks (0, 1) and (1, 2)",
    )


def state_dict(cfg: ModelConfig) -> Result:
    a = model(cfg, seed=0).eval()
    b = model(cfg, seed=1)
    try:
        b.load_state_dict(a.state_dict())
    except RuntimeError as err:
        return Result("state dict", False, f"load_state_dict: {str(err).splitlines()[0]}")
    b.eval()
    ids, mask = batch()
    with torch.no_grad():
        return _same("state dict", a(ids, mask).logits, b(ids, mask).logits, tol=0.0)


def parameters(kind: str, name: str, cfg: ModelConfig) -> Result:
    default = DEFAULTS[kind]
    n = sum(p.numel() for p in model(cfg).parameters())
    ref = sum(p.numel() for p in model(tiny_config(kind, default)).parameters())
    return Result("parameters", None, f"{n:,} in the kit's model; with the built-in {default!r}: {ref:,}")


def check(kind: str, name: str) -> list[Result]:
    """Every contract for the ``kind`` component ``name`` (imported plugins included)."""
    if kind not in registry.KINDS:
        raise ConfigError(f"unknown component kind {kind!r}; the kinds are {', '.join(registry.KINDS)}")
    registry.get(kind, name)  # a ConfigError naming the registered ones
    try:
        cfg = tiny_config(kind, name)
        model(cfg)
    except Exception as err:  # noqa: BLE001 (whatever the component raises is the finding)
        return [Result("builds", False, f"{type(err).__name__}: {err}")]
    checks: list[tuple[str, Callable[[], Result]]] = [
        ("shapes", lambda: shapes(kind, cfg)),
        ("padding", lambda: padding(cfg)),
        ("permutation", lambda: permutation(kind, name, cfg)),
        ("fused vs explicit", lambda: fused_explicit(cfg)),
        ("keyed randomness, stack independence", lambda: keyed_randomness(cfg)),
        ("state dict", lambda: state_dict(cfg)),
        ("parameters", lambda: parameters(kind, name, cfg)),
    ]
    results = [Result("builds", True, f"model.{registry.CONFIG_KEYS[kind]}={name!r} in a tiny encoder")]
    for contract, run in checks:
        try:
            results.append(run())
        except Exception as err:  # noqa: BLE001 (a contract that crashes is broken)
            results.append(Result(contract, False, f"{type(err).__name__}: {err}"))
    return results
