"""``seed_parallel_speedup``: K seeds trained together / the same K seeds trained one after another.

Both sides are the one cell runner, ``run_cells``, with ``trainer.seed_parallel`` K and 1, on one cached
data set; only the fit loops are timed (``FitTimer``), so the ratio is training throughput.
The rounds interleave the two sides (``benchmarks.timing``).
"""

from __future__ import annotations

from ablate.benchmarks.loop import FitTimer
from ablate.benchmarks.timing import interleave, summarize
from ablate.datamodules import ClassificationDataModule
from ablate.experiments.runner.cells import run_cells
from ablate.experiments.schema.config import TrainConfig


def sequential_steps_s(cfg: TrainConfig, dm: ClassificationDataModule, k: int) -> float:
    """Member-steps per second of K runs one after another."""
    cfg = cfg.override({"trainer.seed_parallel": 1})
    train_s = steps = 0.0
    for seed in range(k):
        timer = FitTimer()  # one fit each
        (result,) = run_cells(cfg, [seed], callbacks=[timer], datamodule=dm)
        train_s += timer.train_s
        steps += result.steps
    return steps / train_s


def stacked_steps_s(cfg: TrainConfig, dm: ClassificationDataModule, k: int) -> float:
    """Member-steps per second of one seed-parallel run of K members."""
    timer = FitTimer()
    results = run_cells(
        cfg.override({"trainer.seed_parallel": k}), range(k), callbacks=[timer], datamodule=dm
    )
    return sum(r.steps for r in results) / timer.train_s


def seed_parallel_speedup(cfg: TrainConfig, *, k: int, rounds: int) -> dict:
    cfg = cfg.override({"trainer.val_every": 0})  # training throughput only
    dm = ClassificationDataModule(cfg.data, shuffle_seed=cfg.seed)
    dm.prepare_data()
    dm.setup("fit")
    stacked_steps_s(cfg.override({"trainer.max_steps": 5}), dm, k)  # warm up both paths
    sequential_steps_s(cfg.override({"trainer.max_steps": 5}), dm, 1)
    ra, rb = interleave(lambda: stacked_steps_s(cfg, dm, k), lambda: sequential_steps_s(cfg, dm, k), rounds)
    return {
        **summarize("stacked_member_steps_s", ra, "sequential_member_steps_s", rb),
        "k": k,
        "max_steps": cfg.trainer.max_steps,
        "rounds": rounds,
    }
