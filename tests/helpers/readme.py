"""The verdicts the README quotes under ``<!-- NAME-verdict numerics="KEY" -->``, checked against
what a run printed.

A quote names the numerics key (experiments/schema/machine.py) of the run that printed it. A run
with the same key computes the same floats, so it must print the quote exactly. On another CPU
float training may move a cell, and with it the numbers of a comparison (on an AMD EPYC 25/17
the README's single_head line of the Python example reads p = 0.9375, not 1.0000); there every
word and whole number (the verdict's kind, the variants, the seed count) must be what was printed,
and only the decimals (Δ, its interval, the confidence, p, p Holm) may differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.helpers.paths import REPO

_DECIMAL = re.compile(r"[+-]?\d+\.\d+")
_HEAD = re.compile(r'<!-- (?P<marker>[\w-]+) numerics="(?P<numerics>[^"]+)" -->\n')


@dataclass(frozen=True)
class Quote:
    verdicts: list[str]  # one line each
    numerics: str  # the numerics key of the run that printed them


def quoted_verdicts(marker: str) -> Quote:
    """The block-quoted lines under ``<!-- marker numerics="..." -->`` in README.md."""
    readme = (REPO / "README.md").read_text()
    heads = [m for m in _HEAD.finditer(readme) if m["marker"] == marker]
    assert len(heads) == 1, f'README.md must have one <!-- {marker} numerics="..." --> quote'
    quote = []
    for line in readme[heads[0].end() :].splitlines():
        if not line.startswith(">"):
            break
        if line.strip("> "):
            quote.append(line[1:].strip())
    assert quote, f"<!-- {marker} --> quotes nothing"
    return Quote(quote, heads[0]["numerics"])


def run_numerics(summary: dict[str, Any]) -> str:
    """The one numerics key of a run's cells (summary.json's ``numerics``)."""
    (setting,) = {entry["setting"] for entry in summary["numerics"]}
    return setting


def assert_printed(quote: Quote, printed: str, numerics: str) -> None:
    """Each quoted verdict is a line of ``printed``: exactly, when the run's ``numerics`` key is
    the quote's; else the same line up to its decimals."""
    lines = [line.strip() for line in printed.splitlines()]
    exact = numerics == quote.numerics
    how = "exactly" if exact else f"up to its decimals (printed on {numerics}, quoted from {quote.numerics})"

    def shape(line: str) -> str:
        return line if exact else _DECIMAL.sub("#", line)

    for verdict in quote.verdicts:
        assert any(shape(line) == shape(verdict) for line in lines), (
            f"the README quotes\n  {verdict}\nbut no printed line is that {how}:\n{printed[-3000:]}"
        )
