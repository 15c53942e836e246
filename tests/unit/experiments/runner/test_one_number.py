"""One cell, one number: a (config, seed) cell's metrics depend on nothing else.

Not on the stack it trains in (its size, its other seeds, its position), not on the
entry point (``ablate train``, a sweep worker of any worker count, the W&B agent's
``train --spec``), not on the process. A diverged member reports what the single run reports.
"""

from __future__ import annotations

import math

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from ablate.errors import ConfigError
from ablate.experiments.runner.cells import run_cells, run_trial
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.lit_modules.model.dropout import keep_mask
from ablate.lit_modules.systems.classifier import LitClassifier
from ablate.lit_modules.systems.seed_parallel import LitSeedParallel
from tests.helpers.configs import COUPLING_BASE, TINY_BASE

CFG = TrainConfig.from_dict(COUPLING_BASE).override({"trainer.max_steps": 12, "trainer.val_every": 6})


def stacked(k: int) -> TrainConfig:
    return CFG.override({"trainer.seed_parallel": k})


def weights(result) -> dict[str, torch.Tensor]:  # noqa: ANN001
    return dict(result.extras["model"].state_dict())


def assert_identical(a, b) -> None:  # noqa: ANN001
    assert a.metrics == b.metrics and a.steps == b.steps and a.diverged == b.diverged
    wa, wb = weights(a), weights(b)
    assert all(torch.equal(wa[n], wb[n]) for n in wa), "weights differ in some bit"


def test_keep_mask_is_a_function_of_key_site_and_coordinates() -> None:
    key = torch.tensor([7, 3])
    mask = keep_mask(key, 2, torch.Size([64, 9, 32]), 0.25, torch.device("cpu"))
    assert mask.float().mean().item() == pytest.approx(0.75, abs=0.01)
    assert torch.equal(mask, keep_mask(key, 2, torch.Size([64, 9, 32]), 0.25, torch.device("cpu")))
    # A longer padded length leaves the masks of the first positions as they were.
    longer = keep_mask(key, 2, torch.Size([64, 13, 32]), 0.25, torch.device("cpu"))
    assert torch.equal(longer[:, :9], mask)
    for other in ((torch.tensor([8, 3]), 2), (torch.tensor([7, 4]), 2), (key, 3)):  # seed, step, site
        different = keep_mask(other[0], other[1], torch.Size([64, 9, 32]), 0.25, torch.device("cpu"))
        agree = (different == mask).float().mean().item()
        assert agree == pytest.approx(0.75**2 + 0.25**2, abs=0.02)  # independent masks


def test_a_member_is_bit_identical_in_any_stack() -> None:
    """Seed 1 in a stack of 3 (middle), of 2 (first) and of 2 (last), and a stack of one."""
    three = run_cells(stacked(3), [0, 1, 2])[1]
    first = run_cells(stacked(2), [1, 3])[0]
    last = run_cells(stacked(2), [5, 1])[1]
    (alone,) = run_cells(stacked(2), [1])
    for other in (first, last, alone):
        assert_identical(three, other)
    assert run_cells(stacked(2), [1, 3])[1].metrics != first.metrics  # another seed, another run


def test_a_member_matches_the_single_path_over_a_short_run() -> None:
    member = run_cells(stacked(3), [0, 1, 2])[1]
    alone = run_trial(CFG.override({"seed": 1}))
    for name in ("val/loss", "test/loss"):
        assert member.metrics[name] == pytest.approx(alone.metrics[name], abs=1e-5)
    torch.testing.assert_close(weights(member), weights(alone), atol=5e-5, rtol=1e-4)


POISON_SEED, POISON_STEP = 1, 5


@pytest.fixture
def poison(monkeypatch: pytest.MonkeyPatch) -> None:
    """From step 5 on, the training loss of seed 1 (alone or in any stack) is NaN."""
    for cls in (LitClassifier, LitSeedParallel):
        original = cls.train_losses

        def losses(self, logits, labels, original=original):  # noqa: ANN001, ANN202
            loss = original(self, logits, labels)
            if self.global_step < POISON_STEP:
                return loss
            bad = torch.tensor([s == POISON_SEED for s in self.seeds])
            return torch.where(bad, math.nan, loss).reshape(loss.shape)

        monkeypatch.setattr(cls, "train_losses", losses)


class MemberState(Callback):
    """Member k's weights and AdamW moments at the poisoned step and at the end of training."""

    def __init__(self, k: int) -> None:
        self.k, self.seen = k, []

    def _take(self, trainer, lit) -> None:  # noqa: ANN001
        opt = trainer.optimizers[0]
        state = [w[self.k].clone() for w in lit.model.weights]
        state += [v[self.k].clone() for w in lit.model.weights for v in opt.state[w].values() if v.dim()]
        self.seen.append(state)

    def on_train_batch_start(self, trainer, lit, batch, batch_idx) -> None:  # noqa: ANN001
        if trainer.global_step == POISON_STEP:
            self._take(trainer, lit)

    def on_train_end(self, trainer, lit) -> None:  # noqa: ANN001
        self._take(trainer, lit)


@pytest.mark.usefixtures("poison")
def test_a_diverged_member_reports_what_the_single_run_reports() -> None:
    alone = run_trial(CFG.override({"seed": POISON_SEED}))
    assert alone.diverged and alone.steps == POISON_STEP
    freeze = MemberState(k=1)
    results = run_cells(stacked(3), [0, POISON_SEED, 2], callbacks=[freeze])
    member = results[1]
    assert member.diverged and member.steps == POISON_STEP
    for name in ("val/loss", "test/loss"):
        assert member.metrics[name] == pytest.approx(alone.metrics[name], abs=1e-5)
    for name in ("val/acc", "test/acc"):
        assert member.metrics[name] == alone.metrics[name]
    torch.testing.assert_close(weights(member), weights(alone), atol=5e-5, rtol=1e-4)
    # Frozen at its last finite state: weights and AdamW moments as they were before that step.
    assert len(freeze.seen) == 2
    for at_poison, at_end in zip(*freeze.seen, strict=True):
        assert torch.equal(at_poison, at_end)
    # The others trained on, exactly as in a stack without the diverging member.
    clean = run_cells(stacked(2), [0, 2])
    assert not results[0].diverged and results[0].steps == CFG.trainer.max_steps
    assert_identical(results[0], clean[0])
    assert_identical(results[2], clean[1])


def test_cpu_threads_is_part_of_the_cell_config() -> None:
    cfg = CFG.override({"trainer.cpu_threads": 2})
    assert cfg.flat()["trainer.cpu_threads"] == 2 and CFG.flat()["trainer.cpu_threads"] == 1
    run_trial(cfg.override({"trainer.max_steps": 1}))
    assert torch.get_num_threads() == 2
    run_trial(CFG.override({"trainer.max_steps": 1}))
    assert torch.get_num_threads() == 1


TINY = {
    **TINY_BASE,
    "model": {**TINY_BASE["model"], "dropout": 0.1},
    "trainer": {"max_steps": 6, "log_every": 1},
}


@pytest.mark.parametrize("key", ["trainer.seed_parallel", "trainer.cpu_threads"])
def test_a_variant_cannot_change_the_path_or_the_numerics(key: str) -> None:
    raw = {"name": "x", "base": TINY, "variants": {"baseline": {}, "other": {key: 2}}}
    with pytest.raises(ConfigError, match=f"variant 'other' sets {key}: every cell of a study"):
        spec_from_dict(raw)
    spec = spec_from_dict(
        {**raw, "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}}, overrides=[f"{key}=2"]
    )
    assert spec.identity() != spec_from_dict({**raw, "variants": spec.variants}).identity()
