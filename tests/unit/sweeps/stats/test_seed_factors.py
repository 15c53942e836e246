"""seed_factors: init and data order as separate, crossed factors, and each variant's seed
variance split into init, data order and residual (two-way random effects)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import Callback

from ablate.errors import ConfigError
from ablate.experiments.runner.cells import run_cells
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.lit_modules.systems.seed_parallel import LitSeedParallel
from ablate.sweeps.stats.summary import variance_components
from tests.helpers.configs import TINY_BASE

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}}


def test_spec_seed_factors_set_the_seeds_and_the_streams() -> None:
    spec = spec_from_dict(
        {"name": "f", "base": TINY_BASE, "variants": VARIANTS, "seed_factors": {"init": 3, "data_order": 2}}
    )
    assert spec.seeds == (0, 1, 2, 3, 4, 5) and spec.base.trainer.order_seeds == 2
    assert [spec.cell_config("no_pe", s).streams(s) for s in spec.seeds] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 1),
    ]
    assert TrainConfig().streams(7) == (7, 7)  # without factors the seed drives both


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"seed_factors": {"init": 3}}, "seed_factors must be {init: N, data_order: M}"),
        ({"seed_factors": {"init": 1, "data_order": 2}}, "seed_factors.init=1 is out of range"),
        ({"seed_factors": {"init": 2, "data_order": 2}, "seeds": 4}, "give seeds or seed_factors, not both"),
        ({"variants": {**VARIANTS, "x": {"trainer.order_seeds": 2}}}, "variant 'x' sets trainer.order_seeds"),
    ],
)
def test_bad_seed_factors(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        spec_from_dict({"name": "f", "base": TINY_BASE, "variants": VARIANTS, **extra})


class FirstState(Callback):
    """Each run's (member's) initial weights and first training batch."""

    def __init__(self) -> None:
        self.seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def on_train_batch_start(self, trainer, lit, batch, batch_idx) -> None:  # noqa: ANN001
        if trainer.global_step:
            return
        batches = batch if isinstance(batch, list) else [batch]
        if isinstance(lit, LitSeedParallel):
            weights = [
                torch.cat([w[k].detach().flatten() for w in lit.model.weights]) for k in range(len(batches))
            ]
        else:
            weights = [torch.cat([p.detach().flatten() for p in lit.model.parameters()])]
        self.seen += [(w.clone(), b["input_ids"].clone()) for w, b in zip(weights, batches, strict=True)]


@pytest.mark.parametrize("seed_parallel", [1, 3])
def test_init_and_data_order_follow_their_own_seeds(seed_parallel: int) -> None:
    cfg = TrainConfig.from_dict(TINY_BASE).override({"trainer.order_seeds": 2, "trainer.max_steps": 1})
    probe = FirstState()
    # seeds 2, 3, 4 -> (init, order) (1, 0), (1, 1), (2, 0)
    run_cells(cfg.override({"trainer.seed_parallel": seed_parallel}), [2, 3, 4], callbacks=[probe])
    (w2, b2), (w3, b3), (w4, b4) = probe.seen
    assert torch.equal(w2, w3) and not torch.equal(w2, w4)
    assert torch.equal(b2, b4) and not torch.equal(b2, b3)


def test_variance_components_hand_values() -> None:
    a, b = [0.0, 0.1, 0.2], [0.0, 0.05]
    cells = [(i * 2 + j, 0.5 + a[i] + b[j], False) for i in range(3) for j in range(2)]
    v = variance_components(cells, 3, 2)
    assert v["complete"]
    assert v["var"]["init"] == pytest.approx(np.var(a, ddof=1))
    assert v["var"]["data_order"] == pytest.approx(np.var(b, ddof=1))
    assert v["var"]["residual"] == pytest.approx(0.0, abs=1e-15)
    assert sum(v["share"].values()) == pytest.approx(1.0)
    assert not variance_components(cells[:-1], 3, 2)["complete"]
