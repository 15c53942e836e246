"""Start a worker module with the driver's own code: ``python -P /abs/.../sweeps/entry.py MODULE ARGS``.

``python -m ablate.sweeps.drivers.worker`` would put the current folder first on ``sys.path``: run from
a folder that holds its own ``ablate/`` package (or an ``optuna.py``), the workers would import
that instead of the code the driver runs. This file is started by its absolute path with ``-P``
(neither the current folder nor the script's folder goes on ``sys.path``), loads the package
``ablate`` from the folder it lives in, then runs ``MODULE`` as ``__main__``. It uses only the
standard library before that, so nothing else can be picked up on the way.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path


def load_package(root: Path) -> None:
    """Import the package ``ablate`` from ``root`` (its ``__init__.py``); subpackages follow it."""
    spec = importlib.util.spec_from_file_location(
        "ablate", root / "__init__.py", submodule_search_locations=[str(root)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["ablate"] = package
    spec.loader.exec_module(package)


def main() -> None:
    load_package(Path(__file__).resolve().parents[2])
    module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
