"""Weights & Biases (runs, the summary run, reports, sweeps) and optuna-dashboard.
May import ``sweeps.stats``, ``sweeps.ledger`` and ``sweeps.report``."""
