"""Configs and experiment specs from YAML, quick grids, the search block and the shipped files.
May import ``experiments.schema``."""
