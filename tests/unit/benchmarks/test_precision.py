"""precision: how far another precision moves each metric and whether each decision holds; the
step benchmark's bf16 step is the one Lightning's ``bf16-mixed`` runs on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ablate.benchmarks import precision, step
from ablate.sweeps.report.files import results_csv
from tests.helpers.rows import cell_rows


def _run(parent: Path, variants: dict, values: dict[str, list[float]], direction: str = "maximize") -> None:
    run = parent / "tiny"
    run.mkdir(parents=True)
    summary = {"metric": "test/acc", "direction": direction, "baseline": "baseline", "variants": variants}
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "results.csv").write_text(results_csv(cell_rows(values)))


BASE = {"delta": 0.0, "p_holm": None}


def test_differences_per_metric_and_decisions_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(
        tmp_path / "a",
        {"baseline": BASE, "no_pe": {"delta": -0.3, "p_holm": 0.03}},
        {"baseline": [0.9, 0.8], "no_pe": [0.5, 0.5]},
    )
    _run(
        tmp_path / "b",
        {"baseline": BASE, "no_pe": {"delta": -0.2, "p_holm": 0.04}},
        {"baseline": [0.9, 0.7], "no_pe": [0.5, 0.55]},
    )
    r = precision.compare(tmp_path / "a", tmp_path / "b")["tiny"]
    acc = r["metrics"]["test/acc"]
    assert r["cells"] == 4 and acc["identical"] == 2 and acc["max_abs"] == pytest.approx(0.1)
    assert acc["median_abs"] == pytest.approx(0.025) and acc["median"] == pytest.approx(0.0)
    assert r["comparisons"]["no_pe"] == {
        "fp32": "worse",
        "other": "worse",
        "agree": True,
        "p_holm": [0.03, 0.04],
    }
    assert precision.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "no_pe vs baseline (test/acc): fp32 worse, other worse (agree" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("direction", "delta", "p", "said"),
    [
        ("maximize", 0.1, 0.01, "better"),
        ("minimize", 0.1, 0.01, "worse"),
        ("maximize", -0.1, 0.2, "not distinguishable"),
    ],
)
def test_a_decision_follows_the_direction_and_alpha(
    direction: str, delta: float, p: float, said: str
) -> None:
    assert precision.decision({"delta": delta, "p_holm": p, "direction": direction}) == said


def test_a_decision_that_moves_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(
        tmp_path / "a",
        {"baseline": BASE, "no_pe": {"delta": -0.3, "p_holm": 0.03}},
        {"baseline": [0.9], "no_pe": [0.5]},
    )
    _run(
        tmp_path / "b",
        {"baseline": BASE, "no_pe": {"delta": -0.3, "p_holm": 0.06}},
        {"baseline": [0.9], "no_pe": [0.5]},
    )
    assert precision.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "fp32 worse, other not distinguishable (DIFFER" in capsys.readouterr().out


def test_the_bf16_step_is_lightnings_cpu_autocast() -> None:
    """The benchmark's context gives the logits Lightning's MixedPrecision('bf16-mixed', 'cpu')
    forward context gives, bit for bit, in bf16; fp32 has no autocast."""
    from lightning.pytorch.plugins.precision import MixedPrecision

    torch.manual_seed(0)
    layer, x = torch.nn.Linear(8, 4), torch.randn(3, 8)
    with step._autocast("bf16-mixed"):
        ours = layer(x)
    with MixedPrecision("bf16-mixed", "cpu").forward_context():
        theirs = layer(x)
    assert ours.dtype == torch.bfloat16 and torch.equal(ours, theirs)
    with step._autocast("32-true"):
        assert layer(x).dtype == torch.float32
