"""TrainConfig: the full, validated description of one training run.

A YAML file with sections ``model``, ``data``, ``optim``, ``trainer`` and a
top-level ``seed``; dotted ``key=value`` overrides are applied on top and
checked against the dataclass fields. A relative path in a file resolves
against that file's folder; on the command line, against the current folder.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError, Range, require, short, user_path, validate_fields
from ablate.lit_modules.config import ModelConfig, OptimConfig

# Seeds reach numpy and Lightning, which take unsigned 32-bit seeds.
SEED_RANGE = Range(0, 2**32 - 1)
STEPS = Range(1, 10_000_000)


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainerConfig:
    """How ``lightning.Trainer`` runs: steps, precision, device, logging cadence."""

    SECTION = "trainer"
    RANGES = {
        "max_steps": STEPS,
        "val_every": Range(0, STEPS.hi),
        "devices": Range(1, 1),
        "log_every": STEPS,
        "seed_parallel": Range(1, 1024),
        "cpu_threads": Range(1, 1024),
        "order_seeds": Range(0, 1_000_000),
    }

    max_steps: int = 1000
    # Validate every this many steps during training (0 = only at the end).
    val_every: int = 0
    # "auto": bf16-mixed on a GPU that supports it, 32-true otherwise.
    precision: Literal["auto", "32-true", "bf16-mixed", "16-mixed", "bf16-true"] = "auto"
    # An accelerator or precision this machine lacks is refused before the run (check_machine).
    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = "auto"
    # Must be 1: multi-device (DDP) training is not supported; a sweep runs one worker per GPU.
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
        many = isinstance(self.devices, int) and not isinstance(self.devices, bool) and self.devices > 1
        require(
            not many,
            f"trainer.devices={self.devices}: a run trains on one device; multi-device (DDP) training is not "
            "supported (it would change batch composition and reduction order, so a cell's number would "
            "depend on the device count). Use one worker per GPU instead: ablate sweep --workers N",
        )
        validate_fields(self)
        require(
            not (self.compile and self.seed_parallel > 1),
            "trainer.compile is not supported with trainer.seed_parallel > 1 (torch.compile of a vmapped "
            "model); choose one",
        )

    def check_machine(self) -> None:
        """Refuse what this machine cannot honour, before anything runs: an absent accelerator,
        fp16 AMP on a CPU (Lightning would silently train in bf16), bf16 on a GPU without it."""
        if self.accelerator in ("auto", "cpu") and self.precision in ("auto", "32-true"):
            return  # always possible; skip importing torch
        device = _device(self.accelerator)
        if self.precision == "16-mixed":
            require(
                device != "cpu",
                f"trainer.precision='16-mixed' needs a GPU, and this run would train on the CPU "
                f"(trainer.accelerator={self.accelerator!r}); Lightning would silently use bf16-mixed "
                "instead. Choose 32-true or bf16-mixed, or run on a GPU",
            )
        if self.precision.startswith("bf16") and device == "cuda":
            import torch

            require(
                torch.cuda.is_bf16_supported(including_emulation=False),
                f"trainer.precision={self.precision!r}: this GPU ({torch.cuda.get_device_name()}) has no "
                "bf16 support; choose 16-mixed or 32-true",
            )


def _device(accelerator: str) -> str:
    """The device Lightning would pick for ``accelerator`` here ("cpu", "cuda" or "mps"); a
    ConfigError if the one asked for is absent. Lightning's order: "auto" and "gpu" try MPS first."""
    import torch

    cuda, mps = torch.cuda.is_available(), torch.backends.mps.is_available()
    if accelerator == "cpu":
        return "cpu"
    if accelerator == "auto":
        return "mps" if mps else "cuda" if cuda else "cpu"
    found = {"cuda": cuda, "mps": mps, "gpu": cuda or mps}[accelerator]
    need = {"cuda": "a CUDA GPU", "mps": "Apple's MPS", "gpu": "a CUDA GPU or Apple's MPS"}[accelerator]
    require(
        found,
        f"trainer.accelerator={accelerator!r} needs {need}, and this machine has none; "
        "choose trainer.accelerator=auto or cpu",
    )
    return "mps" if accelerator == "mps" or (accelerator == "gpu" and mps) else "cuda"


SECTIONS: dict[str, type] = {
    "model": ModelConfig,
    "data": DataConfig,
    "optim": OptimConfig,
    "trainer": TrainerConfig,
}


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainConfig:
    """Everything one run needs. ``seed`` fixes init, data order and dropout."""

    RANGES = {"seed": SEED_RANGE}

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
        interval = self.RANGES["seed"]
        require(self.seed in interval, f"seed={self.seed!r} is out of range; valid: {interval}")

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
        as_mapping(raw, "a train config")
        unknown = set(raw) - set(SECTIONS) - {"seed"}
        require(
            not unknown,
            f"unknown config section(s) {sorted(unknown)}; valid: {sorted(SECTIONS) + ['seed']}",
        )
        sections = {}
        for name, section_cls in SECTIONS.items():
            values = as_mapping(raw.get(name), f"config section '{name}'")
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


def as_mapping(value: Any, place: str) -> dict[str, Any]:
    """The one rule for every YAML section, variant, profile and block: a mapping with string keys.

    Absent (no key, or a key with no value) means empty; anything else that is not a mapping
    (``[]``, ``0``, ``"model.pe=none"``) is an error naming the place and the type found, never
    a silent default.
    """
    if value is None:
        return {}
    require(
        isinstance(value, dict),
        f"{place} must be a mapping (key: value), got {type(value).__name__} {short(value)}",
    )
    for key in value:
        require(
            isinstance(key, str), f"{place}: keys must be strings, got the {type(key).__name__} key {key!r}"
        )
    return value


def require_number(value: Any, key: str, interval: Range, *, integer: bool = True) -> Any:
    """A spec's numeric setting (``seeds.min``, ``search.trials``): an int (or, with ``integer``
    false, a float) inside ``interval``, else a ConfigError naming the key, the type or the interval."""
    types = int if integer else (int, float)
    expected = "int" if integer else "float"
    require(
        isinstance(value, types) and not isinstance(value, bool),
        f"{key}={value!r} has the wrong type; expected {expected}",
    )
    require(value in interval, f"{key}={value!r} is out of range; valid: {interval}")
    return value


def parse_overrides(
    overrides: list[str] | tuple[str, ...] | dict[str, Any] | None, place: str = "overrides"
) -> dict[str, Any]:
    """``["a.b=1"]`` (the command line) or ``{"a.b": 1}`` (YAML) -> ``{"a.b": 1}``; values in
    ``key=value`` items are parsed as YAML scalars. A key given twice is an error, not "last wins"."""
    if overrides is None or isinstance(overrides, dict):
        return dict(as_mapping(overrides, place))
    require(
        isinstance(overrides, (list, tuple)),
        f"{place} must be a mapping or a list of key=value, got {type(overrides).__name__} {short(overrides)}",
    )
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # key -> the item that set it, for the duplicate message
    for item in overrides:
        require(
            isinstance(item, str), f"{place}: {item!r} is not of the form key=value (e.g. model.n_heads=1)"
        )
        key, sep, text = item.partition("=")
        key = key.strip()
        require(
            bool(sep) and bool(key),
            f"override {item!r} is not of the form key=value (e.g. model.n_heads=1)",
        )
        if key in given:
            raise ConfigError(f"{place}: {key} is given twice ({given[key]!r} and {item!r}); give it once")
        given[key] = item
        try:
            out[key] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"override {item!r}: cannot parse the value: {err}") from None
        except RecursionError:  # PyYAML's composer recurses once per nesting level
            raise ConfigError(f"override {short(item)}: nested too deeply to parse") from None
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
            if not isinstance(key, Hashable):
                continue  # SafeLoader refuses it with its own message
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    """Read a YAML file, turning a missing or malformed file into a ConfigError."""
    path = user_path(str(path), "YAML file")
    require(not path.is_dir(), f"{path} is a folder; give a YAML file")
    if not path.is_file():
        raise ConfigError(f"file not found: {path}")
    try:
        return yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
        raise ConfigError(f"cannot read YAML file {path}: {err}") from None
    except RecursionError:  # PyYAML's composer recurses once per nesting level
        raise ConfigError(f"cannot read YAML file {path}: nested too deeply") from None


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """The config file, its relative paths against its folder, then the command line's overrides
    (relative paths against the current folder); refused if this machine cannot run it."""
    raw = read_yaml(path)
    require(
        isinstance(raw, dict),
        f"{path}: a train config must be a YAML mapping with sections {sorted(SECTIONS)}",
    )
    cfg = TrainConfig.from_dict(absolute_sections(raw, Path(path).parent))
    cfg = cfg.override(absolute_paths(parse_overrides(overrides, "the command line"), Path.cwd()))
    cfg.trainer.check_machine()
    return cfg


# The config keys that name a file or folder. A relative one resolves against the folder of the
# file that names it (a command-line override: the current folder), once, when it is read: the
# run's config.yaml then holds the absolute path it trained on, valid from any folder.
PATH_KEYS = ("data.source", "data.cache_dir")


def absolute_paths(overrides: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Dotted overrides with each relative path value made absolute against ``folder``."""
    return {k: _absolute(k, v, folder) if k in PATH_KEYS else v for k, v in overrides.items()}


def absolute_sections(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A config mapping (``{"data": {"source": ...}}``) with its relative paths made absolute,
    and a missing local ``data.source`` replaced by the same mapping's ``data.hub_fallback``."""
    out = dict(raw)
    for key in PATH_KEYS:
        section, name = key.split(".")
        values = out.get(section)
        if isinstance(values, dict) and name in values:
            out[section] = {**values, name: _absolute(key, values[name], folder)}
    data = out.get("data")
    if isinstance(data, dict) and data.get("hub_fallback") and isinstance(data.get("source"), str):
        out["data"] = _hub_fallback(data)
    return out


def _hub_fallback(data: dict[str, Any]) -> dict[str, Any]:
    """Only for a source written in the same file as its fallback: a path typed on the command
    line that does not exist stays an error."""
    source = data["source"]
    if not os.path.isabs(source) or os.path.exists(source):
        return data  # a hub name, or local data that is there
    fallback = data["hub_fallback"]
    print(
        f"warning: data.source {source} does not exist here; using the hub data set {fallback!r} "
        f"(data.hub_fallback)",
        file=sys.stderr,
    )
    return {**data, "source": fallback}


def _absolute(key: str, value: Any, folder: Path) -> Any:
    if not isinstance(value, str) or not value.strip():
        return value  # not a path: the field's type check reports it
    path = Path(folder, user_path(value, key))
    if key == "data.source" and not _names_local(value, path):
        return value  # a hub name such as stanfordnlp/sst2
    return os.path.abspath(path)  # normalizes "..", keeps symlinks as written


def _names_local(source: str, path: Path) -> bool:
    """Whether ``data.source`` names a local file or folder rather than a hub data set: it exists,
    or looks like a path (the same rule as ``datamodules.text.resolve``)."""
    if path.exists() or source.startswith((".", "/", "~")):
        return True
    from ablate.datamodules.sources import EXTENSIONS  # imports datasets: only for names like these

    return source.lower().endswith(EXTENSIONS)
