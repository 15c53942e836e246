"""TrainConfig: the full, validated description of one training run.

Sections ``model``, ``data``, ``optim``, ``trainer`` and a top-level ``seed``; dotted
``key=value`` overrides are applied on top and checked against the dataclass fields.
Reading one from YAML (and its path rules) is experiments/specs/loading.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from ablate.datamodules.config import DataConfig
from ablate.errors import ConfigError, Range, documented, require, setting, short, validate_fields
from ablate.experiments.schema.machine import check_isa
from ablate.experiments.schema.parsing import as_mapping, parse_overrides
from ablate.lit_modules.components.plugins import import_plugins
from ablate.lit_modules.model.config import ModelConfig, OptimConfig
from ablate.lit_modules.model.registry import is_reading
from ablate.trees import flatten

# Seeds reach numpy and Lightning, which take unsigned 32-bit seeds.
SEED_RANGE = Range(0, 2**32 - 1)
STEPS = Range(1, 10_000_000)


@documented
@dataclass(frozen=True, kw_only=True, slots=True)
class TrainerConfig:
    """How ``lightning.Trainer`` runs: steps, precision, device, logging cadence."""

    SECTION = "trainer"

    # Each field: default, its meaning to a user (docs/pages/reference/config.md), valid range.
    max_steps: int = setting(1000, "optimizer steps", STEPS)
    val_every: int = setting(
        0, "validate every this many steps during training (0 = only at the end)", Range(0, STEPS.hi)
    )
    # An accelerator or precision this machine lacks is refused before the run (check_machine).
    precision: Literal["auto", "32-true", "bf16-mixed", "16-mixed", "bf16-true"] = setting(
        "auto",
        "`auto`: bf16-mixed on a GPU that supports it, 32-true otherwise (bf16-mixed on the CPU: slower and not bit-identical, see the performance page)",
    )
    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = setting(
        "auto", "Lightning accelerator; `auto` takes a GPU where present"
    )
    # Must be 1: multi-device (DDP) training is not supported; a sweep runs one worker per GPU.
    devices: int = setting(1, "devices per run", Range(1, 1))
    deterministic: bool = setting(True, "`torch.use_deterministic_algorithms`: bit-identical reruns on CPU")
    log_every: int = setting(50, "steps between logged training metrics", STEPS)
    compile: bool = setting(False, "`torch.compile` the encoder (GPU; costs seconds of compile time per run)")
    # A sweep worker stacks up to K waiting cells of one variant (lit_modules/systems/seed_parallel.py),
    # the W&B agent and a search trial a stack of one. A member's result does not depend on its
    # stack; the path (1 or > 1) is part of the configuration, as the two agree only to float tolerance.
    seed_parallel: int = setting(
        1,
        "`1`: every seed trains alone; `K > 1`: seeds train in stacks of at most K as one "
        "vectorized model, the same in every entry point; `ablate train` trains seed..seed+K-1 "
        "into `seed<k>/` folders. Part of the cell's configuration",
        Range(1, 1024),
    )
    cpu_threads: int = setting(
        1,
        "intra-op CPU threads of a cell (`torch.set_num_threads`); the thread count changes float"
        " reduction order and so results, so it is part of the configuration, set by every entry "
        "point whatever the worker count",
        Range(1, 1024),
    )
    # Pinned, two machines with that ISA can run the same kernels (experiments/schema/machine.py).
    cpu_isa: Literal["native", "default", "avx2", "avx512"] = setting(
        "native",
        "`native`: the kernels torch picks for this CPU; `default` / `avx2` / `avx512`: ATen, oneDNN"
        " and MKL pinned to that level (their environment variables, set in every worker before "
        "torch loads; `ablate train` restarts itself with them); refused where the CPU lacks it. "
        "Study-wide; the numerics each cell ran with are recorded either way",
    )
    # Init and data order then vary as separate, crossed factors.
    order_seeds: int = setting(
        0,
        "`0`: the run seed drives init, data order and dropout together; `n > 0` (set by a spec's"
        " `seed_factors`): seed s initializes from s // n and orders the data by s % n; dropout "
        "stays keyed by s",
        Range(0, 1_000_000),
    )
    # A third crossed factor, the float rounding (lit_modules/systems/ulp.py): the perturbation
    # Summers & Dinneen (2021) found to change a run as much as a new seed. c = 1 leaves every
    # seed's streams as they were.
    numerics_levels: int = setting(
        1,
        "`1`: off; `c > 1` (set by `seed_factors.numerics`, needs `order_seeds`): seed s = (init x c +"
        " j) x n + order, and level j > 0 moves every initial weight one ulp (torch.nextafter) in a "
        "direction drawn from a generator seeded by j; dropout is keyed by the seed of level 0",
        Range(1, 1_000_000),
    )

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
        require(
            self.numerics_levels == 1 or self.order_seeds > 0,
            f"trainer.numerics_levels={self.numerics_levels} needs trainer.order_seeds > 0: numerics levels "
            "cross init seeds and data orders (a spec's seed_factors: {init, data_order, numerics} sets both)",
        )

    def check_machine(self) -> None:
        """Refuse what this machine cannot honour, before anything runs: an absent accelerator,
        fp16 AMP on a CPU (Lightning would silently train in bf16), bf16 on a GPU without it."""
        if self.cpu_isa != "native":
            check_isa(self.cpu_isa)
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


# Keys added after studies were made with this suite. At these values a study's identity leaves
# them out (experiments/specs/spec.py, sweeps/ledger/identity.py), so a study made before them still
# resumes; any other value is part of it.
LATER_DEFAULTS: dict[str, Any] = {
    "model.attention": "mha",
    "model.norm_layer": "layernorm",
    "model.ffn": "mlp",
    "model.n_kv_heads": None,
    "trainer.numerics_levels": 1,
    "trainer.cpu_isa": "native",
    "plugins": [],
}


def without_later_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """A config mapping (``TrainConfig.to_dict()``) as studies recorded it before later keys, so
    that a study made before them still resumes: a renamed key under its first name
    (``model.block`` is ``model.norm``; ``model.pe_options.form`` is ``model.alibi``), a built-in
    component's options at their defaults left out, and the LATER_DEFAULTS keys at their default."""
    out = as_first_recorded(config)
    for key, default in LATER_DEFAULTS.items():
        section, _, name = key.rpartition(".")
        holder = out.get(section) if section else out
        field_name = name if section else key
        if isinstance(holder, dict) and field_name in holder and holder[field_name] == default:
            del holder[field_name]
    return out


def as_first_recorded(config: dict[str, Any]) -> dict[str, Any]:
    """A config mapping with its model keys as first recorded: renamed keys under their first
    names, a built-in component's options at their defaults left out."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    if isinstance(out.get("model"), dict):
        out["model"] = _model_as_first_recorded(out["model"])
    return out


def _model_as_first_recorded(model: dict[str, Any]) -> dict[str, Any]:
    from ablate.lit_modules.model.registry import CONFIG_KEYS, OPTIONS_KEYS, option_defaults

    out = {k: dict(v) if isinstance(v, dict) else v for k, v in model.items()}
    for old, new in ModelConfig.ALIASES.items():
        field, _, sub = new.partition(".")
        if not sub:
            if field in out:
                out[old] = out.pop(field)
        elif isinstance(out.get(field), dict):
            out[old] = out[field].pop(sub, ModelConfig.ALIAS_DEFAULTS[old])
    for kind, field in OPTIONS_KEYS.items():
        given = out.get(field)
        if isinstance(given, dict):
            name = out.get(CONFIG_KEYS[kind])
            defaults = option_defaults(kind, name) if isinstance(name, str) else None
            if not given or (defaults is not None and given == {k: defaults[k] for k in given}):
                del out[field]
    return out


class SeedStreams(NamedTuple):
    """The random streams of one run seed (TrainConfig.seed_streams)."""

    init: int  # seeds the initial weights
    order: int  # shuffles the training data
    numerics: int  # 0: the init as drawn; j > 0: moved one ulp per weight (lit_modules/systems/ulp.py)
    dropout: int  # keys the dropout masks


SECTIONS: dict[str, type] = {
    "model": ModelConfig,
    "data": DataConfig,
    "optim": OptimConfig,
    "trainer": TrainerConfig,
}


@documented
@dataclass(frozen=True, kw_only=True, slots=True)
class TrainConfig:
    """Everything one run needs. ``seed`` fixes init, data order and dropout."""

    model: ModelConfig = setting(doc="the encoder classifier", factory=ModelConfig)
    data: DataConfig = setting(doc="the data set and its batches", factory=DataConfig)
    optim: OptimConfig = setting(doc="AdamW and its schedule", factory=OptimConfig)
    trainer: TrainerConfig = setting(doc="how `lightning.Trainer` runs", factory=TrainerConfig)
    seed: int = setting(
        0,
        "init, data order and dropout (`data.seed` alone fixes the data set, so seed variance is "
        "training variance)",
        SEED_RANGE,
    )
    # Plugins (lit_modules/components/plugins.py): files made absolute, imported by from_dict
    # before the sections; not while reading results (registry.reading).
    plugins: tuple[str, ...] = setting(
        (),
        "modules or `.py` files (relative to this file) that register components of your own, "
        "imported before the config is checked, in every process",
    )

    def __post_init__(self) -> None:
        plugins = self.plugins
        require(
            isinstance(plugins, (list, tuple)) and all(isinstance(p, str) and p.strip() for p in plugins),
            f"plugins={short(plugins)} must be a list of module names or .py files",
        )
        object.__setattr__(self, "plugins", tuple(dict.fromkeys(plugins)))  # in order, once each
        require(
            isinstance(self.seed, int) and not isinstance(self.seed, bool),
            f"seed={self.seed!r} has the wrong type; expected int",
        )
        interval = self.RANGES["seed"]
        require(self.seed in interval, f"seed={self.seed!r} is out of range; valid: {interval}")
        self._check_lengths()

    def _check_lengths(self) -> None:
        """Every input must fit the positional encoding (``max_positions``: the learned table's rows).
        Not while reading results (registry.reading): the positional may be a plugin's."""
        from ablate.lit_modules.model.registry import get

        if is_reading():
            return
        limit = get("positional", self.model.pe).max_positions(self.model)
        longest = self.data.longest_input() + self.model.cls_token
        require(
            limit is None or longest <= limit,
            f"model.pe={self.model.pe!r} has model.max_len={limit} positions but inputs reach "
            f"{longest} tokens (data.max_len x long_test_factor, + [CLS]); raise model.max_len",
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "plugins": list(self.plugins)}

    def streams(self, seed: int) -> tuple[int, int]:
        """(init seed, data-order seed) of run seed ``seed`` (see trainer.order_seeds)."""
        s = self.seed_streams(seed)
        return s.init, s.order

    def seed_streams(self, seed: int) -> SeedStreams:
        """What run seed ``seed`` fixes (trainer.order_seeds n, trainer.numerics_levels c).

        Without factors the seed is every stream. With them s = (init x c + numerics) x n + order:
        at c = 1 that is init s // n and order s % n, as before numerics existed. Dropout is keyed
        by the seed of the same (init, order) at numerics level 0, so that level 0 is the cell a
        study without numerics runs, and the levels differ by the init's ulps only."""
        n, c = self.trainer.order_seeds, self.trainer.numerics_levels
        if not n:
            return SeedStreams(init=seed, order=seed, numerics=0, dropout=seed)
        cell, order = divmod(seed, n)
        init, level = divmod(cell, c)
        return SeedStreams(init=init, order=order, numerics=level, dropout=init * n + order)

    def flat(self) -> dict[str, Any]:
        """``{"model.d_model": 64, ..., "model.attention_options.n_kv_heads": None, "seed": 0}``:
        the dotted override keys, one per option of a component, for W&B, Optuna and CSV."""
        out: dict[str, Any] = {}
        for key, value in flatten(self.to_dict(), depth=1).items():  # the override keys: section.field
            if key.endswith("_options") and isinstance(value, dict) and value:  # and each option
                out.update({f"{key}.{name}": v for name, v in value.items()})
            else:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainConfig:
        require(isinstance(raw, dict), f"a train config must be a mapping, got {type(raw).__name__}")
        as_mapping(raw, "a train config")
        unknown = set(raw) - set(SECTIONS) - {"seed", "plugins"}
        require(
            not unknown,
            f"unknown config section(s) {sorted(unknown)}; valid: {sorted(SECTIONS) + ['seed', 'plugins']}",
        )
        plugins = raw.get("plugins") or ()
        require(
            isinstance(plugins, (list, tuple)) and all(isinstance(p, str) for p in plugins),
            f"plugins={short(plugins)} must be a list of module names or .py files",
        )
        if not is_reading():  # reading results imports no plugin, and checks no component name
            import_plugins(plugins)  # their components must be registered before the sections are checked
        sections = {}
        for name, section_cls in SECTIONS.items():
            values = renamed(name, as_mapping(raw.get(name), f"config section '{name}'"))
            valid = [f.name for f in dataclasses.fields(section_cls)]
            bad = [k for k in values if k not in valid]
            require(
                not bad,
                f"unknown key(s) {', '.join(f'{name}.{k}' for k in bad)}; valid {name} keys: {', '.join(valid)}",
            )
            sections[name] = section_cls(**values)
        return cls(**sections, seed=raw.get("seed", 0), plugins=tuple(plugins))

    def override(self, overrides: list[str] | dict[str, Any]) -> TrainConfig:
        """Apply ``["model.n_heads=1", "seed=3"]`` (or a dict of dotted keys)."""
        raw = self.to_dict()
        for key, value in parse_overrides(overrides).items():
            set_dotted(raw, key, value)
        return TrainConfig.from_dict(raw)


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set ``raw["model"]["n_heads"]`` from ``"model.n_heads"``, naming valid keys on a miss."""
    if key in ("seed", "plugins"):
        raw[key] = value
        return
    section, _, name = key.partition(".")
    if key.startswith("+"):  # Hydra's "add a key": every key exists here, so it is set as it is
        raise ConfigError(
            f"override {key!r}: drop the '+' ({key.lstrip('+')}=...): the config's keys are fixed, and each has a default"
        )
    if section not in SECTIONS or not name:
        raise ConfigError(
            f"unknown config key {key!r}; keys look like section.name with section in {sorted(SECTIONS)}, "
            "or 'seed', 'plugins'"
        )
    holder = raw.setdefault(section, {})
    if name in getattr(SECTIONS[section], "ALIASES", {}):
        _set_alias(section, holder, name, value, replace=True)
        return
    name, _, option = name.partition(".")  # model.norm_layer_options.eps: one option
    valid = [f.name for f in dataclasses.fields(SECTIONS[section])]
    require(name in valid, f"unknown config key {key!r}; valid {section} keys: {', '.join(valid)}")
    if option:
        require(
            name.endswith("_options"),
            f"config key {key!r}: only a component's options (model.<key>_options.NAME) take a third part",
        )
        holder[name] = {**(holder.get(name) or {}), option: value}
    else:
        holder[name] = value


def renamed(section: str, values: dict[str, Any]) -> dict[str, Any]:
    """A section's mapping with each older key name (its class's ``ALIASES``) under its new one,
    which may be an option (``model.n_kv_heads`` -> ``model.attention_options.n_kv_heads``)."""
    out = dict(values)
    for old in getattr(SECTIONS[section], "ALIASES", {}):
        if old in out:
            _set_alias(section, out, old, out.pop(old))
    return out


def _set_alias(section: str, holder: dict[str, Any], old: str, value: Any, *, replace: bool = False) -> None:
    """``holder[section.old] = value`` at the key ``old`` now has (``ALIASES``); unless
    ``replace`` (an override), a config that gives both keys must give one value."""
    cls = SECTIONS[section]
    field, _, sub = cls.ALIASES[old].partition(".")
    if not sub:
        require(
            replace or field not in holder or holder[field] == value,
            f"{section}.{old} is the older name of {section}.{field}; give one of them, not both",
        )
        holder[field] = value
        return
    options = dict(holder.get(field) or {})
    if value == cls.ALIAS_DEFAULTS[old]:  # what it meant before the option existed: nothing
        options.pop(sub, None)
    else:
        require(
            replace or options.get(sub, value) == value,
            f"{section}.{old} is the older name of {section}.{field}.{sub}; give one of them, not both",
        )
        options[sub] = value
    holder[field] = options
