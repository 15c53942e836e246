"""A study's identity and its plugins (sweeps/ledger/identity.py, CellStore, SearchStore): a study
resumes after an edit of a plugin's comments or docstrings and refuses an edit of its code, naming
the file and the flag that starts a new study; a study recorded before plugins were hashed by their
code (by their full source) resumes while they are unchanged, and records their code hashes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.ledger.cells import open_store
from ablate.sweeps.ledger.search_store import SearchStore, search_identity
from ablate.sweeps.ledger.storage import sqlite_url
from tests.helpers.configs import TINY_BASE

PLUGIN = '''"""A norm of the tests' own."""
from torch import nn

from ablate import components


@components.register("norm", "{name}")
class Norm(nn.LayerNorm):
    def __init__(self, cfg):
        super().__init__(cfg.d_model)  # a LayerNorm by another name
'''
COMMENTED = PLUGIN.replace('"""A norm of the tests\' own."""', "# no docstring, a comment")
EDITED = PLUGIN.replace("super().__init__(cfg.d_model)", "super().__init__(cfg.d_model, eps=1e-6)")
SEARCH = {"space": {"optim.lr": {"low": 1e-4, "high": 1e-2, "log": True}}, "trials": 2, "pruner": "none"}
_names = (f"identity_norm_{i}" for i in itertools.count())  # one per test: the registry is global


def plugged(tmp_path: Path, **extra: Any) -> ExperimentSpec:
    """A spec with the plugin ``tmp_path/norm.py`` (written unless it is there) in one variant."""
    plugin = tmp_path / "norm.py"
    if not plugin.exists():
        name = next(_names)
        plugin.write_text(PLUGIN.format(name=name))
        (tmp_path / "name").write_text(name)
    name = (tmp_path / "name").read_text()
    variants = {"baseline": {}, "plugged": {"model.norm_layer": name}}
    raw = {"name": "plugged", "plugins": [str(plugin)], "base": TINY_BASE, "variants": variants, "seeds": 2}
    return spec_from_dict({**raw, **extra})


def edit(tmp_path: Path, text: str) -> None:
    (tmp_path / "norm.py").write_text(text.format(name=(tmp_path / "name").read_text()))


def test_a_comment_edit_resumes_and_a_code_edit_is_refused_naming_the_file(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "study.db")
    identity = open_store(plugged(tmp_path), url, create=True).study.user_attrs["identity"]
    edit(tmp_path, COMMENTED)
    assert open_store(plugged(tmp_path), url).study.user_attrs["identity"] == identity
    edit(tmp_path, EDITED)
    with pytest.raises(ConfigError) as refused:
        open_store(plugged(tmp_path), url)
    message = str(refused.value)
    assert "plugin code" in message and "plugin_sources.norm.py" in message
    assert f"the code of the plugin {tmp_path / 'norm.py'} changed" in message
    assert "another --runs folder (or --storage)" in message and "--out" not in message


def recorded_before(spec: ExperimentSpec, url: str) -> dict[str, Any]:
    """The study of ``spec`` on ``url`` as a version that hashed plugins by their full source left
    it: its attributes, as set then."""
    study = open_store(spec, url, create=True).study
    old = {**spec.to_dict(), "plugin_sources": spec.plugin_sources(full_source=True)}
    study.set_user_attr("spec", old)
    study.set_user_attr("identity", spec.identity(full_source=True))
    assert spec.identity(full_source=True) != spec.identity()
    return old


def test_a_study_recorded_by_full_source_resumes_and_records_the_code(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "study.db")
    spec = plugged(tmp_path)
    old = recorded_before(spec, url)
    attrs = open_store(plugged(tmp_path), url).study.user_attrs  # resumed
    assert attrs["identity"] == spec.identity()
    assert attrs["spec"] == {**old, "plugin_sources": spec.plugin_sources()}
    edit(tmp_path, COMMENTED)  # from now on by its code
    assert open_store(plugged(tmp_path), url).study.user_attrs["identity"] == spec.identity()


def test_a_study_recorded_by_full_source_refuses_a_changed_plugin(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "study.db")
    recorded_before(plugged(tmp_path), url)
    for text in (COMMENTED, EDITED):  # its full source changed: what it ran with is not known
        edit(tmp_path, text)
        with pytest.raises(ConfigError, match="was run with a different .*plugin_sources.norm.py"):
            open_store(plugged(tmp_path), url)


def test_a_search_recorded_by_full_source_resumes(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "search.db")
    spec = plugged(tmp_path, search=SEARCH)
    store = SearchStore(spec, url, ["plugged"], 2, create=True)
    store.studies["plugged"].set_user_attr("identity", search_identity(spec, full_source=True))
    again = SearchStore(plugged(tmp_path, search=SEARCH), url, ["plugged"], 2)
    assert again.studies["plugged"].user_attrs["identity"] == search_identity(spec)
    edit(tmp_path, EDITED)
    with pytest.raises(ConfigError, match="was run with a different"):
        SearchStore(plugged(tmp_path, search=SEARCH), url, ["plugged"], 2)
