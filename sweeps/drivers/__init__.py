"""Drivers and workers: the grid, the search, adaptive seeds, the lr check, the worker loop and
the launchers. May import every other room of ``sweeps``."""
