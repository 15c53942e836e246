"""A study's summary and the files that show it (summary.json, results.csv, report.md/html,
compare, power, across tasks). May import ``sweeps.stats`` and ``sweeps.ledger``."""
