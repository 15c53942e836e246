"""Quick grids (experiments/specs/quick_grid.py): a grid is counted before it is expanded, and one
above the cap (MAX_VARIANTS variants or MAX_CELLS cells) is refused, naming its size and the way
on (``--yes``), at once and with or without --dry-run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ablate.cli.parser import build_parser, main
from ablate.errors import ConfigError
from ablate.experiments.specs import quick_grid as qg
from tests.helpers.configs import TINY_YAML


def lists(keys: int, values: int) -> dict[str, list[str]]:
    return {f"model.k{i}": [str(v) for v in range(values)] for i in range(keys)}


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "base.yaml").write_text(TINY_YAML)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "base.yaml"


def test_the_size_is_counted_without_expanding(monkeypatch: pytest.MonkeyPatch, config: Path) -> None:
    """Six keys of ten values: a million variants, 26 seeds each by default (Holm over 999,999
    comparisons), counted, and refused before a single combination is made."""
    assert qg.grid_size(lists(6, 10), None) == (10**6, 26 * 10**6)
    assert qg.grid_size(lists(3, 10), None) == (1_000, 16_000)  # the 16 seeds
    assert qg.grid_size(lists(2, 2), 5) == (4, 20)

    def expand(*_: object) -> None:
        raise AssertionError("expanded")

    monkeypatch.setattr(qg.itertools, "product", expand)
    with pytest.raises(
        ConfigError, match=r"1,000,000 variants \(10 x 10 x 10 x 10 x 10 x 10 values of 6 keys"
    ):
        qg.quick_spec(config, lists(6, 10), None)


@pytest.mark.parametrize(
    ("grid", "seeds", "refused"),
    [
        (lists(4, 4), 7, False),  # 256 variants x 7 = 1,792 cells: at the variant cap
        ({"model.a": [str(v) for v in range(257)]}, 1, True),  # 257 variants
        (lists(1, 2), 1000, False),  # 2,000 cells: at the cell cap
        (lists(1, 2), 1001, True),  # 2,002 cells
    ],
)
def test_the_cap_is_on_variants_and_on_cells(config: Path, grid, seeds: int, refused: bool) -> None:
    if refused:
        with pytest.raises(ConfigError, match=r"add --yes to run it as it is"):
            qg.check_size(grid, seeds, confirmed=False)
    else:
        qg.check_size(grid, seeds, confirmed=False)
    qg.check_size(grid, seeds, confirmed=True)  # confirmed: any size


def test_a_confirmed_grid_above_the_cap_is_built(config: Path) -> None:
    spec = qg.load_sweep(
        str(config), ["model.d_ff=" + ",".join(str(8 + v) for v in range(300))], seeds=1, confirmed=True
    )
    assert len(spec.variants) == 300 and len(spec.cells()) == 300


@pytest.mark.parametrize("dry_run", [["--dry-run"], []], ids=["dry-run", "run"])
def test_the_cli_refuses_a_huge_grid_at_once_naming_its_size(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dry_run: list[str]
) -> None:
    """The issue's two cases: 3 keys x 10 values (16,000 cells, accepted without a word) and 6 keys
    x 10 values (stayed silent until killed, memory growing): exit 2 in well under a second."""
    import ablate.cli.commands

    def ran(*_: object) -> None:
        raise AssertionError("the grid ran")

    monkeypatch.setattr(ablate.cli.commands, "run_grid", ran)
    # Ten valid values of each key: the grid is refused for its size, not for a value.
    values = {
        "model.d_ff": [str(8 + v) for v in range(10)],
        "optim.lr": [f"0.00{v + 1}" for v in range(9)] + ["0.01"],
        "data.batch_size": [str(v + 1) for v in range(10)],
        "trainer.max_steps": [str(v + 1) for v in range(10)],
        "model.dropout": [f"0.{v}" for v in range(10)],
        "trainer.log_every": [str(v + 1) for v in range(10)],
    }
    cases = (
        (3, "1,000 variants (10 x 10 x 10 values of 3 keys) x 16 seeds = 16,000 cells"),
        (6, "1,000,000 variants"),
    )
    for n, size in cases:
        grid = [f"{k}={','.join(v)}" for k, v in list(values.items())[:n]]
        start = time.perf_counter()
        assert main(["sweep", str(config), *grid, *dry_run, "--no-wandb"]) == 2
        assert time.perf_counter() - start < 5
        err = " ".join(capsys.readouterr().err.split())
        assert size in err and "a quick grid runs without --yes up to 256 variants and 2,000 cells" in err
    assert sorted(p.name for p in config.parent.iterdir()) == ["base.yaml"]  # nothing written


def test_sweep_takes_yes_and_says_what_it_is_for() -> None:
    parser = build_parser()
    assert parser.parse_args(["sweep", "c.yaml", "--yes"]).yes is True
    assert parser.parse_args(["sweep", "c.yaml"]).yes is False
    sweep = next(a for a in parser._subparsers._group_actions[0].choices["sweep"]._actions if a.dest == "yes")
    assert "256 variants or 2,000 cells" in sweep.help


def test_yes_runs_a_grid_above_the_cap(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = "model.d_ff=" + ",".join(str(8 + v) for v in range(300))
    assert main(["sweep", str(config), grid, "--seeds", "1", "--dry-run", "--yes"]) == 0
    assert "300 cells (300 variants x 1 seeds)" in capsys.readouterr().err
