"""The kit's process check: the component gives the same logits in a fresh Python process.

A component whose output depends on Python's ``hash()`` of a string (or on the iteration order of a
set of strings) gives another number in every process: ``PYTHONHASHSEED`` is random per process, so
a sweep's workers and ``ablate train`` would disagree on the same (config, seed) although every
in-process check holds. ``Launched`` starts ``python -m`` this module with another hash seed while
the other checks run (on a free core, when there is one); its ``result`` compares that process's
logits with this one's, bit for bit (same machine, same code, one thread each).

A component registered in this process only (a class defined in a notebook or a test module, not
in one of the ``plugins``) cannot be found there: the check then says so and does not apply.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from ablate.lit_modules.components.conformance_base import Result, batch, diff, model, tiny_config

CONTRACT = "process independence"
NOT_FOUND = 3  # the fresh process's exit status when the component is not registered there
TIMEOUT_S = 300


class Launched:
    """The fresh process computing the kit model's logits, and where it writes them."""

    def __init__(self, kind: str, name: str, plugins: tuple[str, ...]) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="ablate-kit-")
        self.out = Path(self.folder.name) / "logits.pt"
        self.hash_seed = _other_hash_seed()
        env = {
            **os.environ,
            "PYTHONHASHSEED": self.hash_seed,
            # module plugins resolve as here: this process's import path, in its order
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        }
        argv = [sys.executable, "-m", __name__, kind, name, str(self.out), *plugins]
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def result(self, kind: str, name: str) -> Result:
        here = _logits(kind, name)
        try:
            printed, _ = self.proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            return Result(CONTRACT, False, f"the fresh process did not finish in {TIMEOUT_S} s")
        try:
            if self.proc.returncode == NOT_FOUND:
                return Result(
                    CONTRACT,
                    None,
                    f"not run: {kind} {name!r} is not registered in a fresh process (a component "
                    "defined here only; list its module or file as a plugin to check it)",
                )
            if self.proc.returncode != 0:
                tail = " | ".join(printed.strip().splitlines()[-3:])
                return Result(
                    CONTRACT, False, f"the fresh process failed (exit {self.proc.returncode}): {tail}"
                )
            there = torch.load(self.out)
            d = diff(here, there)
            if d == 0.0:
                return Result(
                    CONTRACT, True, f"the same logits in a fresh process (PYTHONHASHSEED={self.hash_seed})"
                )
            return Result(
                CONTRACT,
                False,
                f"another process (PYTHONHASHSEED={self.hash_seed}) gives other logits (max |Δ| {d:.2e}): "
                "the output depends on Python's hash() or a set's order, which differ per process",
            )
        finally:
            self.folder.cleanup()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        self.folder.cleanup()


def _other_hash_seed() -> str:
    """A hash seed other than this process's: its own plus one when pinned, else 0 (a random
    per-process secret equals seed 0's with negligible probability)."""
    own = os.environ.get("PYTHONHASHSEED", "random")
    return str((int(own) + 1) % 2**32) if own.isdigit() else "0"


def _logits(kind: str, name: str) -> torch.Tensor:
    """The kit model's logits on its batch, in eval mode, at one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        m = model(tiny_config(kind, name)).eval()
        with torch.no_grad():
            return m(*batch()).logits
    finally:
        torch.set_num_threads(threads)


def _main(argv: list[str]) -> int:
    from ablate.lit_modules.components.plugins import import_plugins
    from ablate.lit_modules.model import registry

    kind, name, out, *plugins = argv
    import_plugins(plugins)
    registry.builtin_modules()
    registry.load_entry_points()
    if name not in registry.TABLES[kind]:
        return NOT_FOUND
    torch.save(_logits(kind, name), out)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
