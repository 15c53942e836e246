"""What a study records of a plugin (lit_modules/components/plugins.py): the hash of its code, the
same after an edit of comments, docstrings or layout and on every Python version; found and
checked without importing it; and an import error that names the module actually missing."""

from __future__ import annotations

import sys
import tokenize
from pathlib import Path

import pytest

from ablate.errors import ConfigError
from ablate.lit_modules.components import plugins

CODE = '''"""A module docstring."""
import math


def scale(x, width):
    """Scaled to the width."""
    return x * math.sqrt(width)  # Vaswani et al. 2017, 3.4


class Gain:
    "a class docstring"

    size: int = 1
    """an attribute's docstring"""

    def label(self, name):
        return f"{name!r:>{self.size}}" + f"{f'{name}'}"
'''
# The same code: comments, docstrings, blank lines, indentation width and line ends changed.
SAME = (
    CODE.replace('"""A module docstring."""', "# no docstring now")
    .replace('"""Scaled to the width."""', '"""Another docstring, over\n    two lines."""')
    .replace("  # Vaswani et al. 2017, 3.4", "")
    .replace('"a class docstring"', "'another'  # and a comment")
    .replace("\n\n\n", "\n\n\n\n")
    .replace("    ", "  ")
    .replace("\n", "\r\n")
)
EDITS = {
    "an operator": CODE.replace("x * math", "x / math"),
    "a string": CODE.replace("{name!r:>", "{name!s:>"),
    "a name": CODE.replace("def label", "def title"),
    "a block": CODE.replace("        return f", "    return f").replace("    def label", "def label"),
}


def write(tmp_path: Path, name: str, text: str) -> tuple[Path, list[Path]]:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_bytes(text.encode())
    return tmp_path, [path]


def test_comments_docstrings_and_layout_leave_the_code_hash(tmp_path: Path) -> None:
    code = plugins.code_hash(*write(tmp_path / "a", "p.py", CODE))
    assert plugins.code_hash(*write(tmp_path / "b", "p.py", SAME)) == code
    assert plugins.full_hash(*write(tmp_path / "c", "p.py", SAME)) != plugins.full_hash(
        *write(tmp_path / "d", "p.py", CODE)
    )  # the hash studies recorded before sees the edit


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_of_the_code_changes_it(tmp_path: Path, edit: str) -> None:
    code = plugins.code_hash(*write(tmp_path / "a", "p.py", CODE))
    assert plugins.code_hash(*write(tmp_path / "b", "p.py", EDITS[edit])) != code


def test_an_fstring_is_one_token_as_written_on_every_python() -> None:
    """Python 3.12 tokenizes an f-string into parts (PEP 701), 3.11 as one string: kept whole, the
    code hash is the same on both."""
    text = "x = f\"{a!r:>{w}}\" f'{b=}'  # c\n"
    assert plugins.code_tokens(text) == ["x", "=", 'f"{a!r:>{w}}"', "f'{b=}'", "\x01NEWLINE"]
    if hasattr(tokenize, "FSTRING_START"):  # what the merge undoes
        assert any(t.type == tokenize.FSTRING_START for t in tokenize.generate_tokens(iter([text]).__next__))


def test_source_that_does_not_parse_is_hashed_as_it_is(tmp_path: Path) -> None:
    assert plugins.code_tokens("def (:\n") is None
    broken = plugins.code_hash(*write(tmp_path / "a", "p.py", "def (:\n"))
    assert broken != plugins.code_hash(*write(tmp_path / "b", "p.py", "def (:  # x\n"))


def test_a_module_plugin_is_found_and_checked_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "unimported_pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "norms.py").write_text(CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    root, files = plugins.plugin_files("unimported_pkg.sub.norms")
    assert (root, files) == (package / "sub", [package / "sub" / "norms.py"])
    root, files = plugins.plugin_files("unimported_pkg")
    assert root == package and files == sorted(package.rglob("*.py"))  # a package: all of its code
    assert "unimported_pkg" not in sys.modules
    assert plugins.plugin_files("no_such_module_xyz") == (Path(), [])


def test_check_unchanged_takes_the_code_or_the_full_source_and_names_the_file(tmp_path: Path) -> None:
    root, files = write(tmp_path, "p.py", CODE)
    entry = str(files[0])
    recorded = plugins.code_hash(root, files)
    plugins.check_unchanged(entry, recorded)
    plugins.check_unchanged(entry, plugins.full_hash(root, files))  # as recorded before
    files[0].write_text(SAME)
    plugins.check_unchanged(entry, recorded)
    files[0].write_text(EDITS["an operator"])
    with pytest.raises(ConfigError, match=rf"plugin {entry} changed since the study ran \(its code"):
        plugins.check_unchanged(entry, recorded)
    files[0].unlink()
    with pytest.raises(ConfigError, match=rf"plugin {entry}: file not found"):
        plugins.check_unchanged(entry, recorded)


def test_a_module_that_the_plugin_imports_is_named_when_it_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ghostlib_ext`` exists and imports ``ghostlib``, which does not: the plugin is there, and
    the error names the module it lacks (not "no such module" for the plugin)."""
    (tmp_path / "ghostlib_ext.py").write_text("import ghostlib\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ConfigError,
        match=r"plugin 'ghostlib_ext' failed to import: it imports the module 'ghostlib', which is not installed",
    ):
        plugins.import_plugin("ghostlib_ext")
    (tmp_path / "file_plugin.py").write_text("import ghostlib\n")
    with pytest.raises(
        ConfigError, match=r"file_plugin.py failed to import: it imports the module 'ghostlib'"
    ):
        plugins.import_plugin(str(tmp_path / "file_plugin.py"))
    with pytest.raises(ConfigError, match=r"plugin 'ghostlib': no such module"):
        plugins.import_plugin("ghostlib")
    with pytest.raises(ConfigError, match=r"plugin 'ghostlib.norms': no such module"):
        plugins.import_plugin("ghostlib.norms")


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "sys.exit('bye')", "raise SystemExit(3)"])
def test_a_plugin_that_exits_on_import_is_a_failure_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_call: str
) -> None:
    """An exit is no success: the command would end at once, exit 0, with nothing run."""
    file = tmp_path / "quitter.py"
    file.write_text(f"import sys\n{exit_call}\n")
    with pytest.raises(ConfigError, match=rf"plugin {file} failed to import: it exited \(SystemExit"):
        plugins.import_plugin(str(file))
    assert plugins.module_name(str(file)) not in sys.modules  # not half-imported
    (tmp_path / "quitter_mod.py").write_text(f"import sys\n{exit_call}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"plugin 'quitter_mod' failed to import: it exited"):
        plugins.import_plugin("quitter_mod")


def test_train_and_sweep_with_a_plugin_that_exits_on_import_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ablate.cli.parser import main
    from tests.helpers.configs import TINY_YAML, write_spec

    quitter = tmp_path / "quitter.py"
    quitter.write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "train.yaml").write_text(f"plugins: [{quitter}]\n{TINY_YAML}")
    assert main(["train", str(tmp_path / "train.yaml"), "--out", str(tmp_path / "out")]) == 2
    assert f"plugin {quitter} failed to import: it exited" in capsys.readouterr().err
    spec = write_spec(tmp_path, plugins=[str(quitter)], seeds=1, heatmap_seeds=[0])
    assert main(["sweep", str(spec), "--runs", str(tmp_path / "runs"), "--no-wandb"]) == 2
    assert f"plugin {quitter} failed to import: it exited" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


def test_a_plugin_file_is_keyed_by_its_path_and_found_by_its_old_key(tmp_path: Path) -> None:
    """Two plugin files may share a name (``a/p.py``, ``b/p.py``): each is keyed by its path;
    studies recorded before keyed it by its file name, which finds it while it is the only one."""
    a, b = str(tmp_path / "a" / "p.py"), str(tmp_path / "b" / "p.py")
    assert (plugins.name_of(a), plugins.name_of(b), plugins.name_of("mylab.norms")) == (a, b, "mylab.norms")
    with plugins.keyed_by_file_name():
        assert (plugins.name_of(a), plugins.name_of("mylab.norms")) == ("p.py", "mylab.norms")
    assert plugins.name_of(a) == a  # outside it, the path again
    assert plugins.entry_of(b, [a, b]) == b and plugins.entry_of("p.py", [a]) == a
    assert plugins.entry_of("p.py", [a, b]) is None  # which one it was cannot be told
    assert plugins.entry_of("mylab.norms", [a, "mylab.norms"]) == "mylab.norms"
