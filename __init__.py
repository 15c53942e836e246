"""ablate: trustworthy ablations of transformer encoder classifiers.

One import name for the whole suite: ``ablate.lit_modules`` (model and Lightning systems),
``ablate.datamodules`` (data), ``ablate.experiments`` (configs, specs, the one cell runner),
``ablate.sweeps`` (grid, search, statistics, reports), ``ablate.cli`` (the ``ablate`` command,
also ``python -m ablate``). Nothing is imported here, so ``import ablate`` stays cheap.
"""
