"""One schema for the experiment spec (experiments/specs/spec.py): the file's keys, spec.json and
its reload all read ExperimentSpec's fields, and spec.json stays what committed results hold."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from ablate.errors import ConfigError
from ablate.experiments.schema.config import as_first_recorded
from ablate.experiments.specs import spec as sp
from ablate.experiments.specs.spec import ExperimentSpec, spec_from_resolved
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.drivers.adaptive import grow
from ablate.sweeps.drivers.search import tuned_spec
from tests.helpers.configs import TINY_BASE
from tests.helpers.paths import REPO

VARIANTS = {"baseline": {}, "no_pe": {"model.pe": "none"}}
RAW = {"name": "s", "base": TINY_BASE, "variants": VARIANTS, "seeds": 3}
SEARCH = {"space": {"optim.lr": {"low": 1e-4, "high": 1e-2, "log": True}}, "trials": 4, "pruner": "none"}
# The keys a spec file may hold: a new one is a new field (or a file-only key), added on purpose.
FILE_KEYS = {
    *("name", "description", "base", "overrides", "variants", "seeds", "seed_factors"),
    *("heatmap_seeds", "metric", "extra_metrics", "direction", "wandb_project", "tags"),
    *("profiles", "search", "plugins", "margin", "compare"),
}


def specs() -> dict[str, ExperimentSpec]:
    """A spec with each kind of field set: plain, labelled, searched (and tuned), adaptive (and
    grown), crossed seed factors."""
    labelled = {**RAW, "description": "d", "tags": ["a", 2], "wandb_project": "p", "overrides": {"seed": 1}}
    searched = spec_from_dict({**RAW, "search": SEARCH})
    best = {"optim.lr": 0.001}
    summary = {
        "metric": "val/acc",
        "variants": {v: {"best_params": best, "best_value": 0.5} for v in VARIANTS},
    }
    adaptive = spec_from_dict({**RAW, "seeds": {"min": 2, "max": 6, "step": 2}})
    factors = {k: v for k, v in RAW.items() if k != "seeds"} | {"seed_factors": {"init": 2, "data_order": 2}}
    return {
        "plain": spec_from_dict(RAW),
        "labelled": spec_from_dict(labelled, overrides=["trainer.max_steps=5"]),
        "searched": searched,
        "tuned": tuned_spec(searched, summary),
        "adaptive": adaptive,
        "grown": grow(adaptive, ["no_pe"]),
        "factors": spec_from_dict({**factors, "extra_metrics": ["val/acc"], "heatmap_seeds": [0, 3]}),
        "read": spec_from_dict(
            {**RAW, "variants": THREE, "compare": "all", "margin": {"default": 0.01, "a": 0.02}}
        ),
    }


THREE = {"baseline": {}, "a": {"model.pe": "none"}, "b": {"model.n_heads": 1}}


def test_margin_and_compare_are_read_and_name_their_comparisons() -> None:
    s = specs()["read"]
    assert s.compare == (("a", "b"),) and s.comparisons() == ["a", "b", "a vs b"]
    assert s.margins() == {"a": 0.02, "b": 0.01, "a vs b": 0.01}
    assert spec_from_dict({**RAW, "variants": THREE, "compare": ["b vs a"]}).compare == (("b", "a"),)
    assert (
        spec_from_dict(RAW).margins() == {}
        and spec_from_dict({**RAW, "margin": 0.5}).margin_for("no_pe") == 0.5
    )
    assert s.identity() == spec_from_dict({**RAW, "variants": THREE}).identity()  # a reading, not a result


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"compare": "some"}, "compare must be `all` or a list of pairs"),
        ({"compare": [["a", "a"]]}, "is not a pair of two different variants"),
        (
            {"compare": [["a", "baseline"]]},
            "(the baseline is compared with every variant already); choose from a, b",
        ),
        ({"compare": [["a", "c"]]}, "'c' is not a variant to compare; choose from a, b"),
        ({"compare": [["a", "b"], "b vs a"]}, "b and a are listed twice"),
        ({"margin": 0}, "margin default: 0 must be a number > 0"),
        ({"margin": "x"}, "must be a number > 0 (the smallest effect that matters"),
        ({"margin": {"c": 0.1}}, "margin: no comparison 'c'; choose from default, a, b"),
    ],
)
def test_bad_margin_or_compare_names_the_problem_and_the_choices(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        spec_from_dict({**RAW, "variants": THREE, **extra})


@pytest.mark.parametrize(
    "name", ["plain", "labelled", "searched", "tuned", "adaptive", "grown", "factors", "read"]
)
def test_spec_json_holds_every_field_in_field_order_and_reads_back(name: str) -> None:
    spec = specs()[name]
    data = spec.to_dict()
    assert list(data) == [f.name for f in dataclasses.fields(ExperimentSpec)]  # no plugins, no files
    text = json.dumps(data, indent=2, default=str)
    again = spec_from_resolved(json.loads(text))
    assert again == spec
    assert json.dumps(again.to_dict(), indent=2, default=str) == text


def test_the_file_keys_and_the_required_ones_come_from_the_fields() -> None:
    assert set(sp.SPEC_KEYS) == FILE_KEYS and len(sp.SPEC_KEYS) == len(FILE_KEYS)
    assert sp.REQUIRED_KEYS == ("name", "base", "variants")
    assert sp.DIRECTIONS == ("maximize", "minimize")
    for key in sp.REQUIRED_KEYS:
        with pytest.raises(ConfigError, match=f"the experiment spec needs '{key}'"):
            spec_from_dict({k: v for k, v in RAW.items() if k != key})
    with pytest.raises(ConfigError, match=r"unknown experiment key\(s\) \['colour'\]; valid: name, "):
        spec_from_dict({**RAW, "colour": "red"})


def test_a_spec_json_from_before_the_newer_fields_reads_their_defaults() -> None:
    data = specs()["plain"].to_dict()
    newer = [f.name for f in dataclasses.fields(ExperimentSpec) if f.metadata["newer"]]
    old = {k: v for k, v in data.items() if k not in newer}
    assert spec_from_resolved(old) == specs()["plain"]
    with pytest.raises(KeyError, match="metric"):  # a key every spec.json had is required
        spec_from_resolved({k: v for k, v in old.items() if k != "metric"})


COMMITTED = sorted(REPO.glob("results/*/*.spec.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_results_read_back_to_the_same_spec_json(path: Path) -> None:
    """``ablate verify`` reloads these: every key they hold comes back with the same value, in
    the same order (the base gains the config keys added since, at their defaults, and holds a
    renamed key under its new name: ``as_first_recorded`` gives the first names back to a spec
    recorded before the rename; one recorded after it holds the new names already)."""
    committed = json.loads(path.read_text())
    again = spec_from_resolved(committed).to_dict()
    assert [k for k in again if k in committed] == list(committed)
    assert {k: v for k, v in again.items() if k in committed and k != "base"} == {
        k: v for k, v in committed.items() if k != "base"
    }
    base = again["base"] if "block" in committed["base"]["model"] else as_first_recorded(again["base"])
    for section, values in committed["base"].items():
        assert values == base[section] or values.items() <= base[section].items()


def test_committed_results_are_there() -> None:
    assert len(COMMITTED) >= 10
