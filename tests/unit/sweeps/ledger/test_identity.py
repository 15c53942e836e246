"""A study's identity and its plugins (sweeps/ledger/identity.py, CellStore, SearchStore): a study
resumes after an edit of a plugin's comments or docstrings and refuses an edit of its code, naming
the file and the flag that starts a new study; two plugin files with one file name are both
recorded (keyed by path); a study recorded before plugins were hashed by their code (by their full
source) or keyed by their file names alone resumes while they are unchanged, and records them as
today, unless two of its plugins share a file name (it recorded one of them only)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from optuna.trial import TrialState

from ablate.errors import ConfigError
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.lit_modules.components import plugins
from ablate.lit_modules.model.kinds import TABLES
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


@pytest.fixture(autouse=True)
def unregistered() -> Iterator[None]:
    """Each test's norms leave the registry after it: later tests list the registered norms."""
    yield
    for name in [n for n in TABLES["norm"] if n.startswith("identity_norm_")]:
        del TABLES["norm"][name]


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
    assert "plugin code" in message and f"plugin_sources.{tmp_path / 'norm.py'}" in message
    assert f"the code of the plugin {tmp_path / 'norm.py'} changed" in message
    assert "another --runs folder (or --storage)" in message and "--out" not in message


# How older versions recorded a study's plugins: (keyed by file name alone, hashed by full source).
OLDER = [(False, True), (True, False), (True, True)]
OLDER_IDS = ["full-source", "file-name", "file-name-full-source"]


def older(by_name: bool) -> contextlib.AbstractContextManager:
    return plugins.keyed_by_file_name() if by_name else contextlib.nullcontext()


def recorded_before(
    spec: ExperimentSpec, url: str, by_name: bool = False, full: bool = True
) -> dict[str, Any]:
    """The study of ``spec`` on ``url`` as a version that keyed plugins by file name (``by_name``)
    or hashed them by their full source (``full``) left it: its attributes, as set then."""
    study = open_store(spec, url, create=True).study
    with older(by_name):
        old = {**spec.to_dict(), "plugin_sources": spec.plugin_sources(full_source=full)}
        identity = spec.identity(full_source=full)
    study.set_user_attr("spec", old)
    study.set_user_attr("identity", identity)
    assert identity != spec.identity()
    return old


@pytest.mark.parametrize(("by_name", "full"), OLDER, ids=OLDER_IDS)
def test_a_study_recorded_in_an_older_form_resumes_and_records_it_as_today(
    tmp_path: Path, by_name: bool, full: bool
) -> None:
    url = sqlite_url(tmp_path / "study.db")
    spec = plugged(tmp_path)
    old = recorded_before(spec, url, by_name, full)
    if by_name:
        assert list(old["plugin_sources"]) == ["norm.py"]
    attrs = open_store(plugged(tmp_path), url).study.user_attrs  # resumed
    assert attrs["identity"] == spec.identity()
    assert attrs["spec"] == {**old, "plugin_sources": spec.plugin_sources()}
    assert list(attrs["spec"]["plugin_sources"]) == [str(tmp_path / "norm.py")]
    edit(tmp_path, COMMENTED)  # from now on by its code
    assert open_store(plugged(tmp_path), url).study.user_attrs["identity"] == spec.identity()


@pytest.mark.parametrize(("by_name", "full"), OLDER, ids=OLDER_IDS)
def test_a_study_recorded_in_an_older_form_refuses_a_changed_plugin_naming_its_file(
    tmp_path: Path, by_name: bool, full: bool
) -> None:
    url = sqlite_url(tmp_path / "study.db")
    recorded_before(plugged(tmp_path), url, by_name, full)
    # By full source, a comment edit is a change too: what it ran with is not known.
    for text in (COMMENTED, EDITED) if full else (EDITED,):
        edit(tmp_path, text)
        with pytest.raises(ConfigError) as refused:
            open_store(plugged(tmp_path), url)
        message = str(refused.value)
        assert f"plugin_sources.{tmp_path / 'norm.py'}: " in message, message
        assert f"the code of the plugin {tmp_path / 'norm.py'} changed" in message
        assert "(absent)" not in message  # the old key read as the file's, not as another plugin


def two_of_one_name(tmp_path: Path, seeds: int = 1) -> ExperimentSpec:
    """A spec with the plugins ``a/norm.py`` and ``b/norm.py`` (written unless they are there),
    each registering its own norm, one variant each."""
    names = {}
    for folder in ("a", "b"):
        plugin = tmp_path / folder / "norm.py"
        if not plugin.exists():
            plugin.parent.mkdir(parents=True)
            (tmp_path / f"{folder}.name").write_text(name := next(_names))
            plugin.write_text(PLUGIN.format(name=name))
        names[folder] = (tmp_path / f"{folder}.name").read_text()
    raw = {
        "name": "two",
        "plugins": [str(tmp_path / "a" / "norm.py"), str(tmp_path / "b" / "norm.py")],
        "base": TINY_BASE,
        "variants": {"baseline": {}, **{f: {"model.norm_layer": n} for f, n in names.items()}},
        "seeds": seeds,
    }
    return spec_from_dict(raw)


def test_two_plugins_with_one_file_name_are_both_recorded_and_an_edit_of_either_is_refused(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "study.db")
    a, b = tmp_path / "a" / "norm.py", tmp_path / "b" / "norm.py"
    attrs = open_store(two_of_one_name(tmp_path), url, create=True).study.user_attrs
    sources = attrs["spec"]["plugin_sources"]
    assert sorted(sources) == [str(a), str(b)] and sources[str(a)] != sources[str(b)]
    b.write_text(
        b.read_text().replace("super().__init__(cfg.d_model)", "super().__init__(cfg.d_model, eps=1e-6)")
    )
    with pytest.raises(ConfigError) as refused:
        open_store(two_of_one_name(tmp_path, seeds=2), url)  # more seeds: the same study, grown
    message = str(refused.value)
    assert f"plugin_sources.{b}: " in message and f"the code of the plugin {b} changed" in message
    assert str(a) not in message


def test_a_study_that_keyed_two_plugins_by_their_one_file_name_is_refused(tmp_path: Path) -> None:
    """Keyed by file name, such a study recorded one of the two hashes: which code ran is unknown."""
    url = sqlite_url(tmp_path / "study.db")
    spec = two_of_one_name(tmp_path)
    old = recorded_before(spec, url, by_name=True, full=False)
    assert list(old["plugin_sources"]) == ["norm.py"]
    with pytest.raises(ConfigError) as refused:
        open_store(two_of_one_name(tmp_path), url)
    assert "recorded the plugins named norm.py by that name alone" in " ".join(str(refused.value).split())


@pytest.mark.parametrize(("by_name", "full"), OLDER, ids=OLDER_IDS)
def test_a_search_recorded_in_an_older_form_resumes(tmp_path: Path, by_name: bool, full: bool) -> None:
    url = sqlite_url(tmp_path / "search.db")
    spec = plugged(tmp_path, search=SEARCH)
    store = SearchStore(spec, url, ["plugged"], 2, create=True)
    with older(by_name):
        store.studies["plugged"].set_user_attr("identity", search_identity(spec, full_source=full))
    again = SearchStore(plugged(tmp_path, search=SEARCH), url, ["plugged"], 2)
    assert again.studies["plugged"].user_attrs["identity"] == search_identity(spec)
    edit(tmp_path, EDITED)
    with pytest.raises(ConfigError, match="was run with a different"):
        SearchStore(plugged(tmp_path, search=SEARCH), url, ["plugged"], 2)


def finish(store: Any, variant: str, state: TrialState) -> None:
    """Claim a waiting cell of ``variant`` and end it in ``state`` (RUNNING: leave it claimed)."""
    trial = store.claim(variant)
    if state == TrialState.COMPLETE:
        store.study.tell(trial, 0.5)
    elif state == TrialState.FAIL:
        trial.set_user_attr("error", "RuntimeError: a bug in __init__")
        store.study.tell(trial, state=TrialState.FAIL)


def test_a_plugin_fixed_under_cells_that_all_failed_is_taken_by_the_driver(tmp_path: Path) -> None:
    """The plugged variant's cells failed (its __init__ raised); the baseline's completed, without
    the plugin's code. The fixed plugin is the study's from then on, when the driver opens it
    (a worker refuses it, and one that opened the study before stops at its next claim)."""
    url = sqlite_url(tmp_path / "study.db")
    store = open_store(plugged(tmp_path), url, create=True, plugin_fix=True)
    store.ensure_cells()
    finish(store, "baseline", TrialState.COMPLETE)
    finish(store, "plugged", TrialState.FAIL)
    edit(tmp_path, EDITED)  # the fix
    with pytest.raises(ConfigError, match="was run with a different"):
        open_store(plugged(tmp_path), url)  # a worker: never
    fixed = open_store(plugged(tmp_path), url, plugin_fix=True)
    plugin = tmp_path / "norm.py"
    (note,) = fixed.notes
    assert f"the plugin {plugin} changed since the study ran; the variants that use it (plugged)" in note
    attrs = fixed.study.user_attrs
    assert attrs["identity"] == plugged(tmp_path).identity()
    assert attrs["spec"]["plugin_sources"] == plugged(tmp_path).plugin_sources()
    assert open_store(plugged(tmp_path), url).notes == []  # a worker now opens it as it is
    with pytest.raises(ConfigError, match="changed while this worker ran"):
        store.claim()  # opened before the fix: its code is not the study's


@pytest.mark.parametrize("state", [TrialState.COMPLETE, TrialState.RUNNING], ids=["complete", "running"])
def test_a_plugin_a_complete_or_running_cell_ran_cannot_change(tmp_path: Path, state: TrialState) -> None:
    url = sqlite_url(tmp_path / "study.db")
    store = open_store(plugged(tmp_path), url, create=True, plugin_fix=True)
    store.ensure_cells()
    finish(store, "plugged", state)
    edit(tmp_path, EDITED)
    with pytest.raises(ConfigError) as refused:
        open_store(plugged(tmp_path), url, plugin_fix=True)
    message = str(refused.value)
    assert (
        f"complete or running cells of plugged (1) ran the old code of the plugin {tmp_path / 'norm.py'}"
        in message
    )
    assert "another --runs folder" in message
