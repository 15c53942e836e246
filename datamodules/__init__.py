"""Data as Hugging Face ``datasets``: synthetic tasks and text classification, one DataModule.

Imported lazily so that config validation (and its error messages) does not
wait for lightning and datasets to import.
"""

from typing import Any

__all__ = ["ClassificationDataModule", "DataError"]


def __getattr__(name: str) -> Any:
    if name == "ClassificationDataModule":
        from ablate.datamodules.datamodule import ClassificationDataModule

        return ClassificationDataModule
    if name == "DataError":
        from ablate.datamodules.text import DataError

        return DataError
    raise AttributeError(name)
