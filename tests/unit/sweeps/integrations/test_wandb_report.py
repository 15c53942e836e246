"""``ablate wandb-report``: the W&B Report's and workspace's specs, checked offline against what the runs log.

The specs (``runs/<name>/wandb-report.json``, ``wandb-workspace.json``) are what W&B would store. Its runset filters are
evaluated here against the runs' attributes: in the fast tier against what ``wandb_glue`` passes
to W&B (captured, nothing logged), in the slow tier against real offline runs of a sweep, read back
with ``wandb leet inspect --json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ablate import cli
from ablate.experiments.schema.config import TrainConfig
from ablate.experiments.specs.spec import ExperimentSpec
from ablate.experiments.specs.spec_file import spec_from_dict
from ablate.files import write_json
from ablate.sweeps.integrations import wandb_glue
from ablate.sweeps.integrations import wandb_report as wrep
from ablate.sweeps.integrations import wandb_workspace as wws
from tests.helpers.configs import TINY_BASE

# baseline vs two variants, one of them deeper (its heatmaps have a third layer), an extra metric.
RAW_SPEC = {
    "name": "tiny",
    "base": TINY_BASE,
    "variants": {"baseline": {}, "no_pe": {"model.pe": "none"}, "deep": {"model.n_layers": 3}},
    "seeds": 3,
    "heatmap_seeds": [1],
    "extra_metrics": ["val/f1"],
}
STATS = {"n": 3, "n_diverged": 0, "median": 0.9, "q1": 0.85, "q3": 0.95, "min": 0.8, "max": 1.0}
SUMMARY = {
    "experiment": "tiny",
    "metric": "test/acc",
    "direction": "maximize",
    "baseline": "baseline",
    "cells": {"total": 9, "complete": 9},
    "variants": {
        "baseline": STATS,
        # the primary test's Δ, interval and p; delta_median and p_mwu are descriptive only
        "no_pe": {
            **STATS,
            "median": 0.5,
            "delta": -0.4,
            "ci": [-0.5, -0.3],
            "ci_confidence": 0.96875,
            "p_value": 0.25,
            "p_holm": 0.5,
            "test": "signed-rank",
            "delta_median": -0.35,
            "p_mwu": 0.1,
        },
        "deep": {**STATS, "delta": 0.0, "ci": None, "p_value": 1.0, "p_holm": 1.0, "test": "signed-rank"},
    },
    "verdicts": {
        "no_pe": "no_pe: not distinguishable from baseline on tiny (test/acc) at 3 seeds (...).",
        "deep": "deep: not distinguishable from baseline on tiny (test/acc) at 3 seeds (...).",
    },
}


def run_id(spec: ExperimentSpec, variant: str, seed: int) -> str:
    """The W&B run id the tests give the counted run of a cell (``captured_runs``, results.csv)."""
    return f"{spec.name}-{variant}-s{seed}"


def make_run_dir(tmp_path: Path, *, summary: bool = True) -> tuple[ExperimentSpec, Path]:
    """A run folder as a sweep leaves it, as far as the report reads it: spec.json, and unless
    ``summary`` is False summary.json and results.csv (every cell complete, with its run id)."""
    from ablate.sweeps.report.files import results_csv
    from ablate.sweeps.stats.rows import CellRow

    spec = spec_from_dict(RAW_SPEC)
    run_dir = tmp_path / "runs" / "tiny"
    run_dir.mkdir(parents=True)
    write_json(run_dir / "spec.json", spec.to_dict())
    if summary:
        write_json(run_dir / "summary.json", SUMMARY)
        rows = [
            CellRow(v, s, wandb_id=run_id(spec, v, s), trial=i, metrics={"test/acc": 0.9})
            for i, (v, s) in enumerate(spec.cells())
        ]
        (run_dir / "results.csv").write_text(results_csv(rows))
    return spec, run_dir


def wandb_report(*args: str) -> int:
    return cli.main(["wandb-report", *args])


# --- reading the spec: panels and runsets ----------------------------------------------------


def grids(spec_json: dict) -> list[dict]:
    return [b["metadata"] for b in spec_json["spec"]["blocks"] if b["type"] == "panel-grid"]


def panels(spec_json: dict, view_type: str) -> list[tuple[dict, dict]]:
    """(panel, its grid's only runset) for every panel of ``view_type``."""
    out = []
    for grid in grids(spec_json):
        assert len(grid["runSets"]) == 1
        out += [
            (p, grid["runSets"][0])
            for p in grid["panelBankSectionConfig"]["panels"]
            if p["viewType"] == view_type
        ]
    return out


def run_attr(run: dict, key: dict) -> Any:
    """The value a W&B filter key reads from a run (``run`` as ``leet inspect`` prints its record,
    ``summary`` its summary updates merged): a run attribute's key is in section ``run``, a
    summary key's in ``summary`` (``expr.Metric("ID")`` is ``{"section": "run", "name": "name"}``)."""
    if key["section"] in ("config", "summary"):
        return run[key["section"]].get(key["name"])
    assert key["section"] == "run", key
    field = {"jobType": "job_type", "group": "run_group", "name": "run_id", "displayName": "display_name"}
    return run[field[key["name"]]]


def matches(runset: dict, run: dict) -> bool:
    """Whether W&B's runset filter (filterV2: a flat AND of leaves here) keeps ``run``."""
    leaves = runset["filters"]["filters"]
    assert runset["filters"]["filterFormat"] == "filterV2" and leaves
    assert all(f.get("connector", "AND") == "AND" and not f["disabled"] for f in leaves)
    ops = {"=": lambda a, b: a == b, "IN": lambda a, b: a in b}
    return all(ops[f["op"]](run_attr(run, f["key"]), f["value"]) for f in leaves)


def workspace_runset(spec_json: dict) -> dict:
    [runset] = spec_json["spec"]["section"]["runSets"]
    return runset


def workspace_panels(spec_json: dict, view_type: str) -> list[dict]:
    sections = spec_json["spec"]["section"]["panelBankConfig"]["sections"]
    return [p for s in sections for p in s["panels"] if p["viewType"] == view_type]


def column_key(accessor: str) -> tuple[str, str]:
    """``config:model.pe.value`` -> (config, model.pe): the key W&B reads from a run logged with
    a flat config (``{"model.pe": {"value": ...}}``); ``summary:test/acc`` -> (summary, test/acc)."""
    section, name = accessor.split(":", 1)
    if section == "config":
        assert name.endswith(".value"), accessor
        name = name.removesuffix(".value")
    return section, name


def captured_runs(spec: ExperimentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    """The attributes ``wandb_glue`` gives each cell run and the summary run, captured at W&B's door;
    each cell's run ended complete (``end_cell``), with the id ``run_id`` names."""
    import lightning.pytorch.loggers
    import wandb

    class Captured(Exception):
        pass

    def fake_logger(**kw: Any) -> SimpleNamespace:
        return SimpleNamespace(**kw)

    def fake_init(**kw: Any) -> None:
        raise Captured(kw)

    monkeypatch.setattr(lightning.pytorch.loggers, "WandbLogger", fake_logger)
    monkeypatch.setattr(wandb, "init", fake_init)
    runs = {}
    for variant, seed in spec.cells():
        kw = wandb_glue.cell_logger(spec, variant, seed, spec.cell_config(variant, seed), tmp_path)
        runs[kw.name] = {
            "job_type": kw.job_type,
            "run_group": kw.group,
            "run_id": run_id(spec, variant, seed),
            "config": kw.config,
            "summary": {wandb_glue.CELL_STATE_KEY: wandb_glue.COMPLETE},
        }
    with pytest.raises(Captured) as info:
        wandb_glue.log_summary(spec, SUMMARY, tmp_path / "plot.png", tmp_path)
    kw = info.value.args[0]
    runs["summary"] = {
        "job_type": kw["job_type"],
        "run_group": kw["group"],
        "run_id": kw["id"],
        "config": kw["config"],
        "summary": {},
    }
    return runs


# --- the fast tier ----------------------------------------------------------------------------


def test_offline_writes_the_review_spec(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec, run_dir = make_run_dir(tmp_path)
    assert wandb_report(str(run_dir)) == 0
    out, err = capsys.readouterr()
    path = run_dir / "wandb-report.json"
    assert out.splitlines() == [str(path.resolve()), str((run_dir / "wandb-workspace.json").resolve())]
    assert "--from-spec" in err and "wandb sync" in err
    data = json.loads(path.read_text())
    assert data["project"] == {"name": "ablate", "entityName": ""}
    assert data["displayName"] == "tiny: ablation review"

    # Curves: train and val loss and the metrics' statistics, the median per variant, min-max band.
    lines = panels(data, "Run History Line Plot")
    assert sorted(p["config"]["metrics"][0] for p, _ in lines) == sorted(
        ["train/loss", "val/loss", "train/acc", "val/acc", "train/f1", "val/f1"]
    )
    bars = panels(data, "Bar Chart")
    assert [p["config"]["metrics"] for p, _ in bars] == [["test/acc"], ["val/f1"]]
    for panel, runset in lines + bars:
        cfg = panel["config"]
        assert (cfg["groupBy"], cfg["groupAgg"], cfg["groupArea"], cfg["aggregate"]) == (
            "variant.value",
            "median",
            "minmax",
            True,
        )
        assert runset["grouping"] == [{"section": "config", "name": "variant.value"}]
    assert {p["config"]["xAxis"] for p, _ in lines} == {"trainer/global_step"}

    # Heatmaps: every layer of the deepest variant, from ungrouped runs (one image per run).
    media = [(p["config"]["mediaKeys"], rs) for p, rs in panels(data, "Media Browser")]
    assert [keys for keys, _ in media] == [
        ["metric_plot"],
        ["attention/layer0"],
        ["attention/layer1"],
        ["attention/layer2"],
    ]
    assert all(rs["grouping"] == [] for _, rs in media[1:])

    # The summary table reads the summary run's `variants` table.
    report = wrep.read_report_spec(run_dir)
    tables = [p for b in report.blocks if hasattr(b, "panels") for p in b.panels if hasattr(p, "table_name")]
    assert [t.table_name for t in tables] == ["variants"]
    # The text states the medians and Δ of the summary.
    text = data["spec"]["blocks"][1]["content"]
    assert "| variant | n | median | q1 | q3 | delta | ci_lo | ci_hi | ci_confidence | p | p_holm |" in text
    assert (
        "| no_pe | 3 | 0.5000 | 0.8500 | 0.9500 | -0.4000 | -0.5000 | -0.3000 | 0.9688 | 0.2500 | 0.5000 |"
        in text
    )
    assert (
        "| deep | 3 | 0.9000 | 0.8500 | 0.9500 | 0.0000 |  |  |  | 1.0000 | 1.0000 |" in text
    )  # no interval


def reviewed_beside_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, summary: bool = True
) -> tuple[Any, Path, dict]:
    """A run folder reviewed offline, and the runs wandb_glue logs for it and for another
    experiment of the same project (same variant names); beside the counted run of each cell,
    runs that do not count: an interrupted and a failed attempt of ``no_pe-s1`` (each with a
    rerun, the counted run), one killed outright (no state), all with the same name."""
    spec, run_dir = make_run_dir(tmp_path, summary=summary)
    runs = captured_runs(spec, tmp_path, monkeypatch)
    for state in ("interrupted", "failed", None):
        attempt = {**runs["no_pe-s1"], "run_id": f"attempt-{state}"}
        runs[f"no_pe-s1 ({state})"] = {
            **attempt,
            "summary": {wandb_glue.CELL_STATE_KEY: state} if state else {},
        }
    other = spec_from_dict({**RAW_SPEC, "name": "other"})
    runs |= {f"other/{k}": v for k, v in captured_runs(other, tmp_path, monkeypatch).items()}
    monkeypatch.undo()
    assert wandb_report(str(run_dir)) == 0
    return spec, run_dir, runs


@pytest.mark.parametrize("reported", [True, False], ids=["by-run-id", "by-cell-state"])
def test_runsets_keep_exactly_this_experiments_counted_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reported: bool
) -> None:
    """The filters, evaluated on what wandb_glue logs: the cells' counted runs in the grouped
    runsets, heatmap seeds in the heatmap runset, the study's summary run alone in the table's;
    a cell's interrupted, failed or killed attempts and another experiment's runs (same project,
    same variant names) nowhere. Reported (results.csv): by the complete cells' run ids, so a run
    another study of this name marked complete stays out too; before: by ``ablate/cell_state``."""
    spec, run_dir, runs = reviewed_beside_another(tmp_path, monkeypatch, summary=reported)
    data = json.loads((run_dir / "wandb-report.json").read_text())
    older = {**runs["baseline-s0"], "run_id": "an-older-study-of-this-name"}  # marked complete

    def kept(runset: dict) -> set[str]:
        return {name for name, run in runs.items() if matches(runset, run)}

    cells = {f"{v}-s{s}" for v, s in spec.cells()}
    filters = [f["key"] for _, rs in panels(data, "Bar Chart") for f in rs["filters"]["filters"]]
    if reported:
        assert {"section": "run", "name": "name"} in filters  # the run ids of results.csv
    else:
        assert {"section": "summary", "name": wandb_glue.CELL_STATE_KEY} in filters
    for _, runset in panels(data, "Run History Line Plot") + panels(data, "Bar Chart"):
        assert kept(runset) == cells
        assert {runs[c]["config"]["variant"] for c in cells} == set(spec.variants)
        assert matches(runset, older) is not reported
    for panel, runset in panels(data, "Media Browser"):
        want = (
            {"summary"}
            if panel["config"]["mediaKeys"] == ["metric_plot"]
            else {"baseline-s1", "no_pe-s1", "deep-s1"}
        )
        assert kept(runset) == want  # the summary run's id, from spec.json, is the logged one
    text = data["spec"]["blocks"][1]["content"]
    assert ("results.csv counts complete" in text) is reported


def test_offline_writes_the_workspace_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace: this experiment's cells only, grouped by variant; a parallel-coordinates
    plot over the swept keys and seed to the metric; a runs table with variant, seed, metric and
    diverged; median curves and bars. Every key it reads is one wandb_glue logs."""
    spec, run_dir, runs = reviewed_beside_another(tmp_path, monkeypatch)
    data = json.loads((run_dir / "wandb-workspace.json").read_text())
    assert (data["project"], data["entity"], data["displayName"]) == (
        "ablate",
        "",
        "tiny: ablation workspace",
    )
    cells = {f"{v}-s{s}" for v, s in spec.cells()}
    runset = workspace_runset(data)
    # The report's cells: no summary run, no attempt that does not count.
    assert {name for name, run in runs.items() if matches(runset, run)} == cells
    report = json.loads((run_dir / "wandb-report.json").read_text())
    [(_, bars), *_] = panels(report, "Bar Chart")
    assert runset["filters"] == bars["filters"]  # one rule, the same run ids
    assert runset["grouping"] == [{"section": "config", "name": "variant.value"}]

    # Parallel coordinates: the swept keys (flat config keys, as cells log them), seed, the metric.
    [pc] = workspace_panels(data, "Parallel Coordinates Plot")
    axes = [column_key(c["accessor"]) for c in pc["config"]["columns"]]
    assert axes == [
        ("config", "model.pe"),
        ("config", "model.n_layers"),
        ("config", "seed"),
        ("summary", "test/acc"),
    ]
    # The runs table: the run's name, then variant, seed, the primary metric and diverged.
    feed = runset["runFeed"]
    assert feed["columnOrder"] == [
        "run:displayName",
        "config:variant.value",
        "config:seed.value",
        "summary:test/acc",
        "summary:diverged",
    ]
    assert all(feed["columnPinned"][c] and feed["columnVisible"][c] for c in feed["columnOrder"])
    for name in cells:  # every config axis and column is a key the cell run carries
        for section, key in axes + [column_key(c) for c in feed["columnOrder"][1:]]:
            if section == "config":
                assert key in runs[name]["config"], (name, key)
    assert {runs[c]["config"]["model.pe"] for c in cells} == {"sinusoidal", "none"}

    # Curves and bars: the median over a variant's seeds with a min-max band, as in the report.
    lines = workspace_panels(data, "Run History Line Plot")
    bars = workspace_panels(data, "Bar Chart")
    assert sorted(p["config"]["metrics"][0] for p in lines) == sorted(wrep.curve_metrics(spec))
    assert [p["config"]["metrics"] for p in bars] == [["test/acc"], ["val/f1"]]
    for panel in lines + bars:
        cfg = panel["config"]
        assert (cfg["groupBy"], cfg["groupAgg"], cfg["groupArea"]) == ("variant.value", "median", "minmax")
    assert data["spec"]["section"]["settings"]["xAxis"] == "trainer/global_step"
    assert data["spec"]["section"]["settings"]["shouldAutoGeneratePanels"] is False

    # One view per experiment: a rerun keeps the name, another experiment gets its own.
    assert data["name"] == wws.view_name(spec) != wws.view_name(spec_from_dict({**RAW_SPEC, "name": "other"}))
    assert wandb_report(str(run_dir)) == 0
    assert json.loads((run_dir / "wandb-workspace.json").read_text())["name"] == data["name"]


def test_workspace_spec_round_trips(tmp_path: Path) -> None:
    """The JSON loads back into the library's Workspace and serializes to the same JSON (flat
    config columns included: the library alone would read them back as nested keys)."""
    spec, run_dir = make_run_dir(tmp_path)
    for ids in (wrep.complete_run_ids(run_dir), None):  # the ids' filter and the state key's
        data = wws.workspace_spec(wws.build_workspace(spec, entity="", project="p", run_ids=ids))
        assert wws.workspace_spec(wws.workspace_from_spec(data, tmp_path / "x.json")) == data


def test_cell_configs_hold_only_their_tasks_data_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text task's cell run has no synthetic sizes, a synthetic one no text source; the rest of
    the config is cfg.flat()."""
    import lightning.pytorch.loggers

    monkeypatch.setattr(lightning.pytorch.loggers, "WandbLogger", lambda **kw: kw)
    spec = spec_from_dict(RAW_SPEC)
    text = TrainConfig.from_dict(
        {**TINY_BASE, "data": {"task": "text", "source": "nyu-mll/glue", "subset": "sst2", "max_len": 16}}
    )
    order = spec.cell_config("baseline", 0)
    got = {
        name: wandb_glue.cell_logger(spec, "baseline", 0, cfg, tmp_path)["config"]
        for name, cfg in {"text": text, "order": order}.items()
    }
    assert "data.n_train" not in got["text"] and "data.n_symbols" not in got["text"]
    assert got["text"]["data.source"] == "nyu-mll/glue" and got["text"]["data.subset"] == "sst2"
    assert got["order"]["data.n_train"] == 96 and got["order"]["data.n_symbols"] == 5
    assert "data.source" not in got["order"] and "data.n_keys" not in got["order"]
    for name, cfg in {"text": text, "order": order}.items():
        dropped = set(cfg.flat()) - set(got[name])
        assert dropped and all(k.startswith("data.") for k in dropped)
        assert all(got[name][k] == v for k, v in cfg.flat().items() if k not in dropped)
    # The rule names real fields: every task reads task, seed, batch_size and max_len.
    from dataclasses import fields

    from ablate.datamodules.config import DataConfig

    names = {f.name for f in fields(DataConfig)}
    assert {k for keys in DataConfig.TASK_FIELDS.values() for k in keys} <= names
    assert set(DataConfig.TASK_FIELDS) == {"order", "lookup", "listops", "text"}


def test_the_summary_run_has_its_own_job_type_and_a_flat_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_from_dict(RAW_SPEC)
    runs = captured_runs(spec, tmp_path, monkeypatch)
    summary = runs.pop("summary")
    assert summary["job_type"] == "summary" and {r["job_type"] for r in runs.values()} == {"tiny"}
    config = summary["config"]
    assert not [k for k, v in config.items() if isinstance(v, dict) and v]  # flat: no nested dicts
    assert config["base.model.n_heads"] == 2 and config["base.data.n_train"] == 96
    assert "base.data.source" not in config  # the base's data keys, as a cell's
    assert config["variants.no_pe.model.pe"] == "none" and config["variants.deep.model.n_layers"] == 3
    assert config["variants.baseline"] == {} and config["baseline"] == "baseline"
    assert (config["seeds"], config["metric"], config["name"]) == ([0, 1, 2], "test/acc", "tiny")
    assert "experiment" not in config  # the key that marks cell runs
    base = {k.removeprefix("base."): v for k, v in config.items() if k.startswith("base.")}
    assert base == wandb_glue.run_config(spec.base)


def test_log_cell_puts_the_splits_in_the_config_when_present() -> None:
    updates: list[dict] = []
    config = SimpleNamespace(update=lambda d, allow_val_change: updates.append(d))

    def log(result: dict[str, Any]) -> None:
        run = SimpleNamespace(summary={}, config=config, id="r", log=lambda *a: None)
        assert wandb_glue.log_cell(SimpleNamespace(experiment=run), result, None) == "r"

    splits = {"train": 96, "validation": 32, "test": 32}
    log({"test/acc": 1.0, "splits": splits})
    assert updates == [{"splits": splits}]
    log({"test/acc": 1.0})
    assert updates == [{"splits": splits}]  # absent: nothing written


class FakeRun:
    """A W&B run as ``end_cell`` uses it: a summary, and ``finish`` recording its exit code."""

    def __init__(self) -> None:
        self.summary: dict[str, Any] = {}
        self.exit_codes: list[int] = []

    def finish(self, exit_code: int = 0) -> None:
        self.exit_codes.append(exit_code)


@pytest.mark.parametrize(
    ("state", "code"), [("complete", 0), ("failed", 1), ("interrupted", 130)], ids=lambda x: str(x)
)
def test_end_cell_writes_the_state_and_its_exit_code(state: str, code: int) -> None:
    """A run ends with its cell's state under ``ablate/cell_state`` and a non-zero exit code unless
    complete (a failed or interrupted attempt never shows as a finished run)."""
    run = FakeRun()
    wandb_glue.end_cell(SimpleNamespace(experiment=run, _experiment=run), state)  # type: ignore[arg-type]
    assert (run.summary, run.exit_codes) == ({wandb_glue.CELL_STATE_KEY: state}, [code])


def test_end_cell_opens_no_run_to_fail_it() -> None:
    """A cell that stopped before its logger opened a run: no run is made just to be ended."""

    class Unopened:
        _experiment = None

        @property
        def experiment(self) -> Any:
            raise AssertionError("opened a run")

    wandb_glue.end_cell(Unopened(), "interrupted")
    wandb_glue.end_cell(Unopened(), "failed")


def test_the_summary_run_gets_the_verdicts_and_the_primary_tests_scalars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary run's notes are the verdicts in order, each also a ``<variant>/verdict`` key;
    its scalars are the primary test's Δ, interval (at its confidence) and p, p_seq where the
    schedule adjusted it."""
    import wandb

    spec = spec_from_dict(RAW_SPEC)
    init: dict[str, Any] = {}
    run = SimpleNamespace(id="r", summary={}, log=lambda *a, **k: None, finish=lambda: None)
    monkeypatch.setattr(wandb, "init", lambda **kw: init.update(kw) or run)
    monkeypatch.setattr(wandb, "Table", lambda **kw: kw)
    monkeypatch.setattr(wandb, "Image", lambda path: path)
    assert wandb_glue.log_summary(spec, SUMMARY, tmp_path / "plot.png", tmp_path) == "r"
    assert init["notes"] == "\n".join([SUMMARY["verdicts"]["no_pe"], SUMMARY["verdicts"]["deep"]])
    assert (
        run.summary["no_pe/verdict"] == SUMMARY["verdicts"]["no_pe"] and "baseline/verdict" not in run.summary
    )
    assert run.summary["no_pe/delta"] == -0.4 and run.summary["no_pe/ci_confidence"] == 0.96875
    assert [run.summary["no_pe/ci_lo"], run.summary["no_pe/ci_hi"]] == [-0.5, -0.3]
    assert run.summary["no_pe/p"] == 0.25 and run.summary["no_pe/p_holm"] == 0.5
    assert "deep/ci_lo" not in run.summary  # no interval: no scalar rather than a made-up one
    assert "baseline/delta" not in run.summary and run.summary["baseline/median"] == 0.9
    gone = ("ci95_lo", "ci95_hi", "delta_median", "p_mwu", "p_value")
    assert not [k for k in run.summary if k.split("/")[-1] in gone]
    adaptive = {
        **SUMMARY,
        "variants": {**SUMMARY["variants"], "no_pe": {**SUMMARY["variants"]["no_pe"], "p_seq": 0.75}},
    }
    assert wandb_glue.summary_scalars(adaptive)["no_pe/p"] == 0.75  # the p the interval inverts


def test_heatmap_keys_are_what_log_cell_logs(tmp_path: Path) -> None:
    """log_cell logs ``attention/layer{i}`` images; the panels ask for the same keys."""
    import matplotlib.pyplot as plt

    spec = spec_from_dict(RAW_SPEC)
    pngs = []
    for i in range(3):
        pngs.append(tmp_path / f"l{i}.png")
        plt.imsave(pngs[-1], [[0.0, 1.0], [1.0, 0.0]])
    logged: dict[str, Any] = {}
    run = SimpleNamespace(summary={}, id="r", log=logged.update)
    wandb_glue.log_cell(SimpleNamespace(experiment=run), {"test/acc": 1.0}, {"pngs": pngs})
    assert sorted(logged) == wrep.heatmap_keys(spec)


def test_without_summary_the_report_still_builds(tmp_path: Path) -> None:
    _, run_dir = make_run_dir(tmp_path, summary=False)
    assert wandb_report(str(run_dir)) == 0
    data = json.loads((run_dir / "wandb-report.json").read_text())
    assert "No summary.json yet" in data["spec"]["blocks"][1]["content"]


def test_spec_round_trips(tmp_path: Path) -> None:
    """The JSON loads back into the library's Report and serializes to the same JSON."""
    spec, run_dir = make_run_dir(tmp_path)
    for ids in (wrep.complete_run_ids(run_dir), None):  # the ids' filter and the state key's
        data = wrep.report_spec(wrep.build_report(spec, SUMMARY, entity="", project="p", run_ids=ids))
        assert wrep.report_spec(wrep.report_from_spec(data, tmp_path / "x.json")) == data


class FakeViews:
    """W&B's views of a project, as far as ``Workspace.save`` and a lookup by name reach them:
    the library runs, only its two GraphQL calls are answered here."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}  # view name -> id
        self.upserts: list[Any] = []  # the View models sent, in order

    def from_name(self, entity: str, project: str, name: str) -> Any:
        if name not in self.ids:
            raise ValueError(f"Workspace `{name}` not found in project `{project}`")  # the library's
        return SimpleNamespace(id=self.ids[name])

    def upsert(self, view: Any) -> dict:
        self.upserts.append(view)
        self.ids.setdefault(view.name, view.id or f"view{len(self.ids)}")
        return {"upsertView": {"view": {"id": self.ids[view.name], "name": view.name}}}


def go_online(monkeypatch: pytest.MonkeyPatch) -> tuple[list, FakeViews]:
    """W&B online, with Report.save and Report.url stubbed (the reports "saved", in order) and
    the workspace's server calls answered by a FakeViews."""
    import wandb_workspaces.reports.v2 as wr
    import wandb_workspaces.workspaces as ws
    from wandb_workspaces.workspaces import internal

    saved: list = []
    views = FakeViews()

    def fake_save(self: Any, draft: bool = False, clone: bool = False) -> Any:
        self.id = f"id{len(saved)}"
        saved.append(self)
        return self

    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_ENTITY", "team")
    monkeypatch.setattr(wr.Report, "save", fake_save)
    monkeypatch.setattr(
        wr.Report, "url", property(lambda r: f"https://w.example/{r.entity}/{r.project}/{r.id}")
    )
    monkeypatch.setattr(internal.View, "from_name", lambda *a: views.from_name(*a[-3:]))
    monkeypatch.setattr(internal, "upsert_view2", views.upsert)
    monkeypatch.setattr(
        ws.Workspace,
        "url",
        property(lambda w: f"https://w.example/{w.entity}/{w.project}?nw={w._internal_name}"),
    )
    return saved, views


def test_online_saves_and_prints_the_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Online: the report and the workspace are saved, their URLs printed; a rerun updates the
    same workspace (same view, by name and id) rather than adding another."""
    spec, run_dir = make_run_dir(tmp_path)
    saved, views = go_online(monkeypatch)
    assert wandb_report(str(run_dir)) == 0
    name = wws.view_name(spec)
    assert capsys.readouterr().out.splitlines() == [
        "https://w.example/team/ablate/id0",
        f"https://w.example/team/ablate?nw={name}",
    ]
    assert [r.title for r in saved] == ["tiny: ablation review"]
    assert json.loads((run_dir / "wandb-report.json").read_text())["project"]["entityName"] == "team"
    assert json.loads((run_dir / "wandb-workspace.json").read_text())["entity"] == "team"
    [first] = views.upserts
    assert (first.name, first.id, first.entity, first.project) == (name, "", "team", "ablate")
    assert wandb_report(str(run_dir)) == 0
    assert [(v.name, v.id) for v in views.upserts[1:]] == [(name, views.ids[name])]  # an update
    assert len(views.ids) == 1


def test_from_spec_creates_the_offline_report_and_workspace_once_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Offline specs -> online ``--from-spec``: the saved report and workspace are the written
    ones, in the entity of the runs."""
    spec, run_dir = make_run_dir(tmp_path)
    assert wandb_report(str(run_dir)) == 0  # offline (conftest)
    written = json.loads((run_dir / "wandb-report.json").read_text())
    written_ws = json.loads((run_dir / "wandb-workspace.json").read_text())
    capsys.readouterr()
    saved, views = go_online(monkeypatch)
    assert wandb_report(str(run_dir), "--from-spec") == 0
    assert capsys.readouterr().out.splitlines() == [
        "https://w.example/team/ablate/id0",
        f"https://w.example/team/ablate?nw={wws.view_name(spec)}",
    ]
    [report] = saved
    got = wrep.report_spec(report)
    assert got["project"] == {"name": "ablate", "entityName": "team"}
    assert {**got, "project": written["project"], "id": ""} == written
    [view] = views.upserts
    sent = view.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert sent["entity"] == "team" and {**sent, "entity": ""} == written_ws


# --- bad input: exit 2, one message, nothing written ------------------------------------------


REPORT = "<a report spec written offline>"  # the test writes one in its place
WORKSPACE = "<a workspace spec written offline>"  # the same
BAD_SUMMARY = json.dumps({**SUMMARY, "variants": {**SUMMARY["variants"], "no_pe": {"n": 3}}})
# case: (folder under runs/, files written there first (None: a folder), extra args, words of the error)
BAD: dict[str, tuple[str, dict[str, str | None], list[str], list[str]]] = {
    "no-folder": ("nope", {}, [], ["is not a sweep run folder", "no spec.json", "no such folder"]),
    "a-file": ("file", {"file": "x"}, [], ["is not a sweep run folder", "not a folder"]),
    "no-spec-json": ("empty", {"empty": None}, [], ["is not a sweep run folder", "no spec.json"]),
    "spec-not-json": ("tiny", {"tiny/spec.json": "{"}, [], ["spec.json is not valid JSON"]),
    "summary-not-an-object": ("tiny", {"tiny/summary.json": "[]"}, [], ["summary.json holds a JSON list"]),
    "summary-without-stats": (
        "tiny",
        {"tiny/summary.json": BAD_SUMMARY},
        [],
        ["is not a sweep's summary", "missing in no_pe", "ablate report"],
    ),
    "results-not-a-results-csv": (
        "tiny",
        {"tiny/results.csv": "a,b\n1,2\n"},
        [],
        ["is not a sweep's results.csv", "no column variant, seed, state, wandb_id", "ablate report"],
    ),
    "results-seed-not-a-number": (
        "tiny",
        {"tiny/results.csv": "variant,seed,state,wandb_id\nbaseline,x,complete,w\n"},
        [],
        ["is not a sweep's results.csv", "ablate report"],
    ),
    "from-spec-missing": ("tiny", {}, ["--from-spec"], ["no wandb-report.json", "ablate wandb-report"]),
    "from-spec-not-json": (  # the run folder's careful reader (sweeps/ledger/run_folder.py)
        "tiny",
        {"tiny/wandb-report.json": "{"},
        ["--from-spec"],
        ["wandb-report.json is not valid JSON", "write them with `ablate wandb-report"],
    ),
    "from-spec-not-a-report": (
        "tiny",
        {"tiny/wandb-report.json": '{"spec": 3}'},
        ["--from-spec"],
        ["is not a W&B report spec"],
    ),
    "from-spec-workspace-missing": (
        "tiny",
        {"tiny/wandb-report.json": REPORT},
        ["--from-spec"],
        ["no wandb-workspace.json", "ablate wandb-report"],
    ),
    "from-spec-not-a-workspace": (
        "tiny",
        {"tiny/wandb-report.json": REPORT, "tiny/wandb-workspace.json": '{"spec": 3}'},
        ["--from-spec"],
        ["wandb-workspace.json is not a W&B workspace spec"],
    ),
    "from-spec-offline": (
        "tiny",
        {"tiny/wandb-report.json": REPORT, "tiny/wandb-workspace.json": WORKSPACE},
        ["--from-spec"],
        ["W&B is offline", "only be created online", "wandb sync"],
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_exits_2(tmp_path: Path, case: str, capsys: pytest.CaptureFixture) -> None:
    folder, files, args, words = BAD[case]
    spec, run_dir = make_run_dir(tmp_path)
    for name, text in files.items():
        path = run_dir.parent / name
        if text is None:
            path.mkdir()
        elif text == REPORT:
            write_json(path, wrep.report_spec(wrep.build_report(spec, None, entity="", project="p")))
        elif text == WORKSPACE:
            write_json(path, wws.workspace_spec(wws.build_workspace(spec, entity="", project="p")))
        else:
            path.write_text(text)
    target = run_dir.parent / folder
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    assert wandb_report(str(target), *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("error:") == 1
    for word in words:
        assert word in err, (word, err)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before  # nothing written


# --- the slow tier: a real sweep's offline runs -----------------------------------------------
