"""The verdicts the README quotes under ``<!-- NAME-verdict -->``, checked against what a run printed.

A quote names its CPU: Δ and its interval come from float training and may move in their last
digits on another CPU model, so they are compared within ``DELTA_TOL``; everything else (the
verdict's kind, the confidence, p, p Holm, the seed count, the words) must be what was printed.
"""

from __future__ import annotations

import re

from tests.helpers.paths import REPO

DELTA_TOL = 0.03  # a few test examples of 128 on the quickstart's split
_DELTA = re.compile(r"Δ ([+-]?\d+\.\d+) \[([+-]?\d+\.\d+), ([+-]?\d+\.\d+)\]")


def quoted_verdicts(marker: str) -> list[str]:
    """The block-quoted lines under ``<!-- marker -->`` in README.md, one verdict each."""
    readme = (REPO / "README.md").read_text()
    head = f"<!-- {marker} -->\n"
    assert head in readme, f"README.md lost its <!-- {marker} --> quote"
    quote = []
    for line in readme.split(head, 1)[1].splitlines():
        if not line.startswith(">"):
            break
        if line.strip("> "):
            quote.append(line[1:].strip())
    assert quote, f"<!-- {marker} --> quotes nothing"
    return quote


def assert_printed(quoted: list[str], printed: str) -> None:
    """Each quoted verdict is a line of ``printed`` (Δ and its interval within DELTA_TOL)."""
    lines = [line.strip() for line in printed.splitlines()]
    for verdict in quoted:
        shape = _DELTA.sub("Δ #", verdict)
        same = [line for line in lines if _DELTA.sub("Δ #", line) == shape]
        assert same, f"the README quotes\n  {verdict}\nbut no printed line has that shape:\n{printed[-3000:]}"
        want = [float(x) for x in _DELTA.search(verdict).groups()]
        got = [float(x) for x in _DELTA.search(same[0]).groups()]
        assert all(abs(w - g) <= DELTA_TOL for w, g in zip(want, got, strict=True)), (verdict, same[0])
