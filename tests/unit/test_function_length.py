"""No function over 80 lines: a function that long does several jobs (STYLE.md). A declarative
table is data, not a function, and has no limit."""

from __future__ import annotations

import ast

from tests.helpers.paths import REPO

LIMIT = 80
SOURCES = sorted(
    p
    for p in REPO.rglob("*.py")
    if not {".venv", "build", ".git", "runs", "wandb"} & set(p.relative_to(REPO).parts)
)


def long_functions(source: str) -> list[tuple[str, int]]:
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > LIMIT
    ]


def test_no_function_is_over_80_lines() -> None:
    found = {str(p.relative_to(REPO)): f for p in SOURCES if (f := long_functions(p.read_text()))}
    assert found == {}


def test_the_check_finds_a_long_function() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    assert long_functions(f"def long():\n{body}") == [("long", LIMIT + 1)]
    assert long_functions("class A:\n    def short(self):\n        return 1\n") == []
