"""A progress bar for step-based training: ``train 340/1053`` instead of ``Epoch 3/-2``.

The suite trains for ``trainer.max_steps`` across epoch boundaries (``max_epochs=-1``), so
Lightning's bar, which counts batches per epoch and names the epoch, restarts every epoch
and shows a meaningless epoch total. This bar counts optimizer steps against ``max_steps``
and never resets; validation and test bars are Lightning's own.
"""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar


class StepProgressBar(TQDMProgressBar):
    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        super().on_train_start(trainer, pl_module)
        self.train_progress_bar.reset(total=trainer.max_steps)
        self.train_progress_bar.set_description("train")

    def on_train_epoch_start(self, trainer: L.Trainer, *_: Any) -> None:
        """One bar for the whole run: nothing to reset at an epoch boundary."""

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        bar = self.train_progress_bar
        step = trainer.global_step
        # Lightning's own rule (TQDMProgressBar._should_update), spelled with its public properties.
        if bar is not None and self.is_enabled and (step % self.refresh_rate == 0 or step == bar.total):
            bar.n = step
            bar.set_postfix(self.get_metrics(trainer, pl_module), refresh=False)
            bar.refresh()
