"""Where a summary.json came from: the code's git commit and the versions of what ran it.

``report()`` stores this as the summary's ``"provenance"``, so that a table made from a
summary (``python -m docs._gen.readme_tables``) can name the code that produced it.
Nothing here may fail a sweep: without git, outside a checkout or on any git error the
commit is None, and a package that is not installed has version None.
"""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

# The repository root of this package (sweeps/report/ sits two levels under it).
ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {
    "ablate": "transformer-ablate",
    "torch": "torch",
    "lightning": "lightning",
    "optuna": "optuna",
}


def _git(*args: str, cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, cwd gone, hung
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit(root: Path = ROOT) -> str | None:
    """``git rev-parse HEAD`` of the checkout at ``root``, + "-dirty" when the tree has changes.

    Changes are what ``git status --porcelain`` lists: modified, staged or untracked (not ignored)
    files. None when ``root`` is not the top of a git checkout (e.g. the package was installed
    into a site-packages folder that happens to lie inside another repository) or git fails.
    """
    top = _git("rev-parse", "--show-toplevel", cwd=root)
    if top is None or Path(top.strip()).resolve() != Path(root).resolve():
        return None
    head = _git("rev-parse", "HEAD", cwd=root)
    status = _git("status", "--porcelain", cwd=root)
    if head is None or status is None:
        return None
    return head.strip() + ("-dirty" if status.strip() else "")


def versions() -> dict[str, str | None]:
    """Versions of ablate (distribution transformer-ablate), torch, lightning, optuna and Python."""
    out: dict[str, str | None] = {}
    for key, dist in DISTRIBUTIONS.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    out["python"] = platform.python_version()
    return out


def provenance(root: Path = ROOT) -> dict[str, Any]:
    """``{"commit": "<sha>[-dirty]" | None, "versions": {...}}`` for summary.json."""
    return {"commit": git_commit(root), "versions": versions()}
