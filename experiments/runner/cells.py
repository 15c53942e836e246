"""``run_cells``: the one function that trains and evaluates (configuration, seeds).

``ablate train``, every sweep worker, the W&B agent command and search trials call it
(``run_trial`` is its one-seed form). It alone decides how the seeds train:

- ``trainer.seed_parallel == 1``: each seed alone, ``LitClassifier``;
- ``trainer.seed_parallel == K > 1``: in groups of at most K, each group one stacked model
  (``LitSeedParallel``); a group of one is a stack of one.

A cell's number depends on (config, seed) only: the group a seed lands in changes nothing
(bit-identical on CPU, tested), and ``trainer.cpu_threads`` fixes the float reduction order.
The path (single or stacked) is part of the configuration (``trainer.seed_parallel``):
the two paths agree to float tolerance over short runs, not to the bit over thousands of steps.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.loggers import Logger

from ablate.datamodules import ClassificationDataModule
from ablate.errors import ConfigError
from ablate.experiments.runner.building import build_model
from ablate.experiments.runner.phases import FitTimer, Phases
from ablate.experiments.schema.config import SeedStreams, TrainConfig
from ablate.experiments.schema.machine import numerics_record, require_pinned
from ablate.experiments.schema.memory import check_memory
from ablate.files import write_json, write_yaml
from ablate.lit_modules.systems.classifier import LitClassifier
from ablate.lit_modules.systems.curves import CURVE_METRIC, ValidationCurve
from ablate.lit_modules.systems.progress import StepProgressBar
from ablate.lit_modules.systems.seed_parallel import LitSeedParallel, MemberLogger, member_metrics
from ablate.lit_modules.systems.ulp import perturb_ulp


@dataclass
class TrialResult:
    """Final metrics of one run. A diverged run is a result, not an exception."""

    metrics: dict[str, float]
    diverged: bool
    steps: int
    wall_s: float
    config: TrainConfig
    extras: dict[str, Any] = field(default_factory=dict)
    # What the floats were computed with (experiments/schema/machine.py): provenance, not configuration.
    numerics: dict[str, Any] = field(default_factory=dict)
    # Each data split's size and how it was made (datamodules/splits.py): what the metrics are of.
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The model's trainable parameter count (a GQA or GLU variant changes it): what the cell cost.
    n_params: int | None = None
    # The validation metric at each validation of fit (lit_modules/systems/curves.py): {"metric",
    # "steps", "values"}. In metrics.json, not in to_dict: the train command's table shows to_dict.
    curve: dict[str, Any] | None = None
    # Seconds per phase (experiments/runner/phases.py): in metrics.json, not in to_dict.
    phases: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: a NaN metric (a diverged run) becomes null."""
        metrics = {k: (v if math.isfinite(v) else None) for k, v in self.metrics.items()}
        out = {**metrics, "diverged": self.diverged, "steps": self.steps, "wall_s": round(self.wall_s, 3)}
        out |= {"n_params": self.n_params} if self.n_params is not None else {}
        out |= {"numerics": self.numerics} if self.numerics else {}
        return out | ({"splits": self.splits} if self.splits else {})


def resolve_precision(cfg: TrainConfig) -> str:
    """``auto`` means bf16-mixed on a GPU that has bf16, full fp32 otherwise."""
    if cfg.trainer.precision != "auto":
        return cfg.trainer.precision
    wants_gpu = cfg.trainer.accelerator in ("auto", "gpu", "cuda")
    if wants_gpu and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return "bf16-mixed"
    return "32-true"


def quiet_lightning() -> None:
    """Lightning's per-run banners drown a sweep's progress; keep warnings that matter."""
    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*GPU available but not used.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*anonymous setting has no effect.*")
    # A non-finite loss skips its step on purpose (LitClassifier.training_step returns None).
    warnings.filterwarnings("ignore", message=".*`training_step` returned `None`.*")
    # LitClassifier moves its own batches (lit_modules.systems.classifier.move_batch), on purpose.
    warnings.filterwarnings("ignore", message=".*overridden `transfer_batch_to_device`.*")


def make_trainer(
    cfg: TrainConfig,
    out_dir: str | Path | None,
    *,
    progress: bool,
    logger: Logger | bool,
    callbacks: Sequence[Callback] = (),
    clip: bool = True,
) -> L.Trainer:
    t = cfg.trainer
    return L.Trainer(
        max_steps=t.max_steps,
        accelerator=t.accelerator,
        devices=t.devices,
        precision=resolve_precision(cfg),
        deterministic=t.deterministic,
        gradient_clip_val=(cfg.optim.grad_clip or None) if clip else None,
        log_every_n_steps=t.log_every,
        # Validate every val_every steps across epoch boundaries; 0 = never during fit.
        val_check_interval=t.val_every or t.max_steps + 1,
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,
        # Only a caller's ModelCheckpoint (ablate train's final checkpoint); sweeps keep none.
        enable_checkpointing=any(isinstance(c, ModelCheckpoint) for c in callbacks),
        enable_model_summary=False,
        enable_progress_bar=progress,
        logger=logger,
        callbacks=[*callbacks, StepProgressBar()] if progress else list(callbacks),
        default_root_dir=str(out_dir) if out_dir else None,
    )


def _setup(
    cfg: TrainConfig, shuffle_seed: int, datamodule: ClassificationDataModule | None
) -> ClassificationDataModule:
    cfg.trainer.check_machine()  # every entry point: an accelerator or precision this machine lacks
    if cfg.trainer.cpu_isa != "native":  # the pin acts only if this process started with it
        require_pinned(cfg.trainer.cpu_isa)
    quiet_lightning()
    # Part of the cell's configuration: the CPU thread count changes float reduction order, and
    # over thousands of steps that changes results (lookup single_head seed 3: 0.799 vs 0.947).
    torch.set_num_threads(cfg.trainer.cpu_threads)
    dm = datamodule or ClassificationDataModule(cfg.data, shuffle_seed=shuffle_seed)
    dm.prepare_data()
    dm.setup("fit")
    check_memory(cfg, dm.vocab_size)  # before the model is built: exit 2, not an allocator error
    if torch.cuda.is_available():
        torch.set_float32_matmul_precision("high")
    return dm


def evaluate(trainer: L.Trainer, lit: L.LightningModule, dm: ClassificationDataModule) -> dict[str, float]:
    """Validation, test and (if the data has one) the long test split; the logged metrics
    (a stack logs ``name@k`` per member: ``member_metrics`` splits them)."""
    metrics: dict[str, float] = {}
    splits = [("val", dm.val_dataloader()), ("test", dm.test_dataloader())]
    if "test_long" in dm.splits:
        splits.append(("test_long", dm.dataloader("test_long")))
    for prefix, loader in splits:
        lit.test_prefix = prefix
        run = trainer.validate if prefix == "val" else trainer.test
        for found in run(lit, dataloaders=loader, verbose=False):
            metrics.update(found)
    lit.test_prefix = "test"
    return metrics


def run_cells(
    cfg: TrainConfig,
    seeds: Sequence[int],
    out_dirs: Sequence[str | Path] | None = None,
    *,
    progress: bool = False,
    loggers: Sequence[Logger | None] | None = None,
    callbacks: Sequence[Callback] = (),
    datamodule: ClassificationDataModule | None = None,
) -> list[TrialResult]:
    """Train and evaluate ``cfg`` once per seed; one ``TrialResult`` per seed, in order.

    ``out_dirs[i]`` and ``loggers[i]`` belong to ``seeds[i]``: each gets the resolved config,
    ``metrics.json`` and the tokenizer, and its own curves. The seed fixes model init, data order
    and dropout; ``cfg.data.seed`` alone fixes the data set.
    """
    seeds = list(seeds)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be distinct, got {seeds}")
    k = cfg.trainer.seed_parallel
    results: list[TrialResult] = []
    for i in range(0, len(seeds), k):
        part = slice(i, i + k)
        results += _train_group(
            cfg,
            seeds[part],
            list(out_dirs[part]) if out_dirs is not None else None,
            list(loggers[part]) if loggers is not None else [None] * len(seeds[part]),
            progress=progress,
            callbacks=callbacks,
            datamodule=datamodule,
        )
    return results


def run_trial(
    cfg: TrainConfig,
    out_dir: str | Path | None = None,
    *,
    progress: bool = False,
    logger: Logger | None = None,
    callbacks: Sequence[Callback] = (),
    datamodule: ClassificationDataModule | None = None,
) -> TrialResult:
    """One cell, ``(cfg, cfg.seed)``: ``run_cells`` with one seed."""
    (result,) = run_cells(
        cfg,
        [cfg.seed],
        None if out_dir is None else [out_dir],
        progress=progress,
        loggers=[logger],
        callbacks=callbacks,
        datamodule=datamodule,
    )
    return result


def _train_group(
    cfg: TrainConfig,
    seeds: list[int],
    out_dirs: list[str | Path] | None,
    loggers: list[Logger | None],
    *,
    progress: bool,
    callbacks: Sequence[Callback],
    datamodule: ClassificationDataModule | None,
) -> list[TrialResult]:
    """One group of seeds, one model (alone, or one stack): data, model, training, results,
    each phase timed (experiments/runner/phases.py)."""
    start = time.perf_counter()
    phases, in_fit = Phases(), FitTimer()
    with phases("setup"):
        dm = _setup(cfg, seeds[0], datamodule)
        streams = [cfg.seed_streams(s) for s in seeds]
        train = [dm.dataloader("train", shuffle=True, seed=s.order) for s in streams]  # one order per seed
    with phases("model"):
        lit = _group_model(cfg, dm, streams)
    curves = ValidationCurve(len(seeds), CURVE_METRIC)  # reads what validation logged: no pass, no draw
    with phases("fit_loop"):
        trainer = _fit(
            cfg, lit, dm, train, out_dirs, loggers, progress=progress, callbacks=[*callbacks, curves, in_fit]
        )
    phases.add("fit_loop", -in_fit.steps_s - in_fit.validation_s)
    phases.add("train", in_fit.steps_s)
    phases.add("validation", in_fit.validation_s)
    with phases("evaluate"):
        members = member_metrics(evaluate(trainer, lit, dm), len(seeds))
    wall = time.perf_counter() - start
    results = _results(cfg, seeds, members, lit, trainer.global_step, dm, wall / len(seeds))
    for k, result in enumerate(results):
        final = result.metrics.get(curves.metric)  # the validation after fit, at the last step
        result.curve = curves.curve(k, result.steps, final)
    if out_dirs is not None:
        with phases("write"):
            for out, result in zip(out_dirs, results, strict=True):
                _write_cell(Path(out), result, dm, phases.shared(len(seeds)))
    for result in results:
        result.phases = phases.shared(len(seeds))
    return results


def _group_model(
    cfg: TrainConfig, dm: ClassificationDataModule, streams: list[SeedStreams]
) -> LitClassifier | LitSeedParallel:
    """The model of one group, its weights drawn from each seed's init stream: one seed alone
    (``trainer.seed_parallel == 1``), or a stack of them; a component that raises while it is
    built is a ConfigError naming it (experiments/runner/building.py)."""
    sizes = {"vocab_size": dm.vocab_size, "n_classes": dm.n_classes, "max_steps": cfg.trainer.max_steps}
    if cfg.trainer.seed_parallel > 1:
        return build_model(
            cfg.model,
            lambda: LitSeedParallel(
                cfg.model,
                cfg.optim,
                **sizes,
                seeds=[s.dropout for s in streams],
                init_seeds=[s.init for s in streams],
                numerics=[s.numerics for s in streams],
                pad_to=dm.longest("train"),
            ),
        )
    # Seed after data preparation so init does not depend on what data loading drew.
    L.seed_everything(streams[0].init, workers=True, verbose=False)
    lit = build_model(
        cfg.model, lambda: LitClassifier(cfg.model, cfg.optim, **sizes, seed=streams[0].dropout)
    )
    perturb_ulp(lit.model, streams[0].numerics)  # after the init, before training
    if cfg.trainer.compile:
        lit.model = torch.compile(lit.model)
    return lit


def _fit(
    cfg: TrainConfig,
    lit: LitClassifier | LitSeedParallel,
    dm: ClassificationDataModule,
    train: list[Any],
    out_dirs: list[str | Path] | None,
    loggers: list[Logger | None],
    *,
    progress: bool,
    callbacks: Sequence[Callback],
) -> L.Trainer:
    """Train the group's model; the trainer, ready to evaluate it. A stack logs through one
    ``MemberLogger`` per member, clips per member itself and keeps no run folder of its own."""
    stacked = cfg.trainer.seed_parallel > 1
    logger: Logger | list[Logger] | bool
    if stacked:
        logger = [MemberLogger(lg, k) for k, lg in enumerate(loggers) if lg] or False
    else:
        logger = loggers[0] or False
    trainer = make_trainer(
        cfg,
        out_dirs[0] if out_dirs and not stacked else None,
        progress=progress,
        logger=logger,
        callbacks=callbacks,
        clip=not stacked,  # the stack clips per member itself
    )
    # A list of loaders: Lightning zips them, so a stacked training batch is one batch per member.
    trainer.fit(lit, train_dataloaders=train if stacked else train[0], val_dataloaders=dm.val_dataloader())
    return trainer


def _results(
    cfg: TrainConfig,
    seeds: list[int],
    members: list[dict[str, Any]],
    lit: LitClassifier | LitSeedParallel,
    global_step: int,
    dm: ClassificationDataModule,
    wall_s: float,
) -> list[TrialResult]:
    """One ``TrialResult`` per seed of the group: its metrics, divergence, steps and records."""
    results = []
    for k, (seed, metrics, diverged_at) in enumerate(zip(seeds, members, lit.diverged_steps(), strict=True)):
        result = TrialResult(
            metrics={name: float(v) for name, v in sorted(metrics.items())},
            diverged=diverged_at is not None,
            steps=global_step if diverged_at is None else diverged_at,
            wall_s=wall_s,
            config=cfg.override({"seed": seed}),
            numerics=numerics_record(resolve_precision(cfg)),  # bf16-mixed changes the floats too
            splits=dm.split_record,
        )
        model = lit.member_model(k)
        result.n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        result.extras.update(model=model, datamodule=dm)
        results.append(result)
    return results


def _write_cell(
    out: Path, result: TrialResult, dm: ClassificationDataModule, phases: dict[str, float]
) -> None:
    """A cell's folder: the resolved config, ``metrics.json`` (with the validation curve and the
    phases so far) and the tokenizer."""
    write_yaml(out / "config.yaml", result.config.to_dict())
    note = {"data_note": dm.split_note} if dm.split_note else {}  # an unlabelled split's fallback
    curve = {"curve": result.curve} if result.curve is not None else {}
    write_json(out / "metrics.json", {**result.to_dict(), **curve, **note, "phases": phases})
    dm.save_tokenizer(out)
