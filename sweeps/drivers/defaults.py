"""Defaults of the drivers that the command line's help shows. Imports nothing: the CLI builds
its parser from this module before anything heavy loads (lr_check.py imports the specs, numpy)."""

DEFAULT_FACTORS = "0.5,2"  # lr-check: the lr factors of the runs beside the experiment's own
