"""The shipped configs, presets, README and docs site stay in step with the code.

The end-to-end half (trains, or starts processes or servers); the in-process tests are
tests/unit/docs/test_docs.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.readme import assert_printed, quoted_verdicts, run_numerics
from tests.unit.docs.test_docs import DOCS, readme_block


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    """mkdocs (dev extra) builds the site with --strict: every internal link and anchor resolves."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = tmp_path / "site"
    build = ["mkdocs", "build", "--strict", "-f", str(DOCS / "mkdocs.yml"), "-d", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor
    built = subprocess.run(
        [sys.executable, "-m", *build], capture_output=True, text=True, timeout=300, env=env
    )
    assert built.returncode == 0, built.stdout + built.stderr
    for page in ("index", "reference/config", "reference/cli", "reference/python-api", "results/index"):
        assert (site / f"{page}.html").is_file(), f"{page}.html not built"
    config = (site / "reference" / "config.html").read_text()
    assert "model.d_model" in config and "trainer.seed_parallel" in config
    assert "ablate lr-check" in (site / "reference" / "cli.html").read_text()


def test_readme_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's Python API example, run as it is from an empty folder (it writes its own files)."""
    import ablate

    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(readme_block("python-example"), "README.md (python-example)", "exec"), namespace)  # noqa: S102
    summary = ablate.load_summary(tmp_path / "runs" / "order-api")
    assert set(summary["variants"]) == {"baseline", "no_pe", "single_head"}
    assert summary["cells"]["complete"] == summary["cells"]["total"] == 21
    printed = capsys.readouterr().out
    assert_printed(quoted_verdicts("python-example-verdict"), printed, run_numerics(summary))
    assert 0.0 <= namespace["result"].metrics["test/acc"] <= 1.0  # type: ignore[attr-defined]
    with pytest.raises(ablate.ConfigError, match="summary.json"):
        ablate.load_summary(tmp_path)
