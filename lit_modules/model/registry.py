"""One registry per component kind: the built-ins and a user's components register the same way.

    from ablate import components

    @components.register("norm", "scalenorm")
    class ScaleNorm(nn.Module):
        def __init__(self, cfg): ...          # cfg: the resolved ModelConfig
        def forward(self, x): ...             # (B, L, D) -> (B, L, D)

A config selects each kind's component by name (``model.pe``, ``model.attention``,
``model.norm_layer``, ``model.ffn``, ``model.block``, ``model.pool``; ``CONFIG_KEYS``). The
contract of each kind is the base class or Protocol beside its built-ins (positional.py,
attention.py, norms.py, ffn.py, blocks.py, pooling.py; docs: your own component). A component may define:

- ``check(cfg)`` (classmethod): raise ``ConfigError`` for a configuration it cannot serve, when
  the config is built, before anything runs;
- ``Options`` (a nested class under ``@components.options``, kinds.py): options of its own, set
  under ``model.<key>_options`` (``OPTIONS_KEYS``), checked and filled in by ``check_config``;
- ``OPTIONS`` (class attribute): ModelConfig fields only it reads, with their defaults; another
  component active with such a field changed is an error;
- positional only: ``max_positions(cfg)`` (classmethod; None: any length) and ``order_free``.

Components come from the built-in modules (imported here before the first look-up), from
plugins a config or spec declares (imported by lit_modules/components/plugins.py in every
process that builds a model), and from installed packages that declare the entry-point group
``ablate.components`` (loaded when a name is not found otherwise). ``register`` and the tables
live in kinds.py, which the components import: this module imports them, never the reverse.

Reading results (``reading()``: ``ablate report``, ``power``, ``dashboard``, ...) builds a study's
configs without importing its plugins, so there the components' names and checks are not looked
up: the study checked them when it ran, and its plugins may be absent where its results are read.
"""

from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import metadata
from typing import TYPE_CHECKING, Any

from ablate.errors import ConfigError, validate_fields
from ablate.lit_modules.model.kinds import CONFIG_KEYS, KINDS, OPTIONS_KEYS, TABLES, register

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig

__all__ = [
    "CONFIG_KEYS",
    "KINDS",
    "OPTIONS_KEYS",
    "active",
    "builtin_modules",
    "check_config",
    "get",
    "is_reading",
    "names",
    "reading",
    "register",
]
ENTRY_POINT_GROUP = "ablate.components"

_state: dict[str, Any] = {"builtins": None, "entry_points": False}
_entry_points: list[metadata.EntryPoint] = []
_reading: ContextVar[bool] = ContextVar("ablate_reading", default=False)


@contextmanager
def reading() -> Iterator[None]:
    """Within it, configs are built to read results, not to train: no plugin is imported
    (experiments/schema/config.py) and no component is looked up or checked (``check_config``)."""
    token = _reading.set(True)
    try:
        yield
    finally:
        _reading.reset(token)


def is_reading() -> bool:
    """Whether this code runs inside ``reading()``."""
    return _reading.get()


def _table(kind: str) -> dict[str, type]:
    """The registered components of ``kind``; a ConfigError naming the kinds for another."""
    if kind not in TABLES:
        raise ConfigError(f"unknown component kind {kind!r}; the kinds are {', '.join(KINDS)}")
    return TABLES[kind]


def builtin_modules() -> frozenset[str]:
    """The modules of the built-in components, imported (and so registered) on first use."""
    if _state["builtins"] is None:
        from ablate.lit_modules.model import attention, blocks, ffn, norms, pooling, positional

        modules = (positional, attention, norms, ffn, blocks, pooling)
        _state["builtins"] = frozenset(m.__name__ for m in modules)
    return _state["builtins"]


def load_entry_points() -> None:
    """Import every installed ``ablate.components`` entry point, once per process."""
    if _state["entry_points"]:
        return
    _state["entry_points"] = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except (Exception, SystemExit) as err:  # a broken plugin (or one that exits): exit 2 naming it
            raise ConfigError(
                f"the installed plugin {ep.value!r} (entry point {ep.name!r} of "
                f"{ep.dist.name if ep.dist else 'a package'}) failed to import: {type(err).__name__}: {err}"
            ) from None
        _entry_points.append(ep)


def loaded_entry_points() -> list[metadata.EntryPoint]:
    return list(_entry_points)


def names(kind: str) -> list[str]:
    """The registered ``kind`` components: built-ins, plugins imported so far, installed ones."""
    table = _table(kind)
    builtin_modules()
    load_entry_points()
    return sorted(table)


def get(kind: str, name: str) -> type:
    """The ``kind`` component called ``name``; a ConfigError listing the registered ones."""
    table = _table(kind)
    builtin_modules()
    if name not in table:
        load_entry_points()
    try:
        return table[name]
    except KeyError:
        raise ConfigError(
            f"model.{CONFIG_KEYS[kind]}={name!r} is not a registered {kind} component; registered: "
            f"{', '.join(names(kind))} (a component of your own: list its module or file under "
            "plugins: in the config or spec)"
        ) from None


def is_builtin(kind: str, name: str) -> bool:
    """Whether the ``kind`` component ``name`` is one of the package's own."""
    modules = builtin_modules()
    cls = _table(kind).get(name)
    return cls is not None and cls.__module__ in modules


def active(cfg: ModelConfig) -> dict[str, type]:
    """kind -> the component class ``cfg`` selects."""
    return {kind: get(kind, getattr(cfg, key)) for kind, key in CONFIG_KEYS.items()}


def check_config(cfg: ModelConfig) -> None:
    """The components' own rules for ``cfg``: each active one's ``check``, and no option of an
    inactive component changed from its default. None while ``reading()``: a study's configs were
    checked when it ran, and reading them imports none of its plugins."""
    if is_reading():
        return
    chosen = active(cfg)
    for kind, cls in chosen.items():
        resolve_options(cfg, kind, cls)
    for kind, cls in chosen.items():
        check: Any = getattr(cls, "check", None)
        try:
            if check is not None:
                check(cfg)
        except ConfigError:
            raise
        except Exception as err:  # a plugin's ValueError: the user's to fix, said in one line
            raise component_failed(cfg, kind, cls, err, "rejected the config") from None
    for kind in KINDS:
        for name, cls in TABLES[kind].items():
            if cls is chosen[kind]:
                continue
            for field, default in getattr(cls, "OPTIONS", {}).items():
                value = getattr(cfg, field, default)
                if value != default:
                    key = CONFIG_KEYS[kind]
                    raise ConfigError(
                        f"model.{field}={value!r} applies to model.{key}={name!r} only "
                        f"(model.{key}={getattr(cfg, key)!r})"
                    )


def component_failed(cfg: ModelConfig, kind: str, cls: type, err: BaseException, what: str) -> ConfigError:
    """The ConfigError for ``err``, raised in the ``kind`` component ``cls`` of ``cfg``: its config
    key and name, class and file, ``what`` it did, the error and the line that raised it."""
    key = CONFIG_KEYS[kind]
    module = getattr(sys.modules.get(cls.__module__), "__file__", None) or cls.__module__
    frames = list(traceback.walk_tb(err.__traceback__))
    where = f" (raised at {frames[-1][0].f_code.co_filename}:{frames[-1][1]})" if frames else ""
    return ConfigError(
        f"the {kind} component model.{key}={getattr(cfg, key)!r} (class {cls.__qualname__} of "
        f"{module}) {what}: {type(err).__name__}: {err}{where}"
    )


def option_defaults(kind: str, name: str) -> dict[str, Any] | None:
    """The defaults of a built-in component's options ({} without any); None for another."""
    if not is_builtin(kind, name):
        return None
    options = getattr(get(kind, name), "Options", None)
    return {} if options is None else dataclasses.asdict(options())


def resolve_options(cfg: ModelConfig, kind: str, cls: type) -> None:
    """Check ``cfg``'s options of its ``kind`` component ``cls`` and fill in their defaults."""
    key, field = CONFIG_KEYS[kind], OPTIONS_KEYS[kind]
    given, name = getattr(cfg, field), getattr(cfg, key)
    options = getattr(cls, "Options", None)
    valid = [] if options is None else [f.name for f in dataclasses.fields(options)]
    unknown = [k for k in given if k not in valid]
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(f'model.{field}.{k}' for k in unknown)} of the {kind} "
            f"component model.{key}={name!r}; "
            + (f"its options: {', '.join(valid)}" if valid else "it has no options")
        )
    if options is None:
        return
    options.SECTION = f"model.{field}"  # names the key in validate_fields' messages
    try:
        value = options(**given)
    except TypeError as err:  # a field without a default
        raise ConfigError(f"model.{field}: {err}") from None
    validate_fields(value)
    object.__setattr__(cfg, field, dataclasses.asdict(value))
