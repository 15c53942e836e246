"""The ablation grid: spec validation, exactly-once cells with several workers,
kill -9 and resume, heatmap archive, W&B offline runs, report."""

from __future__ import annotations

import pytest

from ablate.errors import ConfigError
from ablate.experiments.specs.spec_file import spec_from_dict
from tests.helpers.configs import TINY_BASE


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"variants": {"baseline": {}, "x": {"model.nope": 1}}}, "unknown config key 'model.nope'"),
        ({"variants": {"baseline": {}, "same": {"model.pe": "sinusoidal"}}}, "changes nothing"),
        ({"variants": {"a": {"model.pe": "none"}, "b": {"model.n_heads": 1}}}, "exactly one variant"),
        ({"variants": {"baseline": {}, "other": {}}}, "exactly one variant"),
        ({"variants": {"baseline": {}, "bad": {"model.n_heads": 3}}}, "not divisible"),
        ({"variants": {"baseline": {}, "s": {"seed": 3}}}, "sets 'seed'"),
        ({"heatmap_seeds": [9]}, "not among seeds"),
        ({"seeds": [1, 1]}, "lists a seed twice"),
        ({"seeds": 0}, "seeds=0 is out of range"),
        ({"direction": "up"}, "choose 'maximize' or 'minimize'"),
        ({"metric": "test/bogus"}, "metric"),
        ({"colour": "red"}, "unknown experiment key"),
        ({"extra_metrics": ["test_long/acc"]}, "needs data.long_test_factor"),
        ({"overrides": {"model.bogus": 1}}, "unknown config key"),
    ],
)
def test_spec_validation(change: dict, message: str) -> None:
    raw = {"name": "t", "base": TINY_BASE, "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}}}
    with pytest.raises(ConfigError, match=message):
        spec_from_dict({**raw, **change})


def test_spec_cells_and_overrides() -> None:
    raw = {
        "name": "t",
        "base": TINY_BASE,
        "variants": {"baseline": {}, "one": {"model.n_heads": 1}},
        "seeds": [3, 5],
    }
    spec = spec_from_dict(raw, overrides=["trainer.max_steps=7"])
    assert spec.cells() == [("baseline", 3), ("one", 3), ("baseline", 5), ("one", 5)]
    assert spec.baseline == "baseline" and spec.heatmap_seeds == (3,)
    cfg = spec.cell_config("one", 5)
    assert (cfg.model.n_heads, cfg.seed, cfg.trainer.max_steps, cfg.model.d_model) == (1, 5, 7, 16)
    # The base overrides are part of the identity; the seeds are not (a study can grow).
    assert spec.identity() != spec_from_dict(raw).identity()
    assert (
        spec.identity() == spec_from_dict({**raw, "seeds": 9}, overrides=["trainer.max_steps=7"]).identity()
    )
