"""ablate: trustworthy ablations of transformer encoder classifiers.

One import name for the whole suite: ``ablate.lit_modules`` (model and Lightning systems),
``ablate.datamodules`` (data), ``ablate.experiments`` (configs, specs, the one cell runner),
``ablate.sweeps`` (statistics, ledger, reports, integrations, drivers), ``ablate.cli`` (the
``ablate`` command, also ``python -m ablate``). The Python API (``ablate.load_config``,
``run_trial``, ``load_spec``, ``sweep``, ``load_summary``, ``cells``, ``search``, ``reproduce``,
...; see ``api.py``) is imported on first use, so ``import ablate`` stays cheap.
"""

# The Python API (api.py), imported on first use (PEP 562) so that ``import ablate`` stays cheap.
_API = ("ConfigError", "ExperimentSpec", "TrainConfig", "TrialResult", "load_config", "load_spec")
_API += ("load_summary", "run_trial", "sweep", "search", "tuned_spec", "lr_check", "reproduce", "report")
_API += ("power", "aggregate", "compare", "cells")
__all__ = list(_API)


def __getattr__(name: str) -> object:
    if name in _API:
        from ablate import api

        return getattr(api, name)
    raise AttributeError(f"module 'ablate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
