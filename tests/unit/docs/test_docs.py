"""The shipped configs, presets, README and docs site stay in step with the code."""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ablate.cli.parser import build_parser
from ablate.experiments.schema.config import SECTIONS, TrainConfig
from ablate.experiments.specs.loading import load_config
from ablate.experiments.specs.presets import PRESETS, load_preset
from ablate.experiments.specs.spec_file import load_spec
from docs._gen import reference
from tests.helpers.paths import REPO

DOCS = REPO / "docs"
MARKERS = {
    "quickstart": "<!-- quickstart -->\n```bash\n",
    "python-example": "<!-- python-example -->\n```python\n",
}


def readme_block(name: str, text: str | None = None) -> str:
    """The code of a marked block of the README (or of ``text``): ``<!-- NAME -->`` then a fence."""
    text = (REPO / "README.md").read_text() if text is None else text
    assert MARKERS[name] in text, f"README.md lost its {MARKERS[name].splitlines()[0]} block"
    return text.split(MARKERS[name], 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("page", sorted(reference.RENDERERS))
def test_reference_pages_are_what_the_code_renders(page: str) -> None:
    path, render = reference.RENDERERS[page]
    assert path.is_file() and path.read_text() == render(), (
        f"{path.relative_to(REPO)} is stale: run `python -m docs._gen.reference --write`"
    )


@pytest.mark.parametrize("cls", [*SECTIONS.values(), TrainConfig], ids=lambda c: c.__name__)
def test_every_config_field_has_one_doc_line(cls: type) -> None:
    """The config reference reads each class's DOCS: a field without a line, or a line without a
    field, fails here (add the line beside the field's RANGES entry)."""
    fields = {f.name for f in dataclasses.fields(cls)}
    docs = getattr(cls, "DOCS", {})
    assert not fields - set(docs), f"{cls.__name__}.DOCS lacks {sorted(fields - set(docs))}"
    assert not set(docs) - fields, f"{cls.__name__}.DOCS names no field: {sorted(set(docs) - fields)}"
    empty = [k for k, v in docs.items() if not isinstance(v, str) or not v.strip() or "\n" in v]
    assert not empty, f"{cls.__name__}.DOCS: not a one-line meaning: {empty}"


def test_every_command_line_argument_has_help() -> None:
    """The command-line reference reads the parser: a subcommand, positional or option without
    help text fails here (give it ``help=`` in cli/parser.py)."""
    parser = build_parser()
    lacking = []
    for name, summary, sub in reference.subcommands(parser):
        if not summary.strip():
            lacking.append(name)
        for action in reference.arguments(sub):
            if not reference.help_of(action).strip():
                lacking.append(f"{name} {action.option_strings or action.dest}")
    top = [
        a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    lacking += [str(a.option_strings) for a in top if not (a.help or "").strip()]
    assert not lacking, f"no help text: {lacking}"


def test_the_readme_is_a_page_whose_links_resolve() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300, "README.md is a page, not the manual: move text into docs/pages/"
    links = re.findall(r"\]\(((?!https?://)[^)#\s]+)(?:#[^)]*)?\)", readme)
    assert any(link.startswith("docs/pages/") for link in links)
    broken = [link for link in links if not (REPO / link).exists()]
    assert not broken, f"README.md links to missing files: {broken}"


def test_the_docs_first_sweep_is_the_readme_quickstart() -> None:
    page = (DOCS / "pages" / "get-started" / "first-sweep.md").read_text()
    assert readme_block("quickstart", page) == readme_block("quickstart"), (
        "docs/pages/get-started/first-sweep.md and README.md differ in the <!-- quickstart --> block"
    )


@pytest.mark.parametrize(
    "path", sorted((REPO / "experiments" / "configs").glob("*.yaml")), ids=lambda p: p.name
)
def test_example_configs_load(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.trainer.max_steps >= 100


@pytest.mark.parametrize("name", sorted(p.stem for p in PRESETS.glob("*.yaml")))
@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_presets_validate(name: str, profile: str) -> None:
    preset = load_preset(name)
    assert preset["description"]
    for rel in preset["experiments"]:
        spec = load_spec(REPO / "experiments" / "configs" / rel, profile=profile)
        assert len(spec.seeds) >= 5 and spec.baseline == "baseline"
        # Single-head vs multi-head keeps d_model fixed.
        widths = {spec.cell_config(v, 0).model.d_model for v in spec.variants}
        assert len(widths) == 1


def test_remove_pe_single_head_covers_three_data_sets() -> None:
    specs = [
        load_spec(REPO / "experiments" / "configs" / p, profile="cpu")
        for p in load_preset("remove-pe-single-head")["experiments"]
    ]
    assert [s.base.data.task for s in specs] == ["order", "lookup", "text"]
    for s in specs:
        assert s.variants == {
            "baseline": {},
            "no_pe": {"model.pe": "none"},
            "single_head": {"model.n_heads": 1},
        }


def test_import_ablate_is_cheap_and_exports_the_api() -> None:

    code = "import sys, ablate; print('torch' in sys.modules); print(sorted(ablate.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lazy, names = out.splitlines()
    assert lazy == "False"  # nothing heavy on `import ablate`
    assert "sweep" in names and "run_trial" in names and "load_summary" in names


def test_the_quoted_verdicts_are_checked_word_for_word() -> None:
    """The checker the wheel and docs tests use: on the quote's numerics a quote passes against
    itself only, any changed number fails; on another machine's a changed decimal passes, and a
    changed seed count or verdict fails."""
    from tests.helpers.readme import assert_printed, quoted_verdicts, run_numerics

    found = quoted_verdicts("quickstart-verdict")
    (quote,) = found.verdicts
    assert quote.startswith("no_pe is worse than baseline") and quote.endswith("6 seeds.")
    assert "[6/167/8]" in found.numerics and len(quoted_verdicts("python-example-verdict").verdicts) == 2
    here, other = found.numerics, found.numerics.replace("[6/167/8]", "[25/17/1]")
    assert run_numerics({"numerics": [{"setting": here, "cells": 12}]}) == here
    nudged = quote.replace("Δ -0.289", "Δ -0.290").replace("p = 0.0312", "p = 0.0625")
    assert nudged != quote
    for numerics in (here, other):
        assert_printed(found, f"progress\n{quote}\ntable", numerics)
        for wrong in (quote.replace("6 seeds", "7 seeds"), quote.replace("is worse than", "is better than")):
            with pytest.raises(AssertionError):
                assert_printed(found, wrong, numerics)
    assert_printed(found, nudged, other)  # another CPU may move a decimal
    with pytest.raises(AssertionError):
        assert_printed(found, nudged, here)  # the same one may not
