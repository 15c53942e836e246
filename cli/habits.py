"""What Hydra and LightningCLI users type, and what ablate takes instead: a hint for a stray
flag (``--multirun``, ``--model.n_heads 1``), and Hydra's ``~key`` / ``+key`` / ``++key`` read as
this CLI's overrides or refused with the one to write (docs: first sweep, coming from Hydra)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
from typing import Any

from ablate.errors import ConfigError, require
from ablate.sweeps.ledger.secrets import shown

HABITS = {
    ("-m", "--multirun"): "no -m here: a grid is ablate sweep CONFIG.yaml key=a,b",
    ("--config", "-c", "--config-name", "--config-path"): "the config file is the first argument: "
    "ablate train CONFIG.yaml, ablate sweep SPEC.yaml",
    ("--print_config", "--print-config", "--cfg"): "the resolved config is --print-config, on "
    "ablate train, sweep and search",
}
# LightningCLI's --section.key VALUE / --section.key=VALUE (and --seed): an override, key=VALUE.
FLAG_KEY = re.compile(r"--([A-Za-z_]\w*(?:\.\w+)+|seed|plugins)(?:=(.*))?", re.DOTALL)
# Hydra's ~key: here, the key back to its schema default (reset_item).
RESET = re.compile(r"~[A-Za-z_][\w.]*(?:=.*)?", re.DOTALL)
# Hydra's +key=value (add a key) and ++key=value (add or override).
ADD = re.compile(r"(\+\+?)([A-Za-z_][\w.]*)=(.*)", re.DOTALL)


def habit_hint(stray: list[str], argv: list[str] | None = None) -> str:
    """``(<what to type instead>)`` for a Hydra / LightningCLI habit among ``stray``, else ''."""
    for flags, hint in HABITS.items():
        if any(x.partition("=")[0] in flags for x in stray):
            return f" ({hint})"
    if argv is not None and any(FLAG_KEY.fullmatch(x) for x in stray):
        written, fixed = flags_as_overrides(argv, set(stray))
        command = " ".join(shlex.quote(shown(x)) for x in fixed)
        return f" (an override is key=value, with no dashes: write {', '.join(written)}: ablate {command})"
    return ""


def flags_as_overrides(argv: list[str], stray: set[str]) -> tuple[list[str], list[str]]:
    """The overrides that ``argv``'s stray ``--key VALUE`` / ``--key=VALUE`` flags mean, and
    ``argv`` with each written as ``key=VALUE`` (``key=VALUE`` itself where none follows)."""
    written: list[str] = []
    fixed: list[str] = []
    i = 0
    while i < len(argv):
        flag = FLAG_KEY.fullmatch(argv[i]) if argv[i] in stray else None
        value = flag[2] if flag else None
        if flag and value is None:
            after = argv[i + 1] if i + 1 < len(argv) else ""
            taken = after in stray and not after.startswith("-") and "=" not in after
            value, i = (after, i + 1) if taken else ("VALUE", i)
        fixed.append(f"{flag[1]}={value}" if flag else argv[i])
        written += fixed[-1:] if flag else []
        i += 1
    return written, fixed


def hydra_overrides(args: argparse.Namespace) -> None:
    """Hydra's ``~key`` and ``++key=v`` in ``args.overrides`` as this CLI's ``key=v`` (``+key=v``
    refused, naming the key to write); also ``train --spec``'s first override, in CONFIG."""
    if hasattr(args, "overrides"):
        args.overrides = [hydra_item(x) for x in args.overrides]
    if getattr(args, "command", None) == "train" and args.spec is not None and args.config:
        args.config = hydra_item(args.config)


def hydra_item(item: str) -> str:
    """One override: ``~key`` -> ``key=<its schema default>``; ``++key=v`` -> ``key=v`` for a key
    that exists; ``+key=v`` a ConfigError (drop the '+'); an unknown key a ConfigError naming
    the valid ones; any other item as it is."""
    if RESET.fullmatch(item):
        return reset_item(item)
    if (added := ADD.fullmatch(item)) is None:
        return item
    plus, key, text = added.groups()
    known_key(
        key, f"override {item!r}: {plus} adds a key, and a config's keys are fixed (each has a default)"
    )
    if plus == "++":  # Hydra's add-or-override: the key exists, so it is set
        return f"{key}={text}"
    raise ConfigError(
        f"override {item!r}: drop the '+' ({key}=...): the config's keys are fixed, and each has a "
        f"default; write {key}={text}"
    )


def known_key(key: str, place: str) -> None:
    """A ConfigError (``place``: the key, and the valid keys, with the closest) unless ``key`` is
    a key of the train config."""
    from ablate.experiments.schema.config import set_dotted

    try:
        set_dotted({}, key, None)  # the key's check, with its message naming the valid keys
    except ConfigError as err:
        close = closest_key(key)
        raise ConfigError(f"{place}: {err}{f'; did you mean {close}?' if close else ''}") from None


def closest_key(key: str) -> str | None:
    """The config key closest to the unknown ``key``: by name within its section, else whole."""
    import difflib

    from ablate.experiments.schema.config import SECTIONS

    section, _, name = key.partition(".")
    if section in SECTIONS and name:
        names = [f.name for f in dataclasses.fields(SECTIONS[section])]
        close = difflib.get_close_matches(name.partition(".")[0], names, n=1)
        return f"{section}.{close[0]}" if close else None
    keys = ["seed", "plugins", *(f"{s}.{f.name}" for s, c in SECTIONS.items() for f in dataclasses.fields(c))]
    return next(iter(difflib.get_close_matches(key, keys, n=1)), None)


def reset_item(item: str) -> str:
    """Hydra's ``~key`` (delete the key): here ``key=<its schema default>``, the value it has
    when no config sets it. A ConfigError for ``~key=value``, an unknown key or one option."""
    import yaml

    key, sep, text = item[1:].partition("=")
    require(
        not sep,
        f"override {item!r}: ~KEY resets a key to its default and takes no value: write ~{key}, "
        f"or {key}={text} to set it",
    )
    known_key(key, f"override {item!r}")
    default = schema_default(key)
    value = list(default) if isinstance(default, tuple) else default
    return f"{key}={yaml.safe_dump([value], default_flow_style=True, width=10**9).strip()[1:-1]}"


def schema_default(key: str) -> Any:
    """The schema default of the (known) config key ``key``: its dataclass field's, or for an
    older name the value that means "not set" (``ALIAS_DEFAULTS``)."""
    from ablate.experiments.schema.config import SECTIONS, TrainConfig

    section, _, name = key.partition(".")
    cls, name = (SECTIONS[section], name) if name else (TrainConfig, key)
    if name in getattr(cls, "ALIAS_DEFAULTS", {}):
        return cls.ALIAS_DEFAULTS[name]
    name = getattr(cls, "ALIASES", {}).get(name, name)
    field = {f.name: f for f in dataclasses.fields(cls)}.get(name)
    if field is None:  # model.pe_options.base: the chosen component's default applies when unset
        kind = name.partition(".")[0]
        raise ConfigError(
            f"~{key}: one option of a component has no schema default (the component's own applies "
            f"when it is not set): reset all of them with ~{section}.{kind}, or set this one with {key}=VALUE"
        )
    return field.default if field.default is not dataclasses.MISSING else field.default_factory()
