"""Defaults of the drivers that the command line's help shows. Imports nothing: the CLI builds
its parser from this module before anything heavy loads (lr_check.py imports the specs, numpy)."""

LR_FACTORS = (0.5, 2.0)  # lr-check: the lr factors of the runs beside the experiment's own
DEFAULT_FACTORS = ",".join(f"{f:g}" for f in LR_FACTORS)  # as --factors takes them: "0.5,2"
