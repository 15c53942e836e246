"""Attention archive for a fixed probe batch: raw maps, heatmaps and per-head statistics.

Every variant of an ablation sees the same probe examples, so its heatmaps can be compared
side by side. The maps come from the explicit attention path (``return_attention=True``);
head importance follows Michel et al. 2019 ("Are Sixteen Heads Really Better than One?"):
the accuracy lost when one head alone is masked out through ``head_mask``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from ablate.lit_modules.model.encoder import EncoderClassifier

CLS_TOKEN = "[CLS]"


def archive_attention(
    model: EncoderClassifier,
    probe: dict,
    out_dir: Path,
    *,
    eval_batches: Iterable[dict] | None = None,
) -> dict:
    """Write ``attention.npz``, ``layer<i>.png`` per layer and ``heads.json`` into ``out_dir``.

    ``probe``: input_ids (N, L) long, attention_mask (N, L) bool, labels (N,), tokens (N lists).
    ``eval_batches``: test batches (input_ids, attention_mask, labels); when given, head
    importance is computed. Returns the heads.json dict plus ``pngs`` (paths of the heatmaps).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = next(model.parameters()).device
    # model.train(mode) would flatten per-submodule modes; remember each one instead.
    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            ids = probe["input_ids"].to(device)  # (N, L)
            mask = probe["attention_mask"].to(device).bool()  # (N, L)
            out = model(ids, mask, return_attention=True)
            attentions = [a.float().cpu() for a in out.attentions]  # per layer (N, H, L', L')
            predictions = out.logits.argmax(dim=-1).cpu()  # (N,)
            importance, base = None, None
            if eval_batches is not None:
                importance, base = head_importance(model, eval_batches, device)
    finally:
        for m, training in modes.items():
            m.training = training

    keep = mask.cpu()
    if model.cfg.cls_token:
        keep = torch.cat([keep.new_ones(keep.shape[0], 1), keep], dim=1)  # (N, L')
    entropy, entropy_norm = zip(*(head_entropy(a, keep) for a in attentions), strict=True)

    arrays = {f"layer{i}": a.numpy().astype(np.float32) for i, a in enumerate(attentions)}
    np.savez_compressed(
        out_dir / "attention.npz",
        attention_mask=keep.numpy(),
        input_ids=probe["input_ids"].cpu().numpy(),
        **arrays,
    )

    labels = _probe_labels(probe["tokens"][0], mask[0].cpu(), model.cfg.cls_token)
    pngs = []
    for i, a in enumerate(attentions):
        path = out_dir / f"layer{i}.png"
        _plot_layer(a[0], keep[0], labels, entropy[i], f"layer {i}", path)
        pngs.append(str(path))

    heads = {
        "entropy": [e.tolist() for e in entropy],
        "entropy_norm": [e.tolist() for e in entropy_norm],
        "importance": importance,
        "metric": "acc",
        "base_metric": base,
        "tokens": [list(t) for t in probe["tokens"]],
        "labels": probe["labels"].tolist() if isinstance(probe["labels"], Tensor) else list(probe["labels"]),
        "predictions": predictions.tolist(),
    }
    (out_dir / "heads.json").write_text(json.dumps(heads, indent=1))
    return {**heads, "pngs": pngs}


def head_entropy(probs: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """probs: (N, H, L', L'), keep: (N, L') bool -> entropy (H,) in nats and normalized (H,).

    Per example, the mean over real queries of -sum_k p log p over real keys (padded keys carry
    p = 0); then the mean over examples that have a real query. Normalized divides each row by
    log(number of real keys): 1 = uniform, 0 = one key (a single real key counts as 0).
    """
    keep = keep.bool()
    p = probs.float() * keep[:, None, None, :]  # zero any mass on padded keys
    ent = -torch.special.xlogy(p, p).sum(-1)  # (N, H, L'), xlogy(0, 0) = 0
    n_keys = keep.sum(-1).to(p.dtype)  # (N,)
    log_n = n_keys.log()[:, None, None]  # (N, 1, 1)
    norm = torch.where(log_n > 0, ent / log_n.clamp(min=1e-12), torch.zeros_like(ent))  # (N, H, L')
    q = keep[:, None, :].to(p.dtype)  # (N, 1, L'): real queries
    n_q = q.sum(-1)  # (N, 1)
    has_q = (n_q > 0).squeeze(-1)  # (N,)

    def reduce(x: Tensor) -> Tensor:
        per_example = (x * q).sum(-1) / n_q.clamp(min=1)  # (N, H)
        return per_example[has_q].mean(0) if has_q.any() else per_example.new_zeros(x.shape[1])

    return reduce(ent), reduce(norm)


@torch.no_grad()
def head_importance(
    model: EncoderClassifier, eval_batches: Iterable[dict], device: torch.device
) -> tuple[list[list[float]], float]:
    """Accuracy with all heads minus accuracy with head (layer, h) alone masked; the model is in eval."""
    batches = [
        (b["input_ids"].to(device), b["attention_mask"].to(device).bool(), b["labels"].to(device))
        for b in eval_batches
    ]  # materialized once: a generator would be spent after the first pass
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    dtype = next(model.parameters()).dtype

    def accuracy(head_mask: Tensor | None) -> float:
        correct, total = 0, 0
        for ids, mask, y in batches:
            pred = model(ids, mask, head_mask=head_mask).logits.argmax(dim=-1)  # (B,)
            correct += int((pred == y).sum())
            total += y.numel()
        return correct / max(total, 1)

    base = accuracy(None)
    importance = []
    for layer in range(n_layers):
        row = []
        for h in range(n_heads):
            head_mask = torch.ones(n_layers, n_heads, device=device, dtype=dtype)  # (n_layers, H)
            head_mask[layer, h] = 0.0
            row.append(base - accuracy(head_mask))
        importance.append(row)
    return importance, base


def _probe_labels(tokens: list[str], mask: Tensor, cls: bool) -> list[str]:
    """Token strings of example 0's real positions; ``tokens`` may be padded to L or unpadded."""
    tokens = list(tokens)
    if len(tokens) == mask.numel():
        tokens = [t for t, m in zip(tokens, mask.tolist(), strict=True) if m]
    else:
        tokens = tokens[: int(mask.sum())]
    return [CLS_TOKEN, *tokens] if cls else tokens


def _plot_layer(
    probs: Tensor, keep: Tensor, labels: list[str], entropy: Tensor, title: str, path: Path
) -> None:
    """A grid of every head's (real query, real key) map for one example; one colour scale 0..1.

    Uses ``Figure`` directly (Agg canvas, no pyplot state), so nothing is left open.
    """
    idx = keep.nonzero().squeeze(-1)  # real positions of this example
    maps = probs[:, idx][:, :, idx].numpy()  # (H, n, n): queries on y, keys on x
    H, n = maps.shape[0], len(idx)
    labels = labels if len(labels) == n else [str(i) for i in range(n)]
    cols = min(H, 4)
    rows = math.ceil(H / cols)
    cell = min(3.2, max(1.8, 0.16 * n + 0.8))  # inches per head: grows with length, capped
    fig = Figure(figsize=(cols * cell + 0.8, rows * cell + 0.5), dpi=110, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    fontsize = 7 if n <= 20 else 5
    image = None
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.set_axis_off()
            continue
        image = ax.imshow(maps[h], vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
        ax.set_title(f"head {h}  H={float(entropy[h]):.2f}", fontsize=8)
        show = n <= 48  # beyond that the labels are unreadable; keep the map
        ax.set_xticks(range(n) if show else [])
        ax.set_yticks(range(n) if show else [])
        if show:
            ax.set_xticklabels(labels, rotation=90, fontsize=fontsize)
            ax.set_yticklabels(labels, fontsize=fontsize)
    # Two lines: one head's figure is narrower than the whole sentence.
    fig.suptitle(f"{title}\n(keys on x, queries on y; H = entropy in nats, probe mean)", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.8)
    fig.savefig(path, bbox_inches="tight")
