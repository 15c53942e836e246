"""The one cell runner (``run_cells``) and ``ablate train``'s run folder. May import
``experiments.schema`` and ``experiments.specs``."""
