"""TrainConfig: the full, validated description of one training run.

A YAML file with sections ``model``, ``data``, ``optim``, ``trainer`` and a
top-level ``seed``; dotted ``key=value`` overrides are applied on top and
checked against the dataclass fields.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError, require, validate_fields
from ablate.lit_modules.config import ModelConfig, OptimConfig


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainerConfig:
    """How ``lightning.Trainer`` runs: steps, precision, device, logging cadence."""

    SECTION = "trainer"

    max_steps: int = 1000
    # Validate every this many steps during training (0 = only at the end).
    val_every: int = 0
    # "auto": bf16-mixed on a GPU that supports it, 32-true otherwise.
    precision: Literal["auto", "32-true", "bf16-mixed", "16-mixed", "bf16-true"] = "auto"
    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = "auto"
    devices: int = 1
    # torch.use_deterministic_algorithms: bit-identical reruns on CPU.
    deterministic: bool = True
    log_every: int = 50
    # torch.compile the encoder (GPU; costs seconds of compile time per run).
    compile: bool = False
    # 1: every seed trains alone. K > 1: seeds train in stacks of at most K as one vectorized
    # model (lit_modules/seed_parallel.py), every entry point alike: `ablate train` trains
    # seed..seed+K-1, a sweep worker stacks up to K waiting cells of one variant, the W&B agent
    # and a search trial a stack of one. A member's result does not depend on its stack; the
    # path (1 or > 1) is part of the configuration, as the two agree only to float tolerance.
    seed_parallel: int = 1
    # Intra-op CPU threads of a cell (torch.set_num_threads): the thread count changes the float
    # reduction order, so it is part of the configuration, set the same by every entry point.
    cpu_threads: int = 1
    # 0: the run seed drives init, data order and dropout together. n > 0 (set by a spec's
    # seed_factors): seed s initializes from s // n and orders the data by s % n, so that init
    # and data order vary as separate, crossed factors; dropout stays keyed by s.
    order_seeds: int = 0

    def __post_init__(self) -> None:
        validate_fields(self)
        require(self.max_steps >= 1, f"trainer.max_steps must be >= 1, got {self.max_steps}")
        require(self.val_every >= 0, f"trainer.val_every must be >= 0, got {self.val_every}")
        require(self.devices >= 1, f"trainer.devices must be >= 1, got {self.devices}")
        require(self.log_every >= 1, f"trainer.log_every must be >= 1, got {self.log_every}")
        require(self.seed_parallel >= 1, f"trainer.seed_parallel must be >= 1, got {self.seed_parallel}")
        require(self.cpu_threads >= 1, f"trainer.cpu_threads must be >= 1, got {self.cpu_threads}")
        require(self.order_seeds >= 0, f"trainer.order_seeds must be >= 0, got {self.order_seeds}")
        require(
            not (self.compile and self.seed_parallel > 1),
            "trainer.compile is not supported with trainer.seed_parallel > 1 (torch.compile of a vmapped "
            "model); choose one",
        )
        require(
            self.seed_parallel == 1 or self.devices == 1,
            f"trainer.seed_parallel={self.seed_parallel} trains on one device; set trainer.devices=1",
        )


SECTIONS: dict[str, type] = {
    "model": ModelConfig,
    "data": DataConfig,
    "optim": OptimConfig,
    "trainer": TrainerConfig,
}


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainConfig:
    """Everything one run needs. ``seed`` fixes init, data order and dropout."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    seed: int = 0

    def __post_init__(self) -> None:
        require(
            isinstance(self.seed, int) and not isinstance(self.seed, bool),
            f"seed={self.seed!r} has the wrong type; expected int",
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def streams(self, seed: int) -> tuple[int, int]:
        """(init seed, data-order seed) of run seed ``seed`` (see trainer.order_seeds)."""
        n = self.trainer.order_seeds
        return (seed // n, seed % n) if n else (seed, seed)

    def flat(self) -> dict[str, Any]:
        """``{"model.d_model": 64, ..., "seed": 0}``: for W&B, Optuna and CSV."""
        out: dict[str, Any] = {}
        for section, values in self.to_dict().items():
            if isinstance(values, dict):
                out.update({f"{section}.{k}": v for k, v in values.items()})
            else:
                out[section] = values
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainConfig:
        require(isinstance(raw, dict), f"a train config must be a mapping, got {type(raw).__name__}")
        unknown = set(raw) - set(SECTIONS) - {"seed"}
        require(
            not unknown,
            f"unknown config section(s) {sorted(unknown)}; valid: {sorted(SECTIONS) + ['seed']}",
        )
        sections = {}
        for name, section_cls in SECTIONS.items():
            values = raw.get(name) or {}
            require(isinstance(values, dict), f"config section '{name}' must be a mapping")
            valid = [f.name for f in dataclasses.fields(section_cls)]
            bad = [k for k in values if k not in valid]
            require(
                not bad,
                f"unknown key(s) {', '.join(f'{name}.{k}' for k in bad)}; valid {name} keys: {', '.join(valid)}",
            )
            sections[name] = section_cls(**values)
        return cls(**sections, seed=raw.get("seed", 0))

    def override(self, overrides: list[str] | dict[str, Any]) -> TrainConfig:
        """Apply ``["model.n_heads=1", "seed=3"]`` (or a dict of dotted keys)."""
        raw = self.to_dict()
        for key, value in parse_overrides(overrides).items():
            set_dotted(raw, key, value)
        return TrainConfig.from_dict(raw)


def parse_overrides(overrides: list[str] | dict[str, Any]) -> dict[str, Any]:
    """``["a.b=1"]`` -> ``{"a.b": 1}``; values are parsed as YAML scalars."""
    if isinstance(overrides, dict):
        return dict(overrides)
    out: dict[str, Any] = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        require(
            bool(sep) and bool(key.strip()),
            f"override {item!r} is not of the form key=value (e.g. model.n_heads=1)",
        )
        try:
            out[key.strip()] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"override {item!r}: cannot parse the value: {err}") from None
    return out


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set ``raw["model"]["n_heads"]`` from ``"model.n_heads"``, naming valid keys on a miss."""
    if key == "seed":
        raw["seed"] = value
        return
    section, _, name = key.partition(".")
    if section not in SECTIONS or not name:
        raise ConfigError(
            f"unknown config key {key!r}; keys look like section.name with section in {sorted(SECTIONS)}, or 'seed'"
        )
    valid = [f.name for f in dataclasses.fields(SECTIONS[section])]
    require(name in valid, f"unknown config key {key!r}; valid {section} keys: {', '.join(valid)}")
    raw.setdefault(section, {})[name] = value


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that rejects duplicate keys (PyYAML silently keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    """Read a YAML file, turning a missing or malformed file into a ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"file not found: {path}")
    try:
        return yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
        raise ConfigError(f"cannot read YAML file {path}: {err}") from None


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    raw = read_yaml(path)
    require(
        isinstance(raw, dict),
        f"{path}: a train config must be a YAML mapping with sections {sorted(SECTIONS)}",
    )
    return TrainConfig.from_dict(raw).override(overrides or [])
