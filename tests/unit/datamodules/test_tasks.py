"""The task registry (datamodules/tasks/) is where task names live: ``data.task``'s choices, the
fields each task reads and the config reference's line are read from it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from ablate.datamodules.config import DataConfig
from ablate.datamodules.tasks import TASK_NAMES, TASKS, TEXT
from ablate.errors import ConfigError, choices
from tests.helpers.paths import REPO


def test_the_task_choices_are_the_registry_and_text() -> None:
    assert TASK_NAMES == (*TASKS, TEXT) == choices(DataConfig, "task")
    assert tuple(DataConfig.TASK_FIELDS) == TASK_NAMES
    with pytest.raises(ConfigError, match="data.task='nope' is not a valid choice; choose one of 'order', "):
        DataConfig(task="nope")


@pytest.mark.parametrize("name", list(TASKS))
def test_each_task_declares_fields_of_the_data_config(name: str) -> None:
    task = TASKS[name]
    names = {f.name for f in dataclasses.fields(DataConfig)}
    assert set(task.FIELDS) <= names and set(DataConfig.TASK_FIELDS[name]) <= names
    assert isinstance(task.SUMMARY, str) and f"`{name}`" in DataConfig.DOCS["task"]


def test_a_task_module_imports_first_without_a_cycle() -> None:
    """The tasks import DataConfig for annotations only, so either side may be imported first."""
    code = "import ablate.datamodules.tasks.order as o, ablate.datamodules.config as c; print(o.FIELDS)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO.parent)
    assert ran.returncode == 0 and "n_symbols" in ran.stdout, ran.stderr
