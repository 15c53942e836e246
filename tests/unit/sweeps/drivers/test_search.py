"""``ablate search``: the search block's validation, per-variant spaces, pruning, exactly
``trials`` trials per variant with two workers, resume, and ``--then-evaluate``."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from ablate import cli
from ablate.errors import ConfigError
from ablate.experiments.specs.spec import spec_from_resolved
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.sweeps.drivers.search import tuned_spec
from ablate.sweeps.ledger.search_store import distributions
from tests.helpers.configs import TINY_BASE

SEARCH = {
    "space": {
        "optim.lr": {"low": 1.0e-5, "high": 0.1, "log": True},
        "optim.warmup_ratio": {"low": 0.0, "high": 0.3},
    },
    "trials": 5,
    # val/loss has no ties on 32 validation examples, so the median pruner always has an order.
    "metric": "val/loss",
    "pruner": "median",
    "n_startup_trials": 1,
    "n_warmup_steps": 0,
}
BASE = {**TINY_BASE, "trainer": {"max_steps": 12, "val_every": 2, "log_every": 1}}
RAW = {
    "name": "tiny",
    "base": BASE,
    "variants": {"baseline": {}, "no_warmup": {"optim.warmup_ratio": 0.0}},
    "seeds": 2,
    "search": SEARCH,
}


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({**SEARCH, "space": {"optim.nope": {"low": 0, "high": 1}}}, "not a config key"),
        ({**SEARCH, "space": {}}, "must map config keys"),
        ({**SEARCH, "space": {"optim.lr": {"low": 0.1, "high": 0.01}}}, "must be below"),
        ({**SEARCH, "space": {"optim.lr": {"low": 0.0, "high": 0.1, "log": True}}}, "needs low > 0"),
        ({**SEARCH, "space": {"model.n_heads": {"choices": [2, 3]}}}, "not divisible"),
        ({**SEARCH, "space": {"model.n_layers": {"low": 1, "high": 2.5}}}, "integer key"),
        ({**SEARCH, "space": {"optim.lr": {"min": 0.1}}}, r"\{low, high"),
        ({**SEARCH, "metric": "test/acc"}, "never test"),
        ({**SEARCH, "pruner": "sometimes"}, "choose one of median, hyperband, none"),
        ({**SEARCH, "trials": 0}, "search.trials"),
        ({**SEARCH, "budget": 3}, "unknown search key"),
    ],
)
def test_search_block_validation(search: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        spec_from_dict({**RAW, "search": search})


def test_pruning_needs_validation_during_training() -> None:
    base = {**BASE, "trainer": {"max_steps": 12}}
    with pytest.raises(ConfigError, match="set trainer.val_every"):
        spec_from_dict({**RAW, "base": base})
    assert spec_from_dict({**RAW, "base": base, "search": {**SEARCH, "pruner": "none"}}).search is not None


def test_variant_keys_are_not_searched_and_the_block_round_trips() -> None:
    spec = spec_from_dict(RAW)
    assert set(distributions(spec, "baseline")) == {"optim.lr", "optim.warmup_ratio"}
    assert set(distributions(spec, "no_warmup")) == {"optim.lr"}  # the variant defines warmup
    assert distributions(spec, "baseline")["optim.lr"].log
    assert spec_from_resolved(spec.to_dict()).search == spec.search
    # The search block does not change which grid results are comparable.
    assert spec.identity() == spec_from_dict({k: v for k, v in RAW.items() if k != "search"}).identity()


def test_tuned_spec_puts_the_baselines_best_in_the_base() -> None:
    spec = spec_from_dict(RAW)
    summary = {
        "metric": "val/loss",
        "variants": {
            "baseline": {"best_params": {"optim.lr": 0.01, "optim.warmup_ratio": 0.2}, "best_value": 0.5},
            "no_warmup": {"best_params": {"optim.lr": 0.001}, "best_value": 0.6},
        },
    }
    tuned = tuned_spec(spec, summary)
    assert tuned.name == "tiny-tuned" and tuned.variants["baseline"] == {}
    base = tuned.cell_config("baseline", 0).optim
    other = tuned.cell_config("no_warmup", 0).optim
    assert (base.lr, base.warmup_ratio) == (0.01, 0.2)
    assert (other.lr, other.warmup_ratio) == (0.001, 0.0)  # its own lr, its own (absent) warmup
    assert tuned.tuned["no_warmup"]["optim.lr"] == 0.001
    summary["variants"]["no_warmup"]["best_params"] = None
    with pytest.raises(ConfigError, match="no finished search trial"):
        tuned_spec(spec, summary)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--variants", "baseline,nope"], "choose distinct names among baseline, no_warmup"),
        (["--variants", "no_warmup", "--then-evaluate"], "needs the baseline 'baseline'"),
        (["--trials", "0"], "--trials=0 is out of range; valid: [1, 100000]"),
    ],
)
def test_search_bad_arguments(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(RAW))
    monkeypatch.chdir(tmp_path)  # in-process: these fail before anything is imported or run
    assert cli.main(["search", "tiny.yaml", "--runs", "runs", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_search_without_a_search_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({k: v for k, v in RAW.items() if k != "search"}))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["search", "tiny.yaml"]) == 2
    assert "has no 'search' block" in capsys.readouterr().err


@pytest.mark.parametrize("warmup", [0, 1, 2])
def test_median_pruner_spares_the_first_n_warmup_validations(warmup: int) -> None:
    """``n_warmup_steps: n`` never prunes at validations 1..n (numbered from 1), and can from
    n + 1 on. Optuna's own n_warmup_steps prunes at a step equal to it: passed through
    unchanged, ``n_warmup_steps: 1`` pruned every TPE proposal of the norm search at its
    first validation, still inside the warmup."""
    from ablate.experiments.specs.search_spec import SearchSpec
    from ablate.sweeps.ledger.search_store import make_pruner

    spec = SearchSpec(
        space={"optim.lr": {"low": 1e-4, "high": 1e-2}}, n_startup_trials=2, n_warmup_steps=warmup
    )
    study = optuna.create_study(direction="maximize", pruner=make_pruner(spec, max_steps=1000, val_every=100))
    for _ in range(2):  # finished trials, good at every validation
        t = study.ask()
        for step in range(1, 5):
            t.report(0.9, step=step)
        study.tell(t, 0.9)
    bad = study.ask()
    pruned_at = None
    for step in range(1, 5):
        bad.report(0.1, step=step)
        if bad.should_prune():
            pruned_at = step
            break
    assert pruned_at == warmup + 1


def test_search_dry_run_and_print_config_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(RAW))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["search", "tiny.yaml", "--trials", "3", "--then-evaluate", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "no_warmup" in out and "2 variants x 3 trials, then 4 cells in runs/tiny-tuned" in err
    assert cli.main(["search", "tiny.yaml", "--print-config", "--variants", "baseline"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["search"]["trials"] == 5 and "1 variant x 5 trials would run" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]
