"""The Lightning systems around the model: ``LitClassifier`` (steps, metrics, AdamW, warmup and
cosine), the seed-parallel stack, the attention archive callback, the validation curve
callback, the progress bar and the numerics seed factor. May import ``lit_modules.model``."""
