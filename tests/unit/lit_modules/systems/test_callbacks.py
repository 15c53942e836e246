"""The attention archive: files and shapes, entropy, head importance, training mode restored.

Tiny odd sizes (3 layers, 2 heads, probe of 3 examples of length 5) catch shape bugs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.systems.callbacks import _probe_labels, archive_attention

VOCAB, CLASSES, N_LAYERS, N_HEADS, L = 13, 3, 3, 2, 5
LENGTHS = (5, 2, 4)


def model(pool: str = "cls", **over: object) -> EncoderClassifier:
    base = dict(d_model=12, n_layers=N_LAYERS, n_heads=N_HEADS, d_ff=20, dropout=0.0, init_std=0.5, pool=pool)
    torch.manual_seed(0)
    return EncoderClassifier(ModelConfig(**{**base, **over}), VOCAB, CLASSES)


def batch(lengths: tuple[int, ...], total: int, seed: int = 1) -> dict:
    """Right-padded ids (pad id 0), bool mask, random labels, token strings (unpadded)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (len(lengths), total), generator=g)
    mask = torch.arange(total)[None, :] < torch.tensor(lengths)[:, None]
    ids = ids.masked_fill(~mask, 0)
    tokens = [[f"t{int(i)}" for i in row[:n]] for row, n in zip(ids, lengths, strict=True)]
    labels = torch.randint(0, CLASSES, (len(lengths),), generator=g)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels, "tokens": tokens}


def real_keep(pool: str, mask: torch.Tensor) -> np.ndarray:
    """(N, L') bool with the [CLS] position first when pooling by [CLS]."""
    keep = mask.numpy()
    return np.concatenate([np.ones((len(keep), 1), bool), keep], axis=1) if pool == "cls" else keep


@pytest.mark.parametrize("pool", ["cls", "mean"])
def test_files_shapes_and_probabilities(pool: str, tmp_path: Path) -> None:
    m = model(pool)
    probe = batch(LENGTHS, L)
    result = archive_attention(m, probe, tmp_path)
    Lp = L + 1 if pool == "cls" else L

    assert result["pngs"] == [str(tmp_path / f"layer{i}.png") for i in range(N_LAYERS)]
    for png in result["pngs"]:
        assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["attention.npz", "heads.json"] + [f"layer{i}.png" for i in range(N_LAYERS)]
    )

    npz = np.load(tmp_path / "attention.npz")
    keep = real_keep(pool, probe["attention_mask"])
    np.testing.assert_array_equal(npz["attention_mask"], keep)
    np.testing.assert_array_equal(npz["input_ids"], probe["input_ids"].numpy())
    assert not any(f"layer{N_LAYERS}" == k for k in npz.files)
    for i in range(N_LAYERS):
        a = npz[f"layer{i}"]
        assert a.shape == (len(LENGTHS), N_HEADS, Lp, Lp) and a.dtype == np.float32
        kk = keep[:, None, None, :]  # (N, 1, 1, L')
        np.testing.assert_allclose((a * kk).sum(-1), 1.0, atol=1e-5)
        assert np.all(a[np.broadcast_to(~kk, a.shape)] == 0.0)

    heads = json.loads((tmp_path / "heads.json").read_text())
    assert heads == {k: v for k, v in result.items() if k != "pngs"}
    assert heads["metric"] == "acc" and heads["importance"] is None and heads["base_metric"] is None
    assert heads["tokens"] == probe["tokens"] and heads["labels"] == probe["labels"].tolist()
    with torch.no_grad():
        expected = m.eval()(probe["input_ids"], probe["attention_mask"]).logits.argmax(-1)
    assert heads["predictions"] == expected.tolist()
    assert np.array(heads["entropy"]).shape == (N_LAYERS, N_HEADS)


@pytest.mark.parametrize("pool", ["cls", "mean"])
def test_entropy_of_forced_uniform_attention(pool: str, tmp_path: Path) -> None:
    """Zero query and key projections: every real query attends uniformly, entropy = log(n keys)."""
    m = model(pool, pe="none")
    d = m.cfg.d_model
    with torch.no_grad():
        for block in m.blocks:
            block.attn.qkv.weight[: 2 * d].zero_()
            block.attn.qkv.bias[: 2 * d].zero_()
    result = archive_attention(m, batch(LENGTHS, L), tmp_path)
    n_keys = [n + (pool == "cls") for n in LENGTHS]
    expected = np.mean([math.log(n) for n in n_keys])
    np.testing.assert_allclose(result["entropy"], np.full((N_LAYERS, N_HEADS), expected), rtol=1e-5)
    np.testing.assert_allclose(result["entropy_norm"], 1.0, rtol=1e-5)


@pytest.mark.parametrize("pool", ["cls", "mean"])
def test_entropy_matches_numpy_from_npz(pool: str, tmp_path: Path) -> None:
    result = archive_attention(model(pool, init_std=1.5), batch(LENGTHS, L), tmp_path)
    npz = np.load(tmp_path / "attention.npz")
    keep = npz["attention_mask"]
    for i in range(N_LAYERS):
        a = npz[f"layer{i}"].astype(np.float64)
        ent = np.zeros((len(LENGTHS), N_HEADS))
        norm = np.zeros_like(ent)
        for n in range(len(LENGTHS)):
            idx = np.flatnonzero(keep[n])
            p = a[n][:, idx][:, :, idx]  # (H, real queries, real keys)
            e = -(p * np.log(np.where(p > 0, p, 1.0))).sum(-1)  # (H, q)
            ent[n] = e.mean(-1)
            norm[n] = (e / math.log(len(idx))).mean(-1)
        np.testing.assert_allclose(result["entropy"][i], ent.mean(0), rtol=1e-4)
        np.testing.assert_allclose(result["entropy_norm"][i], norm.mean(0), rtol=1e-4)
    # Large init: the maps are not uniform, so the uniform case above does not cover this one.
    assert np.min(result["entropy_norm"]) < 0.95


def accuracy(m: EncoderClassifier, batches: list[dict], head_mask: torch.Tensor | None = None) -> float:
    with torch.no_grad():
        preds = [
            m(b["input_ids"], b["attention_mask"], head_mask=head_mask).logits.argmax(-1) for b in batches
        ]
    labels = torch.cat([b["labels"] for b in batches])
    return int((torch.cat(preds) == labels).sum()) / labels.numel()


@pytest.mark.parametrize("pool", ["cls", "mean"])
def test_head_importance(pool: str, tmp_path: Path) -> None:
    m = model(pool, init_std=1.0, block="post").eval()  # Post-LN: single heads flip predictions here
    hd = m.cfg.head_dim
    dead_layer, dead_head = 1, 1
    with torch.no_grad():  # head (1, 1) writes nothing: masking it changes nothing
        m.blocks[dead_layer].attn.out.weight[:, dead_head * hd : (dead_head + 1) * hd].zero_()
    batches = [batch((5, 3, 7, 1), 7, seed=s) for s in (2, 3, 4)]
    # Labels = predictions with head (0, 0) masked: masking it scores 1.0, so its importance is
    # base - 1 < 0, which tells the heads apart (a mix-up of layer or head index shows).
    target = torch.ones(N_LAYERS, N_HEADS)
    target[0, 0] = 0.0
    with torch.no_grad():
        for b in batches:
            b["labels"] = m(b["input_ids"], b["attention_mask"], head_mask=target).logits.argmax(-1)
    base = accuracy(m, batches)
    assert base < 1.0, "masking head (0, 0) must change some prediction for this test to bite"

    result = archive_attention(m, batch(LENGTHS, L), tmp_path, eval_batches=(b for b in batches))
    imp = np.array(result["importance"])
    assert imp.shape == (N_LAYERS, N_HEADS)
    assert result["base_metric"] == pytest.approx(base, abs=1e-12)
    assert imp[dead_layer, dead_head] == 0.0
    assert imp[0, 0] == pytest.approx(base - 1.0, abs=1e-12)
    for layer in range(N_LAYERS):
        for h in range(N_HEADS):
            hm = torch.ones(N_LAYERS, N_HEADS)
            hm[layer, h] = 0.0
            assert imp[layer, h] == pytest.approx(base - accuracy(m, batches, hm), abs=1e-12)
    assert json.loads((tmp_path / "heads.json").read_text())["importance"] == result["importance"]


def test_runs_in_eval_mode_and_restores_training_mode(tmp_path: Path) -> None:
    m = model("cls", dropout=0.5, attn_dropout=0.3)
    probe = batch(LENGTHS, L)
    m.train()
    m.blocks[0].ffn.eval()  # a mixed state must come back as it was, not flattened
    before = {name: mod.training for name, mod in m.named_modules()}
    first = archive_attention(m, probe, tmp_path / "a", eval_batches=[probe])
    assert {name: mod.training for name, mod in m.named_modules()} == before
    second = archive_attention(m, probe, tmp_path / "b", eval_batches=[probe])
    # Dropout off during the archive: two runs agree and match an eval-mode forward.
    for i in range(N_LAYERS):
        a = np.load(tmp_path / "a" / "attention.npz")[f"layer{i}"]
        np.testing.assert_array_equal(a, np.load(tmp_path / "b" / "attention.npz")[f"layer{i}"])
    assert first["importance"] == second["importance"]
    with torch.no_grad():
        ref = m.eval()(probe["input_ids"], probe["attention_mask"], return_attention=True)
    np.testing.assert_allclose(
        np.load(tmp_path / "a" / "attention.npz")["layer0"], ref.attentions[0].numpy(), atol=1e-6
    )

    m.eval()
    archive_attention(m, probe, tmp_path / "c")
    assert not any(mod.training for mod in m.modules())


def test_probe_labels_padded_or_not() -> None:
    mask = torch.tensor([True, True, False])
    assert _probe_labels(["a", "b", "[PAD]"], mask, cls=True) == ["[CLS]", "a", "b"]
    assert _probe_labels(["a", "b"], mask, cls=False) == ["a", "b"]
