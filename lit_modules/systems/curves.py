"""Validation curves: each seed's (step, value) of one validation metric at every validation of fit.

The values are read from what Lightning already logged (``trainer.callback_metrics`` after each
validation loop), so recording them runs no extra pass and draws no random number: a cell's
numbers are the same with or without the curve. The step is the number of optimizer steps done
(``trainer.global_step``). A stack logs ``name@k`` per member (``member_metrics`` splits them).
"""

from __future__ import annotations

import math
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.trainer.states import TrainerFn

from ablate.lit_modules.systems.seed_parallel import member_metrics

CURVE_METRIC = "val/acc"  # the validation side of the suite's default metric, test/acc
# At most this many points per curve (evenly spaced, the last kept): a trial's user attributes
# and metrics.json stay small even for a run that validates every step.
MAX_POINTS = 200


class ValidationCurve(Callback):
    """Collects ``metric`` per member at every validation during fit (not ``trainer.validate``)."""

    def __init__(self, n_members: int, metric: str = CURVE_METRIC) -> None:
        self.metric = metric
        self.points: list[list[tuple[int, float]]] = [[] for _ in range(n_members)]

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.state.fn != TrainerFn.FITTING or trainer.sanity_checking:
            return
        logged = {
            name: float(value)
            for name, value in trainer.callback_metrics.items()
            if name == self.metric or name.rpartition("@")[0] == self.metric
        }
        for k, values in enumerate(member_metrics(logged, len(self.points))):
            if self.metric in values:
                self.points[k].append((trainer.global_step, values[self.metric]))

    def curve(self, k: int, steps: int, final: float | None) -> dict[str, Any]:
        """Member k's curve up to ``steps`` (its last step: the stack of a diverged member trains
        on), ending with ``final`` (the validation after fit) at ``steps`` if fit had no point
        there: ``{"metric", "steps", "values"}``, a non-finite value as None."""
        points = [(s, v) for s, v in self.points[k] if s <= steps]
        if final is not None and (not points or points[-1][0] != steps):
            points.append((steps, final))
        if len(points) > MAX_POINTS:
            last = len(points) - 1
            points = [points[round(i * last / (MAX_POINTS - 1))] for i in range(MAX_POINTS)]
        return {
            "metric": self.metric,
            "steps": [int(s) for s, _ in points],
            "values": [v if math.isfinite(v) else None for _, v in points],
        }
