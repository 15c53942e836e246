"""Orchestration of ablation studies, in rooms by job. Each room may import the rooms before it
in this order (and ``errors``, ``lit_modules``, ``datamodules``, ``experiments``), never one after:

1. ``stats``: pure statistics of typed rows and arrays (no spec, no storage, no I/O);
2. ``ledger``: the study on Optuna storage: cells, claims, journal, study file, identity,
   run folder, search studies, what optuna-dashboard shows;
3. ``report``: a study's summary and every file that shows it;
4. ``integrations``: Weights & Biases and optuna-dashboard;
5. ``drivers``: the drivers and workers: grid, search, adaptive seeds, lr check, launchers.

tests/unit/test_layers.py holds this order.
"""
