"""Data as Hugging Face ``datasets``: synthetic tasks and text classification, one DataModule."""

from datamodules.datamodule import ClassificationDataModule
from datamodules.text import DataError

__all__ = ["ClassificationDataModule", "DataError"]
