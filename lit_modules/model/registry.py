"""One registry per component kind: the built-ins and a user's components register the same way.

    from ablate import components

    @components.register("norm", "scalenorm")
    class ScaleNorm(nn.Module):
        def __init__(self, cfg): ...          # cfg: the resolved ModelConfig
        def forward(self, x): ...             # (B, L, D) -> (B, L, D)

A config selects each kind's component by name (``model.pe``, ``model.attention``,
``model.norm_layer``, ``model.ffn``; ``CONFIG_KEYS``). The contract of each kind is the base
class or Protocol beside its built-ins (positional.py, attention.py, norms.py, ffn.py; docs:
your own component). A component may define:

- ``check(cfg)`` (classmethod): raise ``ConfigError`` for a configuration it cannot serve, when
  the config is built, before anything runs;
- ``OPTIONS`` (class attribute): the config fields only it reads, with their defaults; another
  component active with such a field changed is an error (``model.alibi`` without ``pe: alibi``);
- positional only: ``max_positions(cfg)`` (classmethod; None: any length) and ``order_free``.

Components come from the built-in modules, from plugins a config or spec declares (imported by
lit_modules/components/plugins.py in every process that builds a model), and from installed packages that
declare the entry-point group ``ablate.components`` (loaded when a name is not found otherwise).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypeVar

from ablate.errors import ConfigError

if TYPE_CHECKING:
    from ablate.lit_modules.model.config import ModelConfig

KINDS = ("positional", "attention", "norm", "ffn")
# The ModelConfig field that names each kind's component.
CONFIG_KEYS = {"positional": "pe", "attention": "attention", "norm": "norm_layer", "ffn": "ffn"}
BUILTIN_MODULES = (
    "ablate.lit_modules.model.positional",
    "ablate.lit_modules.model.attention",
    "ablate.lit_modules.model.norms",
    "ablate.lit_modules.model.ffn",
)
ENTRY_POINT_GROUP = "ablate.components"
NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")  # fullmatch

_components: dict[str, dict[str, type]] = {kind: {} for kind in KINDS}
_builtin: set[tuple[str, str]] = set()
_state = {"builtins": False, "entry_points": False}
_entry_points: list[metadata.EntryPoint] = []
C = TypeVar("C", bound=type)


def register(kind: str, name: str) -> Callable[[C], C]:
    """Class decorator: ``cls`` is the ``kind`` component called ``name`` (lower case)."""
    if kind not in KINDS:
        raise ConfigError(f"components.register: unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ConfigError(
            f"components.register({kind!r}, {name!r}): a name is lower-case letters, digits, '_', '-', '.'"
        )

    def decorate(cls: C) -> C:
        known = _components[kind].get(name)
        if known is not None and _qualname(known) != _qualname(cls):
            raise ConfigError(
                f"the {kind} component {name!r} is registered twice: by {_qualname(known)} and by "
                f"{_qualname(cls)}; give one of them another name"
            )
        _components[kind][name] = cls
        if cls.__module__ in BUILTIN_MODULES:
            _builtin.add((kind, name))
        return cls

    return decorate


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _load_builtins() -> None:
    if not _state["builtins"]:
        _state["builtins"] = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def load_entry_points() -> None:
    """Import every installed ``ablate.components`` entry point, once per process."""
    if _state["entry_points"]:
        return
    _state["entry_points"] = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as err:  # a broken plugin: exit 2 naming it, not a traceback
            raise ConfigError(
                f"the installed plugin {ep.value!r} (entry point {ep.name!r} of "
                f"{ep.dist.name if ep.dist else 'a package'}) failed to import: {type(err).__name__}: {err}"
            ) from None
        _entry_points.append(ep)


def loaded_entry_points() -> list[metadata.EntryPoint]:
    return list(_entry_points)


def names(kind: str) -> list[str]:
    """The registered ``kind`` components: built-ins, plugins imported so far, installed ones."""
    _load_builtins()
    load_entry_points()
    return sorted(_components[kind])


def get(kind: str, name: str) -> type:
    """The ``kind`` component called ``name``; a ConfigError listing the registered ones."""
    _load_builtins()
    if name not in _components[kind]:
        load_entry_points()
    try:
        return _components[kind][name]
    except KeyError:
        raise ConfigError(
            f"model.{CONFIG_KEYS[kind]}={name!r} is not a registered {kind} component; registered: "
            f"{', '.join(names(kind))} (a component of your own: list its module or file under "
            "plugins: in the config or spec)"
        ) from None


def is_builtin(kind: str, name: str) -> bool:
    _load_builtins()
    return (kind, name) in _builtin


def active(cfg: ModelConfig) -> dict[str, type]:
    """kind -> the component class ``cfg`` selects."""
    return {kind: get(kind, getattr(cfg, key)) for kind, key in CONFIG_KEYS.items()}


def check_config(cfg: ModelConfig) -> None:
    """The components' own rules for ``cfg``: each active one's ``check``, and no option of an
    inactive component changed from its default."""
    chosen = active(cfg)
    for cls in chosen.values():
        check: Any = getattr(cls, "check", None)
        if check is not None:
            check(cfg)
    for kind in KINDS:
        for name, cls in _components[kind].items():
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
