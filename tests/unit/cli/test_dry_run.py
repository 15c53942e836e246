"""``ablate sweep --dry-run``: the cells and each variant's overrides, and nothing run or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.cli.parser import main
from tests.helpers.configs import write_spec


def test_dry_run_prints_the_cells_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, seeds=3)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["sweep", str(spec), "--dry-run", "model.d_model=32"]) == 0
    out, err = capsys.readouterr()
    assert "no_pe" in out and "model.pe=none" in out and "(the baseline)" in out
    assert "6 cells (2 variants x 3 seeds)" in err and "nothing was run or written" in err
    assert "3 seeds per variant cannot reach p Holm <= 0.05" in err  # 1 comparison needs 6
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no runs/, no study, no cache


def test_a_comma_list_on_a_train_config_is_a_quick_grid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's own command: two head counts x 2 seeds = 4 cells, the first value the baseline."""
    monkeypatch.chdir(tmp_path)
    config = Path(__file__).resolve().parents[3] / "experiments" / "configs" / "order.yaml"
    assert main(["sweep", str(config), "model.n_heads=1,2", "--seeds", "2", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "4 cells (2 variants x 2 seeds)" in err and "runs/order-n_heads" in err
    rows = [line for line in out.splitlines() if "n_heads-" in line]
    assert len(rows) == 2 and "(the baseline)" in rows[0] and "model.n_heads=2" in rows[1]
    assert list(tmp_path.iterdir()) == []


def test_print_config_prints_the_resolved_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    spec = write_spec(tmp_path, seeds=3)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(spec), "--print-config", "--seeds", "4", "model.d_model=32"]) == 0
    out, err = capsys.readouterr()
    printed = yaml.safe_load(out)
    assert printed["seeds"] == [0, 1, 2, 3] and printed["base"]["model"]["d_model"] == 32
    assert printed["variants"] == {"baseline": {}, "no_pe": {"model.pe": "none"}}
    assert "8 cells would run" in err and "nothing was run or written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tiny.yaml", "model.pe=none,rope"], "comma list makes a quick grid from a train config"),
        (["base.yaml"], "is a train config, not an experiment spec"),
        (["base.yaml", "model.n_heads=1,2", "model.n_heads=4"], "given both as a list and as one value"),
        (["base.yaml", "seed=0,1"], "give the number of seeds with --seeds N"),
        (["base.yaml", "model.n_heads=1,1"], "a value is listed twice"),
        (["base.yaml", "model.n_heads=1,2", "--profile", "cpu"], "profiles belong to an experiment spec"),
        (["base.yaml", "model.n_heads=1,2", "--seeds", "0"], "seeds=0 is out of range; valid: [1, 10000]"),
    ],
)
def test_a_grid_that_cannot_run_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args, message
) -> None:
    from tests.helpers.configs import TINY_YAML

    write_spec(tmp_path)
    (tmp_path / "base.yaml").write_text(TINY_YAML)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", *args, "--dry-run"]) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.yaml", "tiny.yaml"]


def test_train_refuses_a_comma_list_and_names_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.configs import TINY_YAML

    (tmp_path / "base.yaml").write_text(TINY_YAML)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "base.yaml", "model.n_heads=1,2"]) == 2
    assert "ablate sweep base.yaml model.n_heads=1,2" in " ".join(capsys.readouterr().err.split())
