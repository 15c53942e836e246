"""The study on Optuna storage: cells and their claims, storage and journal, the study file,
the study's identity, run folders, search studies and the dashboard's view of a study.
May import ``sweeps.stats``."""
