"""``ablate train``: one configuration trained into a run folder that appears complete or not at
all (``trainer.seed_parallel=K`` trains seeds seed..seed+K-1, one sub-folder each).

Ctrl-C, SIGTERM (kill, a scheduler's time limit) and SIGHUP (the terminal closed) stop it the same
way: the partial folder is removed, a line says so and nothing was kept, and the CLI exits 130
with "interrupted", as the sweep driver does on both (sweeps/drivers/loop.py ``run_workers``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ablate.experiments.runner.cells import TrialResult
from ablate.experiments.schema.config import TrainConfig
from ablate.files import atomic_dir


def default_out(cfg: TrainConfig) -> Path:
    return Path(f"runs/train/{cfg.data.task}-{time.strftime('%Y%m%d-%H%M%S')}")


def train(
    cfg: TrainConfig, out: Path, *, progress: bool = False, checkpoint: bool = True
) -> list[tuple[str, TrialResult]]:
    """Train and evaluate ``cfg`` into ``out`` (config.yaml, metrics.json, CSV curves, and the final
    weights as final.ckpt unless ``checkpoint`` is False); (name, result) per seed: ``value`` for
    one seed, ``seed<k>`` for each member of a seed-parallel stack."""
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    from ablate.experiments.runner.cells import run_cells

    seeds = list(range(cfg.seed, cfg.seed + cfg.trainer.seed_parallel))
    try:
        with interrupts_as_ctrl_c(), atomic_dir(out, claim=True) as tmp:
            dirs = [tmp] if len(seeds) == 1 else [tmp / f"seed{s}" for s in seeds]
            loggers = [CSVLogger(d, name="", version="") for d in dirs]
            # The final weights (of the stack with seed_parallel > 1), saved once at max_steps.
            final = ModelCheckpoint(
                dirpath=tmp, filename="final", every_n_train_steps=cfg.trainer.max_steps, save_top_k=1
            )
            results = run_cells(
                cfg, seeds, dirs, progress=progress, loggers=loggers, callbacks=[final] if checkpoint else []
            )
    except SystemExit as err:
        if not lightning_interrupt(err):
            raise
        interrupted(out)
        raise KeyboardInterrupt from None
    except KeyboardInterrupt:
        interrupted(out)
        raise
    if len(seeds) == 1:
        return [("value", results[0])]
    return [(f"seed{s}", r) for s, r in zip(seeds, results, strict=True)]


# Besides Ctrl-C's SIGINT: what a scheduler, ``kill`` and a closed terminal send.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interrupts_as_ctrl_c() -> Iterator[None]:
    """Inside, SIGTERM and SIGHUP raise Ctrl-C's KeyboardInterrupt. Left to their default, SIGTERM
    had Lightning stop the fit with its SIGTERMException, a SystemExit without a code (exit 0, no
    message, no folder) and SIGHUP ended the process with its partial folder left. Lightning's own
    SIGTERM handler still runs first: it calls the handler it found (signal_connector.py). A signal
    ignored (``nohup``) or handled by the caller keeps its handler; off the main thread (no
    handlers there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig, handler in old.items():
        if handler == signal.SIG_DFL:
            signal.signal(sig, signal.default_int_handler)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def lightning_interrupt(err: SystemExit) -> bool:
    """Whether ``err`` is Lightning's exit on an interrupt: ``sys.exit(1)`` while it handles a
    KeyboardInterrupt in fit (trainer/call.py), or its SIGTERMException."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    return isinstance(err, SIGTERMException) or isinstance(err.__context__, KeyboardInterrupt)


def interrupted(out: Path) -> None:
    """What an interrupted ``ablate train`` kept: nothing (the CLI then says "interrupted", exit 130)."""
    print(
        f"interrupted: nothing kept; {out} was not written (a run folder appears complete or not at "
        "all); run the same command again to train it",
        file=sys.stderr,
        flush=True,
    )
