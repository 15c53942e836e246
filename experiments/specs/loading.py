"""Reading a train config from YAML: duplicate keys refused, relative paths made absolute
against the file that names them, a local data source replaced by its hub fallback, then the
command line's overrides."""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from ablate.errors import ConfigError, require, user_path
from ablate.experiments.schema.config import SECTIONS, TrainConfig
from ablate.experiments.schema.parsing import check_size, parse_overrides
from ablate.files import input_file
from ablate.lit_modules.components import plugins

log = logging.getLogger(__name__)


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


MAX_YAML_BYTES = 1 << 20  # 1 MiB: the largest shipped spec is 3 KB


def read_yaml(path: str | Path) -> Any:
    """Read a YAML file, turning a missing or malformed file into a ConfigError."""
    path = input_file(path)  # a file, not a folder, a device or nothing
    size = path.stat().st_size
    require(
        size <= MAX_YAML_BYTES, f"{path} is {size:,} bytes; a config or spec holds at most {MAX_YAML_BYTES:,}"
    )
    try:
        return check_size(yaml.load(path.read_text(), Loader=_UniqueKeyLoader), str(path))  # noqa: S506
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
    given = absolute_paths(parse_overrides(overrides, "the command line"), Path.cwd())
    cfg = TrainConfig.from_dict(
        absolute_sections(raw, Path(path).parent, fallback="data.source" not in given)
    )
    cfg = cfg.override(given)
    cfg.trainer.check_machine()
    from ablate.experiments.schema.memory import check_memory

    check_memory(cfg)
    return cfg


# The config keys that name a file or folder. A relative one resolves against the folder of the
# file that names it (a command-line override: the current folder), once, when it is read: the
# run's config.yaml then holds the absolute path it trained on, valid from any folder.
PATH_KEYS = ("data.source", "data.cache_dir")


def absolute_paths(overrides: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Dotted overrides with each relative path value made absolute against ``folder``."""
    out = {k: _absolute(k, v, folder) if k in PATH_KEYS else v for k, v in overrides.items()}
    if "plugins" in out:
        out["plugins"] = absolute_plugins(out["plugins"], folder)
    return out


def absolute_plugins(value: Any, folder: Path) -> Any:
    """A ``plugins:`` list with each file entry made absolute against ``folder`` (modules as they are)."""
    if not isinstance(value, list):
        return value  # not a list: TrainConfig.from_dict reports it
    return [plugins.absolute(e, folder) if isinstance(e, str) else e for e in value]


def absolute_sections(raw: dict[str, Any], folder: Path, *, fallback: bool = True) -> dict[str, Any]:
    """A config mapping (``{"data": {"source": ...}}``) with its relative paths made absolute,
    and a missing local ``data.source`` replaced by the same mapping's ``data.hub_fallback``
    (unless ``fallback`` is False: an override replaces the source, so neither applies)."""
    out = dict(raw)
    for key in PATH_KEYS:
        section, name = key.split(".")
        values = out.get(section)
        if isinstance(values, dict) and name in values:
            out[section] = {**values, name: _absolute(key, values[name], folder)}
    if "plugins" in out:
        out["plugins"] = absolute_plugins(out["plugins"], folder)
    data = out.get("data")
    if (
        fallback
        and isinstance(data, dict)
        and data.get("hub_fallback")
        and isinstance(data.get("source"), str)
    ):
        out["data"] = _hub_fallback(data)
    return out


def _hub_fallback(data: dict[str, Any]) -> dict[str, Any]:
    """Only for a source written in the same file as its fallback: a path typed on the command
    line that does not exist stays an error."""
    source = data["source"]
    if not os.path.isabs(source) or os.path.exists(source):
        return data  # a hub name, or local data that is there
    fallback = data["hub_fallback"]
    log.warning(
        "warning: data.source %s does not exist here; using the hub data set %r (data.hub_fallback; "
        "data.source=PATH names your copy)",
        source,
        fallback,
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
