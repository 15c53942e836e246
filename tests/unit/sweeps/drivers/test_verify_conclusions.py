"""``ablate verify --conclusions`` (sweeps/drivers/verify_conclusions.py): a recorded study and its
rerun compared per comparison. A rerun equal to the record reproduces; a record doctored so that
its verdict flips does not, names the cells that moved and exits 1; the rerun itself resumes the
study in ``--runs`` (nothing trained twice); fresh seeds share no cell; bad seeds are refused."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from ablate.errors import ConfigError
from ablate.sweeps.drivers import verify_conclusions as vc
from ablate.sweeps.stats.rows import CellRow
from tests.helpers.configs import TINY_BASE
from tests.helpers.sweeps import finished_run

SEEDS = 7  # the fewest at which the signed-rank test can decide (p Holm 2/2^7 = 0.016)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-cell sweep run folder (baseline and no_pe, seed 0): trained once per module."""
    return finished_run(tmp_path_factory.mktemp("conclusions"), TINY_BASE, seeds=1)


def _rows(template: list[CellRow], acc: dict[str, list[float]]) -> list[CellRow]:
    """SEEDS cells per variant, each a copy of that variant's real cell with test/acc set."""
    by_variant = {r.variant: r for r in template}
    return [
        dataclasses.replace(
            by_variant[v], seed=s, metrics={**by_variant[v].metrics, "test/acc": values[s]}, trial=None
        )
        for v, values in acc.items()
        for s in range(SEEDS)
    ]


def _study(run_dir: Path, recorded: dict[str, list[float]], rerun: dict[str, list[float]]) -> vc.StudyCheck:
    rec = vc.read_recorded(run_dir, None)
    spec = dataclasses.replace(rec.spec, seeds=tuple(range(SEEDS)))
    rec = dataclasses.replace(rec, spec=spec, rerun=spec, rows=_rows(rec.rows, recorded))
    return vc.check_study(rec, run_dir, _rows(rec.rows, rerun))


WORSE = {"baseline": [0.9] * SEEDS, "no_pe": [0.5 + 0.01 * s for s in range(SEEDS)]}
SAME = {"baseline": [0.9] * SEEDS, "no_pe": [0.9 + (0.01 if s % 2 else -0.01) for s in range(SEEDS)]}


def test_an_identical_rerun_reproduces_every_conclusion(run_dir: Path) -> None:
    found = _study(run_dir, WORSE, WORSE)
    (c,) = found.conclusions
    assert c.name == "no_pe" and c.recorded.decision == c.rerun.decision == "worse"
    assert c.reproduced and found.reproduced and c.look_at == []
    acc = next(d for d in found.drift if d.metric == "test/acc")
    assert (acc.cells, acc.identical, acc.largest) == (2 * SEEDS, 2 * SEEDS, 0.0)
    assert found.identical_cells == 2 * SEEDS
    lines = vc.format_studies([found])
    assert "    reproduced" in lines and lines[-1] == "1 of 1 conclusion(s) reproduced"
    assert any(line.startswith(f"  cell drift: {2 * SEEDS} of {2 * SEEDS} cells") for line in lines)
    assert vc.exit_code([found]) == 0


def test_a_flipped_verdict_is_not_reproduced_and_names_the_cells(run_dir: Path) -> None:
    found = _study(run_dir, WORSE, SAME)  # recorded: no_pe worse; rerun: not distinguishable
    (c,) = found.conclusions
    assert (c.recorded.decides, c.rerun.decides) == ("worse", "undecided") and not c.reproduced
    # The cells that moved most, largest first: s1 by 0.40, s0 by 0.39, s3 by 0.38.
    assert c.look_at == [
        "no_pe/s1 test/acc 0.51 -> 0.91",
        "no_pe/s0 test/acc 0.5 -> 0.89",
        "no_pe/s3 test/acc 0.53 -> 0.91",
    ]
    acc = next(d for d in found.drift if d.metric == "test/acc")
    assert found.identical_cells == SEEDS  # the baseline's
    assert acc.identical == SEEDS and acc.largest == pytest.approx(0.40) and acc.worst == "no_pe/s1"
    lines = vc.format_studies([found])
    assert "    NOT REPRODUCED: recorded worse, rerun undecided" in lines
    assert lines[-1] == "0 of 1 conclusion(s) reproduced; not: tiny no_pe"
    assert vc.exit_code([found]) == 1


def test_the_other_direction_is_not_the_same_conclusion(run_dir: Path) -> None:
    better = {"baseline": [0.5] * SEEDS, "no_pe": [0.9] * SEEDS}
    worse = {"baseline": [0.9] * SEEDS, "no_pe": [0.5] * SEEDS}
    (c,) = _study(run_dir, better, worse).conclusions
    assert (c.recorded.decision, c.rerun.decision, c.reproduced) == ("better", "worse", False)


def test_two_undecided_verdicts_agree_whatever_their_reason(run_dir: Path) -> None:
    ceiling = {"baseline": [1.0] * SEEDS, "no_pe": [1.0] * SEEDS}  # the design cannot answer
    (c,) = _study(run_dir, ceiling, SAME).conclusions
    assert c.recorded.decision == "cannot answer" and c.rerun.decision == "not distinguishable"
    assert c.reproduced


def test_the_rerun_resumes_the_study_in_runs_and_reads_its_rows(run_dir: Path, tmp_path: Path) -> None:
    """The record is a copy; the rerun folder is the original study (every cell complete): the
    sweep resumes it, trains nothing, and both sides are the same cells."""
    copy = tmp_path / "tiny"
    shutil.copytree(run_dir, copy)
    before = (run_dir / "cells").stat().st_mtime_ns
    (found,) = vc.verify_conclusions([copy], runs=run_dir.parent)
    assert found.rerun == run_dir and found.rerun_cells == found.recorded_cells == 2
    assert all(d.identical == d.cells == 2 for d in found.drift) and found.reproduced
    assert (run_dir / "cells").stat().st_mtime_ns == before  # no cell ran again
    with pytest.raises(ConfigError, match="would be written into it"):
        vc.verify_conclusions([run_dir], runs=run_dir.parent)


def test_a_folder_of_run_folders_names_each(run_dir: Path) -> None:
    assert vc.targets([run_dir.parent]) == [run_dir]
    assert vc.targets([run_dir]) == [run_dir]


@pytest.mark.parametrize(("text", "seeds"), [("3", (0, 1, 2)), ("7-9", (7, 8, 9)), ("4,2", (4, 2))])
def test_seeds_are_a_count_a_range_or_a_list(text: str, seeds: tuple[int, ...]) -> None:
    assert vc.parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["x", "9-7", "1,1", "0"])
def test_bad_seeds_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--seeds"):
        vc.parse_seeds(text)


def test_a_relative_data_path_is_read_from_here(run_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """A record rewritten to travel (``data.source: ../shared/...``; here the cache folder, a path key too) reruns the study a sweep from
    the current folder would: the path made absolute against it."""
    rec = vc.read_recorded(run_dir, None)
    spec = dataclasses.replace(rec.spec, base=rec.spec.base.override({"data.cache_dir": "data/x"}))
    monkeypatch.chdir(tmp_path)
    assert vc.here(spec).base.data.cache_dir == str(tmp_path / "data" / "x")
    assert vc.here(rec.spec) is rec.spec  # nothing relative: unchanged


def test_cells_of_other_seeds_share_nothing(run_dir: Path) -> None:
    rec = vc.read_recorded(run_dir, None)
    other = [dataclasses.replace(r, seed=r.seed + 100) for r in rec.rows]
    assert vc.drift(rec.rows, other, rec.metrics)[0].cells == 0
    assert vc.look_at(rec.rows, other, ("no_pe", "baseline"), "test/acc")[0].startswith("no cell ran on both")
    with (run_dir / "results.csv").open(newline="") as f:
        assert {r["variant"] for r in csv.DictReader(f)} == {"baseline", "no_pe"}


def test_the_command_line_exits_0_1_and_2(run_dir: Path, tmp_path: Path, capsys) -> None:
    """``ablate verify --conclusions``: 0 when reproduced; 1 for a record whose verdict the rerun
    does not give (every baseline value doctored to 0: the record says no_pe is better; the
    rerun, the real cells of seed 0 (``--seeds 1``), cannot decide); 2 for several PATHs without --conclusions."""
    from ablate.cli.parser import main

    copy = tmp_path / "tiny"
    shutil.copytree(run_dir, copy)
    runs = str(run_dir.parent)
    assert main(["verify", str(copy), "--conclusions", "--runs", runs]) == 0
    assert "1 of 1 conclusion(s) reproduced" in capsys.readouterr().out
    results = copy / "results.csv"
    with results.open(newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0])
    extra = []
    for s in range(1, SEEDS):  # seeds 1..6 of both variants, no_pe far above the baseline
        for r in rows:
            extra.append({**r, "seed": str(s)})
    for r in rows + extra:
        r["test/acc"] = "0.0" if r["variant"] == "baseline" else "1.0"
    with results.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows + extra)
    recorded = json.loads((copy / "spec.json").read_text())
    (copy / "spec.json").write_text(json.dumps({**recorded, "seeds": list(range(SEEDS))}))
    assert main(["verify", str(copy), "--conclusions", "--runs", runs, "--seeds", "1"]) == 1
    out = capsys.readouterr().out
    assert "NOT REPRODUCED: recorded better, rerun undecided" in out and "      look at " in out
    assert main(["verify", str(copy), str(run_dir)]) == 2
    assert "one PATH" in capsys.readouterr().err
