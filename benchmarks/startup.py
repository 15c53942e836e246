"""``python -m ablate.benchmarks.startup [--runs N] [--out FILE]``: how fast ``ablate`` starts.

Each command runs in a fresh interpreter (``python -m ablate ...`` from an empty folder, and
``ablate --help`` as the installed console script too, the command a user types), N times,
interleaved with ``python -c pass`` (A B B A ...) so background load hits both alike; the ratio
is the median wall time of the command over the median of ``python -c pass``, the bare
interpreter's start-up (and the same for CPU seconds, user + system, which on a shared machine
are the better guess of the wall time on an idle core). The target is 0.5 s on one idle core for the help pages, ``ablate
configs`` and the exit-2 errors raised before a command's work starts: a command that has not
started its work yet has no use for torch, scipy, optuna, Lightning, W&B or datasets (together
several seconds of imports), and a help page none of rich, PyYAML, numpy, pandas or matplotlib
either (the parser is built from constants; a command's own libraries load when it runs). One more
run of each under ``python -X importtime`` lists which of them it imported anyway: the culprit, and
``-X importtime`` says who pulled it in.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "scipy", "optuna", "lightning", "wandb", "datasets")
# What a help page does not need either (the libraries column lists any of these a command loaded).
LIBRARIES = (*HEAVY, "rich", "yaml", "numpy", "pandas", "matplotlib")
TARGET_S = 0.5
BASELINE = ["-c", "pass"]
# What a user types first, and what must answer at once (name -> arguments after `ablate`).
COMMANDS: dict[str, list[str]] = {
    "ablate --help": ["--help"],
    "ablate --version": ["--version"],
    "ablate sweep --help": ["sweep", "--help"],
    "ablate power --help": ["power", "--help"],
    "ablate configs": ["configs"],
    "ablate sweep x.yaml --workers 0 (exit 2)": ["sweep", "x.yaml", "--workers", "0"],
    "ablate sweep does-not-exist.yaml (exit 2)": ["sweep", "does-not-exist.yaml"],
}


# The same commands as the installed console script (next to this interpreter) runs them.
SCRIPT_COMMANDS: dict[str, list[str]] = {"ablate --help (the installed `ablate` script)": ["--help"]}


def script() -> Path | None:
    """The ``ablate`` console script of this interpreter's environment, if it is installed."""
    path = Path(sys.executable).with_name("ablate")
    return path if path.is_file() else None


def timed(python_args: list[str], cwd: Path, program: list[str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of ``python <python_args>`` (or ``program
    <python_args>``), output discarded. On a loaded machine the CPU seconds are the better guess
    of the wall time on an idle core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([*(program or [sys.executable]), *python_args], cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def heavy_imports(args: list[str], cwd: Path) -> list[str]:
    """The libraries of LIBRARIES that ``ablate <args>`` imports (read from ``-X importtime``)."""
    ran = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ablate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    # Lines read "import time: self | cumulative | <indent>package.module".
    names = {
        line.rsplit("|", 1)[1].strip() for line in ran.stderr.splitlines() if line.startswith("import time:")
    }
    return [lib for lib in LIBRARIES if any(n == lib or n.startswith(f"{lib}.") for n in names)]


def medians(samples: list[tuple[float, float]]) -> dict:
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    return {
        "wall_s": statistics.median(walls),
        "cpu_s": statistics.median(cpus),
        "all_wall_s": [round(w, 3) for w in walls],
    }


def measure(runs: int) -> dict:
    """Median seconds and ratio to ``python -c pass`` of every command, and its heavy imports."""
    base: list[tuple[float, float]] = []
    commands = {}
    installed = script()
    todo = [(name, args, ["-m", "ablate", *args], None) for name, args in COMMANDS.items()]
    if installed is not None:
        todo += [(name, args, args, [str(installed)]) for name, args in SCRIPT_COMMANDS.items()]
    with tempfile.TemporaryDirectory(prefix="ablate-startup-") as tmp:
        cwd = Path(tmp)
        timed(BASELINE, cwd)  # warm the file cache: a first start reads every .pyc from disk
        for name, args, command, program in todo:
            timed(command, cwd, program)
            samples: list[tuple[float, float]] = []
            for i in range(runs):  # A B B A ...: a trend in the load hits both sides alike
                pair = [(base, BASELINE, None), (samples, command, program)]
                for into, python_args, prog in pair if i % 2 == 0 else pair[::-1]:
                    into.append(timed(python_args, cwd, prog))
            commands[name] = {
                **medians(samples),
                "min_wall_s": min(w for w, _ in samples),
                "heavy_imports": heavy_imports(args, cwd),
            }
    baseline = {**medians(base), "min_wall_s": min(w for w, _ in base)}
    for c in commands.values():
        c["ratio"] = c["wall_s"] / baseline["wall_s"]
        c["cpu_ratio"] = c["cpu_s"] / baseline["cpu_s"]
        c["min_ratio"] = c["min_wall_s"] / baseline["min_wall_s"]
    return {
        "python_c_pass": baseline,
        "target_s": TARGET_S,
        "runs": runs,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "commands": commands,
    }


def print_table(r: dict) -> None:
    base = r["python_c_pass"]
    print(
        f"python -c pass: {base['wall_s']:.3f} s wall, {base['cpu_s']:.3f} s CPU "
        f"(medians of {len(r['commands']) * r['runs']}; min {base['min_wall_s']:.3f} s wall)"
    )
    print(f"load average {r['load_average'][0]:.2f} on {r['cpus']} CPUs; target <= {r['target_s']} s")
    print("ratio: to python -c pass, of the medians (wall, CPU) and of the minima (min wall)")
    width = max(len(n) for n in r["commands"])
    print(
        f"{'command':<{width}}  {'wall s':>6}  {'ratio':>5}  {'CPU s':>6}  {'ratio':>5}  "
        f"{'min s':>6}  {'ratio':>5}  libraries imported"
    )
    for name, c in r["commands"].items():
        heavy = ", ".join(c["heavy_imports"]) or "none"
        print(
            f"{name:<{width}}  {c['wall_s']:>6.3f}  {c['ratio']:>5.1f}  {c['cpu_s']:>6.3f}  "
            f"{c['cpu_ratio']:>5.1f}  {c['min_wall_s']:>6.3f}  {c['min_ratio']:>5.1f}  {heavy}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ablate.benchmarks.startup", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--out", type=Path, help="also write the numbers as JSON to this file")
    args = parser.parse_args(argv)
    results = measure(args.runs)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
