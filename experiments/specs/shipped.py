"""The configs and experiment specs that ship inside the package, found by name.

``ablate train order`` or ``ablate sweep heads`` work after ``pip install`` from any folder: a name
that is not a file is looked up here (a file always wins, and a note says which was used).
``ablate configs`` lists them and ``ablate configs copy NAME`` writes one to edit.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ablate.errors import ConfigError, user_path
from ablate.experiments.specs.loading import read_yaml
from ablate.files import atomic_write, input_file

# The shipped files, data beside the code: experiments/configs/ (train configs), its ablations/
# (experiment specs) and presets/ (what ``ablate reproduce`` runs).
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
log = logging.getLogger(__name__)
KINDS = {"config": "train config", "spec": "experiment spec"}


@dataclass(frozen=True)
class Shipped:
    name: str
    kind: str  # "config" (a train config: ablate train) or "spec" (ablate sweep)
    path: Path

    def description(self) -> str:
        """A spec's ``description`` or a config's leading comment, cut to about 120 characters."""
        if self.kind == "spec":
            text = str(read_yaml(self.path).get("description") or "")
        else:
            lines = []
            for line in self.path.read_text().splitlines():
                if not line.startswith("#"):
                    break
                lines.append(line.lstrip("# "))
            text = " ".join(lines)
        text = " ".join(text.split())
        return text if len(text) <= 120 else text[:120].rsplit(" ", 1)[0] + " ..."

    def base(self) -> str | None:
        """A spec's ``base:`` file name (``sst2.yaml``), None for a config or an inline base."""
        base = read_yaml(self.path).get("base") if self.kind == "spec" else None
        return Path(base).name if isinstance(base, str) else None


def shipped() -> dict[str, Shipped]:
    """Every shipped train config (``experiments/*.yaml``) and spec (``experiments/configs/ablations/``)."""
    found = [Shipped(p.stem, "config", p) for p in sorted(CONFIGS.glob("*.yaml"))]
    found += [Shipped(p.stem, "spec", p) for p in sorted((CONFIGS / "ablations").glob("*.yaml"))]
    return {s.name: s for s in found}


def resolve(given: str, kinds: tuple[str, ...], what: str) -> Path:
    """The file ``given`` if it exists, else the shipped config or spec of that name (a note on
    stderr says so); a shipped name of the wrong kind, or neither, is a ConfigError."""
    path = user_path(given, what)
    if path.exists():
        return input_file(path)
    name = path.name.removesuffix(".yaml").removesuffix(".yml")
    found = shipped().get(name) if path.parent == Path(".") else None
    if found is None:
        names = ", ".join(n for n, s in shipped().items() if s.kind in kinds)
        raise ConfigError(f"file not found: {given}, and no shipped {what} of that name; shipped: {names}")
    if found.kind not in kinds:
        raise ConfigError(
            f"{name} is a shipped {KINDS[found.kind]}, not a {what}; "
            + ("train it with: ablate train " if found.kind == "config" else "run it with: ablate sweep ")
            + name
        )
    log.warning("note: no file %s here; using the shipped %s %s", given, KINDS[found.kind], found.path)
    return found.path


# A spec's `base:` and a config's `data.source` are relative to the shipped file's folder. A copy
# must work wherever it is moved, also on a machine where ablate is installed elsewhere: a spec's
# copy holds its base config inline (base: accepts a mapping), and the data is named as it
# resolves here.
_BASE = re.compile(r"^(base:\s*)(\S+?\.ya?ml)(\s*(#.*)?)$")
_SOURCE = re.compile(r"^(\s+source:\s*)(\S+)(\s*(#.*)?)$")


def copy_text(item: Shipped) -> str:
    """The shipped file's text (comments kept) with its relative paths made to work from anywhere:
    a spec's base config written inline under ``base:``, a config's local data made absolute."""
    folder = item.path.parent
    hub = read_yaml(item.path).get("data", {}) if item.kind == "config" else {}
    out = []
    for line in item.path.read_text().splitlines():
        if (m := _BASE.match(line)) and not os.path.isabs(m[2]):
            line = _inline_base(Path(os.path.normpath(folder / m[2])), m[3])
        elif (m := _SOURCE.match(line)) and m[2].startswith("."):
            local = os.path.normpath(folder / m[2])
            fallback = isinstance(hub, dict) and hub.get("hub_fallback")
            source = local if os.path.exists(local) or not fallback else fallback
            line = f"{m[1]}{source}{m[3]}"
        out.append(line)
    return "\n".join(out) + "\n"


def _inline_base(base: Path, comment: str) -> str:
    """``base:`` with the copy of the config file ``base`` (comments kept) indented under it."""
    config = copy_text(Shipped(base.stem, "config", base))
    lines = [f"base:  {comment.strip() or f'# the shipped {base.name}, inline: edit it here'}"]
    lines += [f"  {line}" if line.strip() else "" for line in config.splitlines()]
    return "\n".join(lines)


def copy(name: str, dest: str | None, *, force: bool = False) -> Path:
    """Write the shipped ``name`` to ``dest`` (a file, or a folder to put ``NAME.yaml`` in; default
    ``./NAME.yaml``); an existing file is kept unless ``force``."""
    items = shipped()
    if name not in items:
        raise ConfigError(f"no shipped config or spec {name!r}; choose one of {', '.join(items)}")
    target = user_path(dest, "destination") if dest else Path(f"{name}.yaml")
    if target.is_dir():
        target = target / f"{name}.yaml"
    if target.exists() and not force:
        raise ConfigError(f"{target} exists; choose another DEST or pass --force to replace it")
    return atomic_write(target, copy_text(items[name]))
