"""``ablate lr-check EXP.yaml``: the experiment again at other learning rates.

A shared, untuned learning rate can decide an ablation (one variant may just want another lr).
For each factor f (default 0.5 and 2) this runs the whole grid once more with
``optim.lr = f x the experiment's base lr`` (after the profile and the command line), as
``ablate sweep`` would run a copy of EXP.yaml named ``<experiment>-lr<f>x``: the run folder is
``RUNS/<experiment>-lr<f>x/`` (the copy differs only in its name, its relative paths made
absolute, and has no search block). ``python -m docs._gen.readme_tables --preset NAME --collect RUNS``
then adds the rows "per-variant lr": each variant at the factor with the best median val/acc
over seeds (docs/_gen/tuned_rows.py). A variant that sets optim.lr itself is refused: its own lr
would win over the scaled one, so it would not be checked at all.

Usage::

    ablate lr-check experiments/configs/ablations/heads.yaml --profile cpu --workers 2
    ablate lr-check EXP.yaml --factors 0.25,4 --out runs [key=value ...]
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ablate.errors import ConfigError, require
from ablate.experiments.specs.loading import absolute_paths, absolute_plugins, absolute_sections, read_yaml
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import load_spec

SHARED = 1.0  # the factor of the experiment's own run
LR_KEY = "optim.lr"


def parse_factors(text: str) -> list[float]:
    """``0.5,2`` -> [0.5, 2.0]: distinct, finite, positive, and not 1 (the experiment's own run)."""
    try:
        factors = [float(t) for t in text.split(",")]
    except ValueError:
        factors = []
    require(
        bool(factors)
        and all(math.isfinite(f) and f > 0 and f != SHARED for f in factors)
        and len(set(factors)) == len(factors),
        f"--factors {text!r}: give distinct positive numbers other than 1, comma-separated (e.g. 0.5,2)",
    )
    return factors


def base_lr(spec: ExperimentSpec) -> float:
    """The lr every variant trains with: the base config's after the profile and overrides."""
    own = [v for v, ov in spec.variants.items() if LR_KEY in ov]
    require(
        not own,
        f"{spec.name}: variant(s) {', '.join(own)} set {LR_KEY} themselves, which would win over the "
        f"scaled base lr (a variant's overrides apply after the base's); remove {LR_KEY} from them or "
        "compare learning rates with `ablate search`",
    )
    return spec.base.optim.lr


def lr_value(lr: float, factor: float) -> str:
    """``factor x lr`` as a command-line value, 6 significant digits; always with a mantissa dot
    (YAML reads ``1e-05`` as a string, ``1.0e-05`` as a float)."""
    text = f"{factor * lr:.6g}"
    mantissa, e, exponent = text.partition("e")
    return (mantissa if "." in mantissa else mantissa + ".0") + e + exponent if e else text


def without_lr(overrides: list[str]) -> list[str]:
    """The command line's overrides but optim.lr, which each factor sets (from the resolved lr)."""
    return [o for o in overrides if o.partition("=")[0].strip() != LR_KEY]


def renamed_spec(path: Path, name: str) -> dict[str, Any]:
    """EXP.yaml renamed, its relative paths (``base:``, data paths) made absolute so that it can be
    read from another folder. The search block is dropped: a sweep does not use it."""
    raw = dict(read_yaml(path))
    folder = path.resolve().parent
    raw["name"] = name
    raw.pop("search", None)
    if isinstance(raw["base"], str):
        raw["base"] = os.path.abspath(folder / Path(raw["base"]).expanduser())
    elif isinstance(raw["base"], dict):  # an inline train config
        raw["base"] = absolute_sections(raw["base"], folder)
    if isinstance(raw.get("plugins"), list):
        raw["plugins"] = absolute_plugins(raw["plugins"], folder)
    if isinstance(raw.get("overrides"), dict):
        raw["overrides"] = absolute_paths(raw["overrides"], folder)
    for key in ("variants", "profiles"):  # name -> dotted overrides
        if isinstance(raw.get(key), dict):
            raw[key] = {
                n: absolute_paths(ov, folder) if isinstance(ov, dict) else ov for n, ov in raw[key].items()
            }
    return raw


def plan(
    path: Path, overrides: list[str], profile: str | None, factors: list[float], folder: Path
) -> list[tuple[Path, list[str]]]:
    """(renamed spec file, overrides with the factor's lr) of each factor, the spec written into
    ``folder``. Every spec is loaded first, so a bad lr or key stops it before anything runs."""
    spec = load_spec(path, overrides, profile=profile)
    lr, rest = base_lr(spec), without_lr(overrides)
    out = []
    for f in factors:
        spec_file = folder / f"{lr_run_name(spec.name, f)}.yaml"
        spec_file.write_text(yaml.safe_dump(renamed_spec(path, spec_file.stem), sort_keys=False))
        with_lr = [*rest, f"{LR_KEY}={lr_value(lr, f)}"]
        try:
            load_spec(spec_file, with_lr, profile=profile)
        except ConfigError as err:  # the spec itself loaded above: the scaled lr is the problem
            raise ConfigError(f"{path}: lr x{f:g} of the base lr {lr:g}: {err}") from None
        out.append((spec_file, with_lr))
    return out


def lr_check(
    path: Path,
    overrides: list[str],
    *,
    profile: str | None,
    factors: list[float],
    run_grid: Callable[[ExperimentSpec], Any],
) -> list[tuple[ExperimentSpec, Any]]:
    """Every factor's spec is built and checked first; then ``run_grid(spec)`` runs each (the
    caller's sweep: ``ablate lr-check`` passes the same one ``ablate sweep`` runs). Returns each
    spec with what ``run_grid`` returned."""
    with tempfile.TemporaryDirectory(prefix="lr-check-") as tmp:
        specs = [
            load_spec(f, ov, profile=profile) for f, ov in plan(path, overrides, profile, factors, Path(tmp))
        ]
    return [(spec, run_grid(spec)) for spec in specs]


def factor_name(factor: float) -> str:
    """``0.5x``, ``2x``: the suffix of an lr check's run folder."""
    return f"{factor:g}x"


def lr_run_name(experiment: str, factor: float) -> str:
    return f"{experiment}-lr{factor_name(factor)}"
