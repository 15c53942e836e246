"""Off a terminal the driver prints one line each time work finishes, not a redrawn bar."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ablate.sweeps.drivers import loop


class Handle:
    def __init__(self, polls_running: int) -> None:
        self.left = polls_running

    def running(self) -> bool:
        self.left -= 1
        return self.left >= 0


def test_one_line_per_change_of_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(loop, "console", Console(file=out, soft_wrap=True))
    monkeypatch.setattr(loop.time, "sleep", lambda _: None)
    counts = iter([(0, "2 running"), (0, "2 running"), (1, "2 running"), (3, "0 running"), (3, "0 running")])
    loop._watch_lines([Handle(3)], lambda: next(counts), "tiny", 3)
    lines = out.getvalue().splitlines()
    assert [line.split(", ")[0] for line in lines] == ["tiny: 0/3 done", "tiny: 1/3 done", "tiny: 3/3 done"]
    assert "━" not in out.getvalue()  # no bar characters in a log
