"""The files ``ablate wandb-report`` writes into a run folder offline, and reads back with
``--from-spec``. Imports nothing: the CLI names them in its help before anything heavy loads
(wandb_report.py imports wandb-workspaces, the report's statistics, scipy)."""

REPORT_FILE = "wandb-report.json"  # the W&B Report's spec (wandb_report.py)
WORKSPACE_FILE = "wandb-workspace.json"  # the project workspace's spec (wandb_workspace.py)
