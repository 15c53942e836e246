"""Presets: named lists of the shipped experiment specs that ``ablate reproduce NAME`` runs end to
end (``experiments/configs/presets/NAME.yaml``: a description and ``experiments``, spec files relative to
this folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ablate.errors import ConfigError
from ablate.experiments.specs.loading import read_yaml
from ablate.experiments.specs.shipped import CONFIGS
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import load_spec

PRESETS = CONFIGS / "presets"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS.glob("*.yaml"))


def preset_path(name: str) -> Path:
    """``reproduce NAME`` takes a preset's name, not a path: the file ``presets/NAME.yaml``."""
    names = preset_names()
    if name not in names:
        looks_like_path = "/" in name or name.endswith((".yaml", ".yml"))
        hint = (
            " (a path: reproduce takes a preset name; run a spec file with ablate sweep)"
            if looks_like_path
            else ""
        )
        raise ConfigError(
            f"no preset {name!r}{hint}; choose one of {', '.join(names)} (ablate reproduce --list)"
        )
    return PRESETS / f"{name}.yaml"


def load_preset(name: str) -> dict[str, Any]:
    """A preset: a mapping with ``experiments``, a non-empty list of spec files under CONFIGS."""
    path = preset_path(name)
    raw = read_yaml(path)
    specs = raw.get("experiments") if isinstance(raw, dict) else None
    if not isinstance(specs, list) or not specs or not all(isinstance(s, str) for s in specs):
        raise ConfigError(f"{path}: a preset needs 'experiments', a list of experiment spec files")
    missing = [s for s in specs if not (CONFIGS / s).is_file()]
    if missing:
        raise ConfigError(f"{path}: experiment spec file(s) not found under {CONFIGS}: {missing}")
    return raw


def preset_specs(name: str, overrides: list[str], profile: str | None) -> list[ExperimentSpec]:
    """Every experiment of the preset, loaded (and so validated) before any of them runs."""
    return [load_spec(CONFIGS / rel, overrides, profile=profile) for rel in load_preset(name)["experiments"]]
