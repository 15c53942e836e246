"""Seed-parallel training: member k of the stack is the same run as seed k alone (dropout
included); clipping, dropout and divergence are per member; a sweep stores each member as its
own cell. Group independence and the divergence rule across paths: tests/unit/experiments/runner/test_one_number.py."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from ablate.experiments.runner.cells import run_cells, run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.lit_modules.model.config import ModelConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.systems.seed_parallel import (
    StackedEncoder,
    clip_per_member,
    member_metrics,
    stack_batches,
)
from tests.helpers.configs import COUPLING_BASE

CFG = TrainConfig.from_dict(COUPLING_BASE).override({"trainer.seed_parallel": 3})
SINGLE = CFG.override({"trainer.seed_parallel": 1})
SEEDS = [0, 1, 2]


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return dict(model.state_dict())


@pytest.fixture(scope="module")
def stacked() -> list:
    return run_cells(CFG, SEEDS)


@pytest.mark.parametrize("k", range(len(SEEDS)))
def test_member_matches_the_seed_trained_alone(stacked: list, k: int) -> None:
    alone = run_trial(SINGLE.override({"seed": SEEDS[k]}))
    member = stacked[k]
    assert member.config.override({"trainer.seed_parallel": 1}) == alone.config
    assert member.steps == alone.steps == 8
    # Same init, data order and dropout masks: the paths differ only in float rounding.
    torch.testing.assert_close(
        weights(member.extras["model"]), weights(alone.extras["model"]), atol=5e-5, rtol=1e-4
    )
    for key in ("val/loss", "test/loss"):
        assert member.metrics[key] == pytest.approx(alone.metrics[key], abs=1e-5), key
    for key in ("val/acc", "test/acc", "test/f1"):
        assert member.metrics[key] == pytest.approx(alone.metrics[key], abs=1e-4), key
    # The members really are different runs.
    assert (
        weights(stacked[0].extras["model"])["head.weight"]
        .ne(weights(stacked[1].extras["model"])["head.weight"])
        .any()
    )


def test_member_metrics_splits_what_a_stack_logged() -> None:
    logged = {"val/acc@0": 0.5, "val/acc@1": 0.75, "test/loss@1": 0.1}
    assert member_metrics(logged, 2) == [{"val/acc": 0.5}, {"val/acc": 0.75, "test/loss": 0.1}]
    assert member_metrics({"val/acc": 0.5}, 1) == [{"val/acc": 0.5}]  # the single path


def test_clipping_is_per_member() -> None:
    torch.manual_seed(0)
    scale = torch.tensor([0.01, 1.0, 10.0])  # member 0 below the limit, 1 and 2 above
    grads = [torch.randn(3, 4, 5) * scale.view(3, 1, 1), torch.randn(3, 7) * scale.view(3, 1)]
    before = [g.clone() for g in grads]
    alone = [[g[k].clone() for g in grads] for k in range(3)]
    norms = clip_per_member(grads, 0.5)
    for k in range(3):
        expected = torch.nn.utils.clip_grad_norm_([_with_grad(g) for g in alone[k]], 0.5)
        assert norms[k] == pytest.approx(float(expected), rel=1e-5)
        for got, want in zip((g[k] for g in grads), alone[k], strict=True):
            torch.testing.assert_close(got, want)
    assert norms[0] < 0.5 < norms[1]
    assert all(torch.equal(g[0], b[0]) for g, b in zip(grads, before, strict=True))  # untouched
    assert not torch.allclose(grads[0][1], before[0][1])


def _with_grad(g: torch.Tensor) -> torch.nn.Parameter:
    p = torch.nn.Parameter(torch.zeros_like(g))
    p.grad = g  # clip_grad_norm_ scales it in place, so alone[k] holds the clipped value
    return p


def test_dropout_masks_follow_the_key_not_the_stack() -> None:
    cfg = ModelConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.5, attn_dropout=0.5)
    model = StackedEncoder(cfg, vocab_size=10, n_classes=2, seeds=[3, 3])  # identical weights
    ids = torch.randint(1, 10, (4, 6))
    mask = torch.ones(4, 6, dtype=torch.bool)
    model.eval()
    logits = model(ids, mask, shared=True)
    torch.testing.assert_close(logits[0], logits[1])
    model.train()
    keys = torch.tensor([[3, 7], [4, 7]])  # other seed, same step: other masks
    logits = model(ids, mask, keys, shared=True)
    assert not torch.allclose(logits[0], logits[1])
    same = model(ids, mask, torch.tensor([[4, 7], [4, 7]]), shared=True)
    torch.testing.assert_close(same[0], same[1])
    torch.testing.assert_close(same[1], logits[1])  # member 1's masks do not depend on member 0
    # The single model draws the same masks from the same key.
    torch.manual_seed(3)
    single = EncoderClassifier(cfg, vocab_size=10, n_classes=2).train()
    torch.testing.assert_close(
        single(ids, mask, key=torch.tensor([4, 7])).logits, same[0], atol=1e-5, rtol=1e-5
    )


def test_stack_batches_pads_to_the_given_length() -> None:
    a = {
        "input_ids": torch.ones(2, 3, dtype=torch.long),
        "attention_mask": torch.ones(2, 3, dtype=torch.bool),
        "labels": torch.tensor([0, 1]),
    }
    b = {
        "input_ids": torch.ones(2, 5, dtype=torch.long),
        "attention_mask": torch.ones(2, 5, dtype=torch.bool),
        "labels": torch.tensor([1, 1]),
    }
    ids, mask, labels = stack_batches([a, b], 7)
    assert ids.shape == mask.shape == (2, 2, 7) and labels.tolist() == [[0, 1], [1, 1]]
    assert not mask[0, :, 3:].any() and ids[0, :, 3:].eq(0).all() and mask[1, :, :5].all()
    assert not mask[1, :, 5:].any()


class Poison(Callback):
    """Make member 1's weights NaN before the first step: only it may diverge."""

    def on_train_start(self, trainer, pl_module) -> None:
        with torch.no_grad():
            pl_module.model.weights[0][1].fill_(math.nan)


def test_one_diverging_member_does_not_stop_the_others(stacked: list) -> None:
    results = run_cells(CFG, SEEDS, callbacks=[Poison()])
    assert [r.diverged for r in results] == [False, True, False]
    assert results[1].steps == 0 and results[0].steps == results[2].steps == 8
    for k in (0, 2):  # the others trained exactly as without the poisoned member
        torch.testing.assert_close(weights(results[k].extras["model"]), weights(stacked[k].extras["model"]))
        assert results[k].metrics == stacked[k].metrics


def test_each_member_logs_its_own_curves(tmp_path: Path) -> None:
    """Through Lightning's self.log and MemberLogger: member k's CSV holds its own train/loss and
    val curves, without '@', equal to that seed's curves in a stack of one."""
    from lightning.pytorch.loggers import CSVLogger

    def curves(seeds: list[int], where: str) -> list[list[dict]]:
        loggers = [CSVLogger(tmp_path / where / str(s), name="", version="") for s in seeds]
        run_cells(CFG, seeds, loggers=loggers)
        return [list(csv.DictReader((tmp_path / where / str(s) / "metrics.csv").open())) for s in seeds]

    stacked, (alone,) = curves([0, 1], "stack"), curves([1], "alone")
    for rows in stacked:
        train = [r for r in rows if r.get("train/loss")]
        assert [int(r["step"]) for r in train] == list(range(8)) and all("@" not in k for k in rows[0])
        assert [r["step"] for r in rows if r.get("val/acc")] == ["3", "7", "8"]  # val_every 4, then the final
    assert [r["train/loss"] for r in stacked[0] if r.get("train/loss")] != [
        r["train/loss"] for r in stacked[1] if r.get("train/loss")
    ]
    assert stacked[1] == alone
