"""What ``ablate completion SHELL`` adds to shtab's commands and options: the shipped config, spec
and preset names for a CONFIG, SPEC or NAME argument (beside YAML files), and for the overrides
the dotted config keys (``model.n_heads=``), then after ``=`` the values of a key that has fixed
ones (a ``Literal``, a bool, a component registry) or files for a path key. Every list is
computed when the script is generated, so a tab press runs no Python."""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
from typing import Any

from ablate.errors import ConfigError, choices, type_hints

FILES = "@files"  # a key whose value is a path: complete it as files
# Per command, the shipped kinds its CONFIG/SPEC argument takes (experiments/specs/shipped.py).
SPEC_KINDS = {"sweep": ("spec", "config")}
# The name lists the script defines: the kinds in each, and whether YAML files complete beside.
NAME_LISTS = (
    (("config",), True),  # ablate train CONFIG
    (("spec",), True),  # search, lr-check, wandb-sweep SPEC; train --spec
    (("spec", "config"), True),  # ablate sweep SPEC
    (("preset",), False),  # ablate reproduce NAME
    (("config", "spec"), False),  # ablate configs copy NAME
)
ZSH_ONE_WORD = re.compile(r'"\(\*\)::([^"]*:_shtab_ablate_overrides)"')
FOLDERS = ("run_dir", "run_dirs", "run_a", "run_b", "path")  # run folders: complete folders


def _component_names(kind: str) -> tuple[str, ...]:
    from ablate.lit_modules.model import registry

    try:
        return tuple(registry.names(kind))  # built-ins and installed plugins
    except ConfigError:  # an installed plugin that fails to import: the built-ins still complete
        return tuple(sorted(registry.TABLES[kind]))


def _values(cls: type, name: str) -> tuple[str, ...]:
    found = choices(cls, name)
    if found is not None:
        return tuple(map(str, found))
    return ("true", "false") if type_hints(cls)[name] is bool else ()


def config_keys() -> dict[str, tuple[str, ...] | str]:
    """Every dotted key an override may set (the schema's sections and fields, each component's
    options, ``seed``, ``plugins``), with its fixed values, FILES for a path, or () for any value."""
    from ablate.experiments.schema.config import SECTIONS
    from ablate.experiments.specs.loading import PATH_KEYS
    from ablate.lit_modules.model import registry
    from ablate.lit_modules.model.kinds import CONFIG_KEYS, OPTIONS_KEYS

    components = {f"model.{key}": kind for kind, key in CONFIG_KEYS.items()}
    keys: dict[str, tuple[str, ...] | str] = {}
    for section, cls in SECTIONS.items():
        for field in dataclasses.fields(cls):
            key = f"{section}.{field.name}"
            keys[key] = _component_names(components[key]) if key in components else _values(cls, field.name)
    for kind, field_name in OPTIONS_KEYS.items():
        for name in _component_names(kind):
            for option in registry.option_defaults(kind, name) or {}:
                keys.setdefault(f"model.{field_name}.{option}", ())
    keys.update({"seed": (), "plugins": FILES})
    keys.update(dict.fromkeys(PATH_KEYS, FILES))
    return keys


def shipped_names() -> dict[str, tuple[str, ...]]:
    """The names a CONFIG/SPEC argument takes by kind (``config``, ``spec``), and ``preset``."""
    from ablate.experiments.specs.presets import preset_names
    from ablate.experiments.specs.shipped import shipped

    items = shipped().values()
    names = {kind: tuple(s.name for s in items if s.kind == kind) for kind in ("config", "spec")}
    return {**names, "preset": tuple(preset_names())}


def _wordify(text: str) -> str:
    return re.sub(r"\W", "_", text)


# bash: each function gets the word being completed as $1 and prints candidates, one a line (shtab
# calls it in a subshell). bash splits "key=value" at "=" (COMP_WORDBREAKS): the value is then a
# word of its own after a word "=", and the key the word before that.
BASH_OVERRIDES = r"""
# $1: the word being completed; prints dotted keys, or the values of the key before "="
_shtab_ablate_overrides() {
  local cur=$1 key="" head="" i=$COMP_CWORD
  if [[ $cur == "=" ]]; then key=${COMP_WORDS[i-1]}; cur=""
  elif [[ $cur == *=* ]]; then key=${cur%%=*}; head="$key="; cur=${cur#*=}
  elif (( i > 1 )) && [[ ${COMP_WORDS[i-1]} == "=" ]]; then key=${COMP_WORDS[i-2]}
  fi
  if [[ -z $key ]]; then compgen -W "$_shtab_ablate_keys" -- "$cur"; return 0; fi
  if [[ $cur == *,* ]]; then head="$head${cur%,*},"; cur=${cur##*,}; fi  # sweep: key=a,b,...
  local var="_shtab_ablate_values_${key//[^[:word:]]/_}" line
  if [[ ${!var-} == @files ]]; then
    while IFS= read -r line; do printf '%s\n' "$head$line"; done < <(compgen -f -- "$cur")
  elif [[ -n ${!var-} ]]; then
    while IFS= read -r line; do printf '%s\n' "$head$line"; done < <(compgen -W "${!var}" -- "$cur")
  fi
  return 0
}

# $1: the word being completed; prints YAML files and folders
_shtab_ablate_yaml_files() {
  compgen -f -X '!*.yaml' -- "$1"; compgen -f -X '!*.yml' -- "$1"; compgen -d -- "$1"
}
"""
# A key is completed up to its "=", so no space may follow it: shtab's function runs the ones above
# in a subshell, where compopt does nothing, so the registered function wraps it.
BASH_NOSPACE = r"""
_shtab_ablate_nospace() {
  _shtab_ablate "$@"
  [[ " ${COMPREPLY[*]} " == *"= "* ]] && compopt -o nospace 2>/dev/null
  return 0
}
complete -o bashdefault -F _shtab_ablate_nospace ablate"""

ZSH_OVERRIDES = r"""
# dotted keys, or after "=" (and after each "," of a sweep's list) the values of that key
_shtab_ablate_overrides() {
  if compset -P '*='; then
    local key=${IPREFIX%=} var
    compset -P '*,'
    var=_shtab_ablate_values_${key//[^[:alnum:]_]/_}
    if [[ ${(P)var-} == @files ]]; then _files
    elif [[ -n ${(P)var-} ]]; then compadd -- ${=${(P)var}}
    fi
  else
    compadd -S '' -- ${=_shtab_ablate_keys}
  fi
}
"""


def _names_function(shell: str, fn: str, names: tuple[str, ...], files: bool) -> str:
    if shell == "bash":
        words = shlex.quote(" ".join(names))
        more = '; _shtab_ablate_yaml_files "$1"' if files else ""
        return f'{fn}() {{ compgen -W {words} -- "$1"{more}; }}'
    more = "; _files -g '*.y(a|)ml'" if files else ""
    return f"{fn}() {{ local -a names=({' '.join(map(shlex.quote, names))}); compadd -a names{more}; }}"


def _preamble(shell: str, names: dict[str, tuple[str, ...]], keys: dict[str, Any]) -> str:
    lines = [BASH_OVERRIDES if shell == "bash" else ZSH_OVERRIDES]
    lines.append(f"_shtab_ablate_keys={shlex.quote(' '.join(k + '=' for k in keys))}")
    for key, values in keys.items():
        if values:
            text = values if isinstance(values, str) else " ".join(values)
            lines.append(f"_shtab_ablate_values_{_wordify(key)}={shlex.quote(text)}")
    for kinds, files in NAME_LISTS:
        every = tuple(n for kind in kinds for n in names[kind])
        lines.append(_names_function(shell, _names_fn(kinds, files), every, files=files))
    return "\n".join(lines) + "\n"


def _names_fn(kinds: tuple[str, ...], files: bool = True) -> str:
    # bash: "_file" in a name makes shtab's function add "/" to folders (compopt -o filenames).
    return "_shtab_ablate_" + "_".join(kinds) + ("_files" if files else "_names")


def _argument_completion(command: str, action: argparse.Action, shell: str) -> dict[str, str] | None:
    """The shell function that completes ``action`` of ``ablate COMMAND``, None for shtab's own."""
    if action.dest == "overrides":
        return {shell: "_shtab_ablate_overrides"}
    if action.dest == "config":
        return {shell: _names_fn(("config",))}
    if action.dest == "spec":
        return {shell: _names_fn(SPEC_KINDS.get(command, ("spec",)))}
    if command == "reproduce" and action.dest == "name":
        return {shell: _names_fn(("preset",), files=False)}
    if command == "configs copy" and action.dest == "name":
        return {shell: _names_fn(("config", "spec"), files=False)}
    return None


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every (nested) subcommand by its words: ``train``, ``configs``, ``configs copy``."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[prefix + name] = sub
                found.update(_commands(sub, f"{prefix}{name} "))
    return found


def add_completions(parser: argparse.ArgumentParser, shell: str) -> str:
    """Set each CONFIG, SPEC, NAME and overrides argument's ``complete`` for ``shell`` (bash or
    zsh) and return the preamble that defines what they call."""
    import shtab

    for command, sub in _commands(parser).items():
        for action in sub._actions:
            if (found := _argument_completion(command, action, shell)) is not None:
                action.complete = found  # type: ignore[attr-defined]
                if shell == "bash" and action.nargs == "?" and not action.option_strings:
                    # shtab's bash never moves past an optional positional: let it take one word,
                    # so the overrides after CONFIG (train) or NAME (reproduce) complete as such.
                    action.nargs = None
            elif action.dest in FOLDERS:
                action.complete = shtab.DIR  # type: ignore[attr-defined]
    return _preamble(shell, shipped_names(), config_keys())


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """shtab's completion script for ``shell``, with the names and keys above in bash and zsh
    (tcsh: files for CONFIG/SPEC and folders for run folders)."""
    import shtab

    if shell == "tcsh":
        for sub in _commands(parser).values():
            for action in sub._actions:
                if action.dest in ("config", "spec"):
                    action.complete = shtab.FILE  # type: ignore[attr-defined]
                elif action.dest in FOLDERS:
                    action.complete = shtab.DIR  # type: ignore[attr-defined]
        return shtab.complete(parser, shell=shell)
    text = shtab.complete(parser, shell=shell, preamble=add_completions(parser, shell))
    if shell == "bash":
        registered = "complete -o bashdefault -F _shtab_ablate ablate"
        if registered not in text:
            raise AssertionError(f"shtab's bash script no longer ends with {registered!r}")
        return text.replace(registered, BASH_NOSPACE.strip())
    # shtab writes nargs="*" as "(*)::help:action", one optional word: "*:help:action" takes
    # every word after CONFIG/SPEC, so each override completes, not only the first.
    text, n = ZSH_ONE_WORD.subn(r'"*:\1"', text)
    if n == 0:
        raise AssertionError("shtab's zsh script has no overrides argument to complete")
    return text
