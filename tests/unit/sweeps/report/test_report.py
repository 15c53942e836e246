"""Report files, atomic writes and run comparison on tiny fake run folders."""

from __future__ import annotations

import csv
import errno
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

import ablate.files as io_mod
from ablate.errors import ConfigError
from ablate.sweeps.report.compare import (
    MEDIAN_HEADER,
    attention_changes,
    compare,
    compare_runs,
    markdown,
    page,
    write_comparison,
)
from ablate.sweeps.report.files import (
    CSS,
    figure_png,
    list_html,
    load_heads,
    page_html,
    plot_metric,
    table_html,
    table_md,
    write_report,
)
from ablate.sweeps.stats.rows import CellRow
from ablate.sweeps.stats.summary import summarize
from tests.helpers.rows import cell_row

VARIANTS = ["baseline", "no_pe"]


def _rows() -> list[CellRow]:
    rows = []
    for s, (a, b) in enumerate(zip([0.9, 0.92, 0.95], [0.5, 0.52, 0.49], strict=True)):
        rows.append(cell_row("baseline", s, a, metrics={"val/acc": a}, wall_s=2.0, trial=s, wandb_id=f"w{s}"))
        rows.append(cell_row("no_pe", s, b, metrics={"val/acc": b}, diverged=s == 2, wall_s=2.0, trial=3 + s))
    rows.append(cell_row("no_pe", 3, None, state="running", diverged=None))
    return rows


def _summary(rows: list[CellRow]) -> dict:
    return summarize(
        rows,
        experiment="tiny",
        metric="test/acc",
        direction="maximize",
        baseline="baseline",
        variants=VARIANTS,
    )


def _png() -> bytes:
    fig = Figure(figsize=(1, 1))
    fig.add_subplot().imshow(np.eye(3))
    return figure_png(fig)


def _archive(run: Path, variant: str, seed: int, layers: list[np.ndarray], mask: np.ndarray) -> None:
    """A fake heatmap archive: attention.npz, heads.json and one PNG per layer."""
    d = run / "heatmaps" / variant / f"seed{seed}"
    d.mkdir(parents=True)
    np.savez(d / "attention.npz", attention_mask=mask, **{f"layer{i}": a for i, a in enumerate(layers)})
    heads = layers[0].shape[1]
    (d / "heads.json").write_text(
        json.dumps(
            {
                "entropy": [[0.5 + h for h in range(heads)] for _ in layers],
                "importance": [[0.01 * h for h in range(heads)] for _ in layers],
                "metric": "test/acc",
                "tokens": [["[CLS]", "a", "b", "[PAD]"]],
            }
        )
    )
    for i in range(len(layers)):
        (d / f"layer{i}.png").write_bytes(_png())


def _uniform(n: int = 2, heads: int = 2, length: int = 4) -> tuple[np.ndarray, np.ndarray]:
    mask = np.ones((n, length), bool)
    mask[:, -1] = False  # the last token of each probe example is padding
    att = np.where(mask[:, None, None, :], 1 / 3, 0.0) * np.ones((n, heads, length, length))
    return att.astype(np.float32), mask


def test_report_files(tmp_path: Path) -> None:
    rows = _rows()
    att, mask = _uniform()
    for v in VARIANTS:
        _archive(tmp_path, v, 0, [att, att], mask)
    summary = _summary(rows)
    paths = write_report(tmp_path, summary, rows, tuned={"no_pe": {"lr": 0.003}})
    # no_pe is paired (same seeds as the baseline): its per-seed differences; no cell has a curve
    assert set(paths) == {"summary", "csv", "markdown", "html", "differences"}
    assert all(p.exists() for p in paths.values())

    assert json.loads(paths["summary"].read_text()) == summary == {**_summary(rows), "cost": summary["cost"]}
    with paths["csv"].open() as f:
        table = list(csv.reader(f))
    assert table[0] == [
        "variant",
        "seed",
        "state",
        "diverged",
        "wall_s",
        "n_params",
        "trial",
        "wandb_id",
        "error",
        "numerics",
        "test/acc",
        "val/acc",
    ]
    assert len(table) == 1 + len(rows)
    assert table[-1][10] == ""  # NaN metric of the running cell -> empty field

    md = paths["markdown"].read_text()
    assert "| no_pe | 3 | 1 |" in md  # n and diverged columns
    assert "no_pe/s3 (running)" in md and "Partial study" in md
    assert "L0H1" in md  # the most important head (importance grows with the head index)
    assert "lr=0.003" in md

    page = paths["html"].read_text()
    assert not re.search(r"(src|href)\s*=\s*['\"]?\s*https?:", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and "<script" not in page
    for v in VARIANTS:
        assert v in page
    imgs = re.findall(r"<img src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(imgs) == 2 + 2 * 2  # the metric plot, the differences + 2 layers x 2 variants
    assert "entropy per head: 0.50, 1.50" in page
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_complete_study_and_no_heatmaps(tmp_path: Path) -> None:
    rows = [r for r in _rows() if r.state == "complete"]
    md = write_report(tmp_path, _summary(rows), rows)["markdown"].read_text()
    assert "All 6 cells complete." in md and "Attention heads" not in md


def test_plot_metric_is_png() -> None:
    rows = _rows()
    png = plot_metric(_summary(rows), rows)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("fail_at", ["replace", "fsync"])
def test_atomic_write_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: str
) -> None:
    rows = _rows()

    def boom(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io_mod.os, fail_at, boom)
    with pytest.raises(ConfigError, match="summary.json"):
        write_report(tmp_path, _summary(rows), rows)
    assert not (tmp_path / "summary.json").exists()
    assert os.listdir(tmp_path) == []  # no temp file left behind


def test_failed_rewrite_keeps_old_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows()
    old = write_report(tmp_path, _summary(rows), rows)["summary"].read_text()
    monkeypatch.setattr(io_mod.os, "replace", lambda *a: (_ for _ in ()).throw(OSError(errno.EIO, "io")))
    with pytest.raises(ConfigError, match="summary.json"):
        write_report(tmp_path, {**_summary(rows), "experiment": "changed"}, rows)
    assert (tmp_path / "summary.json").read_text() == old
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_nan_in_summary_refused(tmp_path: Path) -> None:
    rows = _rows()
    bad = _summary(rows)
    bad["variants"]["no_pe"]["median"] = float("nan")
    with pytest.raises(ValueError):
        write_report(tmp_path, bad, rows)
    assert not (tmp_path / "summary.json").exists()


def _run(root: Path, name: str, medians: dict[str, float]) -> Path:
    run = root / name
    run.mkdir()
    variants = {v: {"median": m} for v, m in medians.items()}
    (run / "summary.json").write_text(
        json.dumps(
            {
                "experiment": name,
                "metric": "test/acc",
                "direction": "maximize",
                "baseline": "baseline",
                "variants": variants,
            }
        )
    )
    return run


def test_compare_runs(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", {"baseline": 0.9, "no_pe": 0.5})
    b = _run(tmp_path, "b", {"baseline": 0.92, "no_pe": 0.75})
    att_a, mask = _uniform()
    att_b = att_a.copy()
    # B moves head 1 of layer 1, example 0, query 0 to attend only to key 0.
    att_b[0, 1, 0, :3] = [1.0, 0.0, 0.0]
    _archive(a, "no_pe", 0, [att_a, att_a], mask)
    _archive(b, "no_pe", 0, [att_a, att_b], mask)
    _archive(a, "baseline", 0, [att_a], mask)  # only in A: not compared

    res = attention_changes(
        a / "heatmaps/no_pe/seed0/attention.npz", b / "heatmaps/no_pe/seed0/attention.npz"
    )
    diff = res["layer1"]["diff"]
    assert diff.shape == (2, 3, 3)  # cropped to the 3 real tokens of example 0
    expected = np.zeros((2, 3, 3))
    expected[1, 0] = [2 / 3, -1 / 3, -1 / 3]
    np.testing.assert_allclose(diff, expected, atol=1e-6)
    # |Δ| sums to 4/3 over 2 examples x 3 x 3 real (query, key) pairs = 18
    np.testing.assert_allclose(res["layer1"]["head_change"], [0.0, (4 / 3) / 18], atol=1e-6)
    np.testing.assert_allclose(res["layer0"]["head_change"], [0.0, 0.0])

    paths = compare_runs(a, b, tmp_path / "out")
    assert {"markdown", "html", "no_pe/seed0/layer0", "no_pe/seed0/layer1"} == set(paths)
    md = paths["markdown"].read_text()
    top = md.split("Largest per-head attention changes")[1].splitlines()
    first = next(line for line in top if line.startswith("| no_pe"))
    assert first.startswith("| no_pe | 0 | layer1 | 1 | 0.07407")
    assert "| no_pe | 0.5 | 0.75 | +0.25 |" in md
    page = paths["html"].read_text()
    assert "https://" not in page and "http://" not in page
    assert page.count("<img src='data:image/png;base64,") == 2
    assert paths["no_pe/seed0/layer1"].read_bytes()[:4] == b"\x89PNG"


def test_compare_shape_mismatch_and_missing_summary(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", {"baseline": 0.9})
    b = _run(tmp_path, "b", {"baseline": 0.9})
    att2, mask = _uniform(heads=2)
    att4, _ = _uniform(heads=4)
    _archive(a, "baseline", 1, [att2], mask)
    _archive(b, "baseline", 1, [att4], mask)
    md = compare_runs(a, b, tmp_path / "out")["markdown"].read_text()
    assert "Not comparable" in md and "baseline/seed1/layer0: shapes differ" in md

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="empty"):
        compare_runs(a, empty, tmp_path / "out2")


def test_compare_computes_then_renders_then_writes(tmp_path: Path) -> None:
    """compare() writes nothing; markdown() and page() render what it found; write_comparison
    writes those renderings and the figures."""
    a = _run(tmp_path, "a", {"baseline": 0.9, "no_pe": 0.5})
    b = _run(tmp_path, "b", {"baseline": 0.92, "no_pe": 0.75, "new": 0.1})
    att, mask = _uniform()
    _archive(a, "no_pe", 0, [att], mask)
    _archive(b, "no_pe", 0, [att], mask)
    before = sorted(p for p in tmp_path.rglob("*"))
    c = compare(a, b)
    assert sorted(p for p in tmp_path.rglob("*")) == before
    assert c.medians[-1] == ["new", "–", "0.1", "–"]  # B's new variant after A's
    assert [(key, name) for key, name, _ in c.figures] == [
        ("no_pe/seed0/layer0", "attention_no_pe_seed0_layer0.png")
    ]
    paths = write_comparison(c, tmp_path / "out")
    assert list(paths) == ["no_pe/seed0/layer0", "markdown", "html"]
    assert paths["markdown"].read_text() == markdown(c) and paths["html"].read_text() == page(c)
    assert table_html(MEDIAN_HEADER, c.medians) in page(c)  # the report's table helper
    assert "\n".join(table_md(MEDIAN_HEADER, c.medians)) in markdown(c)


def test_the_table_helpers_escape_and_align() -> None:
    assert table_md(["a", "b"], [["1", "2"]]) == ["| a | b |", "|---|---|", "| 1 | 2 |"]
    assert (
        table_html(["<x>"], [["a&b"]])
        == "<table><tr><th>&lt;x&gt;</th></tr><tr><td>a&amp;b</td></tr></table>"
    )
    assert list_html(["<i>"], "small") == "<ul class='small'><li>&lt;i&gt;</li></ul>"
    assert list_html([]) == "<ul></ul>"
    doc = page_html("a <b>", ["<p>x</p>"])
    assert doc.startswith("<!DOCTYPE html>") and "<title>a &lt;b&gt;</title>" in doc
    assert CSS in doc and doc.endswith("<body><p>x</p></body></html>")


def test_a_broken_heads_json_is_a_config_error_naming_it(tmp_path: Path) -> None:
    att, mask = _uniform()
    _archive(tmp_path, "no_pe", 0, [att], mask)
    assert set(load_heads(tmp_path)["no_pe"][0]) >= {"entropy", "importance"}
    (tmp_path / "heatmaps" / "no_pe" / "seed0" / "heads.json").write_text("{truncated")
    with pytest.raises(ConfigError, match=r"seed0/heads.json is not valid JSON"):
        load_heads(tmp_path)


def _cells(run: Path, values: dict[str, list[float]]) -> None:
    lines = ["variant,seed,state,test/acc"]
    lines += [f"{v},{s},complete,{x}" for v, xs in values.items() for s, x in enumerate(xs)]
    (run / "results.csv").write_text("\n".join(lines) + "\n")


def test_compare_with_a_margin_says_whether_b_is_equivalent_to_a(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", {"baseline": 0.8, "no_pe": 0.5})
    b = _run(tmp_path, "b", {"baseline": 0.8, "no_pe": 0.6})
    base = [0.80, 0.81, 0.79, 0.82, 0.80, 0.78, 0.81]
    _cells(a, {"baseline": base, "no_pe": [0.5] * 7})
    _cells(
        b,
        {
            "baseline": [
                x + d for x, d in zip(base, [0.001, -0.001, 0.002, 0.0, -0.002, 0.001, 0.0], strict=True)
            ],
            "no_pe": [0.6] * 7,
        },
    )
    c = compare(a, b, margin=0.01)
    rows = {r[0]: r for r in c.equivalence}
    assert rows["baseline"][1] == "7 paired" and rows["baseline"][3].startswith("equivalent (p TOST Holm")
    assert rows["no_pe"][3].startswith("not shown")  # moved by +0.1, ten margins
    assert "B equivalent to A within ±0.01?" in markdown(c) and "B equivalent to A within ±0.01?" in page(c)
    assert compare(a, b).equivalence == [] and "within ±" not in markdown(compare(a, b))
    (a / "results.csv").unlink()
    with pytest.raises(ConfigError, match="results.csv is missing: --margin compares the cells"):
        compare(a, b, margin=0.01)
