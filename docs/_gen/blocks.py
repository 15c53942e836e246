"""The generated blocks of the docs' markdown pages, and the one way to rewrite them.

A block is ``<!-- TAG -->`` (or ``<!-- TAG:NAME -->``, several of one tag in a page), a newline,
the generated body, then ``<!-- /TAG -->``; a generator replaces the body and nothing outside
the markers. The result tables (``table:<preset>``, readme_tables.py) and the calibration tables
(``calibration``, calibration.py) are such blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

from ablate.files import atomic_write

REPO = Path(__file__).resolve().parents[2]


class DocsError(Exception):
    """A docs generator's user error: missing inputs or page markers (exit code 2, one message)."""


def pattern(tag: str) -> re.Pattern[str]:
    """The blocks of ``tag``: groups ``open``, ``name`` (None for an unnamed block), ``body``, ``close``."""
    return re.compile(
        rf"(?P<open><!-- {re.escape(tag)}(?::(?P<name>[\w.-]+))? -->\n)(?P<body>.*?)(?P<close><!-- /{re.escape(tag)} -->)",
        re.DOTALL,
    )


def blocks(text: str, tag: str) -> dict[str, str]:
    """Name ("" for an unnamed block) -> the body between its markers, for every block of ``tag``."""
    return {m["name"] or "": m["body"] for m in pattern(tag).finditer(text)}


def marker(tag: str, name: str = "") -> str:
    return f"<!-- {tag}{':' + name if name else ''} -->"


def replace_block(text: str, tag: str, body: str, name: str = "", page: str = "the page") -> str:
    """``text`` with the body of its block ``tag`` (``name``) replaced by ``body``; a DocsError
    naming ``page`` when the block is not there."""
    if name not in blocks(text, tag):
        raise DocsError(f"{page} has no block {marker(tag, name)} ... <!-- /{tag} -->")
    return pattern(tag).sub(
        lambda m: m["open"] + body + m["close"] if (m["name"] or "") == name else m[0], text
    )


def shown(path: Path) -> Path:
    """``path`` relative to the repository when it is inside it (for messages)."""
    full = Path(path).resolve()
    return full.relative_to(REPO) if full.is_relative_to(REPO) else Path(path)


def write_block(page: Path, tag: str, body: str, name: str = "") -> bool:
    """Replace the block in the file ``page``, written (atomically) only when it changes; True
    when it changed."""
    old = Path(page).read_text(encoding="utf-8")
    new = replace_block(old, tag, body, name, str(shown(page)))
    if new != old:
        atomic_write(page, new)
    return new != old
