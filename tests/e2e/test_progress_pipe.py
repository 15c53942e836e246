"""``ablate sweep ... | cat``: off a terminal the driver prints a progress line each time a cell
finishes, flushed at once (sweeps/drivers/loop.py ``_watch_lines``): a reader of the pipe sees
"k/N done" within about a second of the k-th cell's completion, also where FORCE_COLOR makes rich
call the pipe a terminal (where a redrawn bar would send no line until the end)."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from tests.helpers.configs import write_spec
from tests.helpers.paths import ablate_cmd
from tests.helpers.sweeps import trials_by_cell

# The driver reads the count every 0.5 s (loop.LINE_POLL_S): a line comes 0.1-0.5 s after its
# cell here; the rest of the second is a poll's own time and a loaded machine's scheduling.
LATE_S = 1.0
DONE = re.compile(r"^tiny: (\d+)/(\d+) done, ")
COLOR = re.compile(r"\x1b\[[0-9;]*m")  # FORCE_COLOR asks for colours: rich colours the numbers


@pytest.mark.multiprocess
@pytest.mark.parametrize("force_color", [False, True])
def test_each_finished_cell_is_a_line_in_the_pipe_within_a_second(tmp_path: Path, force_color: bool) -> None:
    write_spec(tmp_path, seeds=2, heatmap_seeds=[0])  # 2 variants x 2 seeds, one after another
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env |= {"FORCE_COLOR": "1"} if force_color else {}
    cmd = ablate_cmd("sweep", "tiny.yaml", "--runs", "runs", "--no-wandb", "--workers", "1")
    proc = subprocess.Popen(
        [*cmd, "--heartbeat", "1", "--grace", "3"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the progress lines are stderr's: `2>&1 | cat`
        text=True,
        bufsize=1,
    )
    arrived: list[tuple[float, str]] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # as the pipe delivers them
            arrived.append((time.time(), COLOR.sub("", line.rstrip("\n"))))
        assert proc.wait(timeout=300) == 0, "\n".join(text for _, text in arrived)
    finally:
        proc.kill()
    counts = [(t, int(m.group(1))) for t, text in arrived if (m := DONE.match(text))]
    output = "\n".join(text for _, text in arrived)
    assert [k for _, k in counts] == sorted({k for _, k in counts}), output  # one line per count
    assert counts[0][1] == 0 and counts[-1][1] == 4, output

    finished = sorted(
        t.datetime_complete.timestamp()
        for ts in trials_by_cell(tmp_path / "runs" / "tiny").values()
        for t in ts
        if t.state == TrialState.COMPLETE
    )
    assert len(finished) == 4
    for k, done_at in enumerate(finished, start=1):
        seen_at = next(t for t, count in counts if count >= k)  # the first line that shows it
        assert seen_at - done_at <= LATE_S, (
            f"cell {k}/4 finished at {done_at:.2f}, shown at {seen_at:.2f}\n{output}"
        )
