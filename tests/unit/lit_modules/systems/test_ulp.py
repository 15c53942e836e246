"""The numerics seed factor (lit_modules/systems/ulp.py): level 0 changes nothing, level j > 0 moves
every weight exactly one ulp in directions that depend on j alone, and a seed-parallel member
gets the same perturbed init as its run alone."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from ablate.experiments.schema.config import TrainConfig
from ablate.lit_modules.model.encoder import EncoderClassifier
from ablate.lit_modules.systems.seed_parallel import StackedEncoder
from ablate.lit_modules.systems.ulp import perturb_ulp
from tests.helpers.configs import COUPLING_BASE

MODEL = TrainConfig.from_dict(COUPLING_BASE).model
SIZES = {"vocab_size": 40, "n_classes": 3}


def model(seed: int) -> EncoderClassifier:
    L.seed_everything(seed, verbose=False)
    return EncoderClassifier(MODEL, **SIZES)


def params(m: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in m.named_parameters()}


def test_level_0_changes_nothing() -> None:
    m = model(0)
    before = params(m)
    perturb_ulp(m, 0)
    assert all(torch.equal(before[k], v) for k, v in params(m).items())


@pytest.mark.parametrize("level", [1, 2, 7])
def test_a_level_moves_every_weight_one_ulp(level: int) -> None:
    m = model(3)
    before = params(m)
    perturb_ulp(m, level)
    for name, after in params(m).items():
        x = before[name]
        up, down = (
            torch.nextafter(x, torch.full_like(x, torch.inf)),
            torch.nextafter(x, torch.full_like(x, -torch.inf)),
        )
        assert bool(((after == up) | (after == down)).all()), name  # exactly one ulp, no element left alone
        assert not torch.equal(after, x)


def test_the_directions_depend_on_the_level_only() -> None:
    def directions(seed: int, level: int) -> torch.Tensor:
        m = model(seed)
        before = torch.cat([p.flatten() for p in params(m).values()])
        perturb_ulp(m, level)
        return torch.cat([p.flatten() for p in params(m).values()]) > before

    assert torch.equal(directions(0, 2), directions(5, 2))  # the same treatment in every init
    assert not torch.equal(directions(0, 1), directions(0, 2))


def test_a_stack_member_starts_from_its_runs_perturbed_init() -> None:
    seeds, levels = [0, 0, 4], [0, 2, 1]
    stack = StackedEncoder(MODEL, **SIZES, seeds=seeds, numerics=levels)
    for k, (seed, level) in enumerate(zip(seeds, levels, strict=True)):
        alone = model(seed)
        perturb_ulp(alone, level)
        for name, w in zip(stack.names, stack.weights, strict=True):
            assert torch.equal(w[k], dict(alone.named_parameters())[name]), (k, name)
