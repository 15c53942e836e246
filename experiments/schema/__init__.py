"""``TrainConfig`` and the rules every config shares. May import ``lit_modules`` and
``datamodules`` (their configs); nothing of ``experiments`` above it."""
