"""The docs' generated blocks: one way to find and rewrite them (docs/_gen/blocks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs._gen import blocks
from tests.helpers.paths import REPO

NAMED = "intro\n<!-- table:p -->\nold\n<!-- /table -->\nprose\n<!-- table:q -->\nkeep\n<!-- /table -->\n"
UNNAMED = "# Page\n\n<!-- calibration -->\nold\n| a |\n<!-- /calibration -->\nafter\n"


def test_blocks_are_found_by_tag_and_name() -> None:
    assert blocks.blocks(NAMED, "table") == {"p": "old\n", "q": "keep\n"}
    assert blocks.blocks(UNNAMED, "calibration") == {"": "old\n| a |\n"}
    assert blocks.blocks(UNNAMED, "table") == {} and blocks.blocks(NAMED, "calibration") == {}


def test_replace_changes_only_the_named_body() -> None:
    new = blocks.replace_block(NAMED, "table", "new\n", "p")
    assert new == NAMED.replace("old", "new")
    assert (
        blocks.replace_block(UNNAMED, "calibration", "x\n")
        == "# Page\n\n<!-- calibration -->\nx\n<!-- /calibration -->\nafter\n"
    )
    body = "a \\1 \\g<name> $0\n"  # a body is text, never a regex template
    assert blocks.blocks(blocks.replace_block(UNNAMED, "calibration", body), "calibration") == {"": body}


def test_a_missing_block_is_a_docs_error_naming_the_page_and_the_markers() -> None:
    with pytest.raises(
        blocks.DocsError, match=r"README.md has no block <!-- table:r --> \.\.\. <!-- /table -->"
    ):
        blocks.replace_block(NAMED, "table", "x", "r", page="README.md")
    with pytest.raises(blocks.DocsError, match="no block <!-- calibration -->"):
        blocks.replace_block(NAMED, "calibration", "x")


def test_write_block_writes_only_a_change(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(UNNAMED)
    assert blocks.write_block(page, "calibration", "new\n") is True
    assert page.read_text() == UNNAMED.replace("old\n| a |\n", "new\n")
    mtime = page.stat().st_mtime_ns
    assert blocks.write_block(page, "calibration", "new\n") is False and page.stat().st_mtime_ns == mtime
    with pytest.raises(blocks.DocsError, match=f"{page} has no block"):
        blocks.write_block(page, "table", "x", "p")


def test_shown_names_a_repository_file_from_the_root() -> None:
    assert blocks.shown(REPO / "README.md") == Path("README.md")
    assert blocks.shown(Path("/elsewhere/x.md")) == Path("/elsewhere/x.md")
