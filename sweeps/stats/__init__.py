"""Statistics of an ablation: pure functions of typed rows and arrays. Imports nothing from
``ablate`` but ``errors``."""
