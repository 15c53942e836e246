"""What a run is, in rooms by job. Each room may import the rooms before it in this order (and
``errors``, ``files``, ``lit_modules``, ``datamodules``), never one after:

1. ``schema``: ``TrainConfig`` and the rules every config shares (parsing, ranges, seeds, the
   machine's numerics and a pinned CPU ISA, the memory a cell needs);
2. ``specs``: reading configs and experiment specs from YAML, quick grids from the command line,
   the search block, and the shipped files found by name;
3. ``runner``: ``run_cells``, the one function that trains and evaluates (config, seeds), and
   ``ablate train``'s run folder.

``configs/`` is data, not code: the shipped train configs, ``ablations/`` (experiment specs) and
``presets/`` (what ``ablate reproduce`` runs). tests/unit/test_layers.py holds this order.
"""
