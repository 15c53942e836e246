"""One table per config class (errors.py ``setting`` and ``documented``): a field's meaning and
valid range are written once, with the field, and DOCS, RANGES and the checks read them."""

from __future__ import annotations

import dataclasses

import pytest

from ablate.errors import ConfigError, Range, documented, setting, validate_fields
from ablate.experiments.schema.config import SECTIONS, TrainConfig


@documented
@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Tiny:
    SECTION = "tiny"

    width: int = setting(4, "how wide", Range(1, 8))
    name: str = setting("a", "what it is called")
    note: str | None = setting(None, "a remark")

    def __post_init__(self) -> None:
        validate_fields(self)


def test_documented_gathers_docs_and_ranges_in_field_order() -> None:
    docs, ranges = Tiny.DOCS, Tiny.RANGES
    assert docs == {"width": "how wide", "name": "what it is called", "note": "a remark"}
    assert ranges == {"width": Range(1, 8)}
    assert Tiny().width == 4 and Tiny(width=8).width == 8
    with pytest.raises(ConfigError, match=r"tiny.width=9 is out of range; valid: \[1, 8\]"):
        Tiny(width=9)


@pytest.mark.parametrize("cls", [*SECTIONS.values(), TrainConfig], ids=lambda c: c.__name__)
def test_every_config_class_reads_its_tables_from_its_fields(cls: type) -> None:
    fields, docs, ranges = dataclasses.fields(cls), cls.DOCS, cls.RANGES  # TrainConfig: factories
    assert docs == {f.name: f.metadata["doc"] for f in fields}
    assert ranges == {f.name: f.metadata["range"] for f in fields if "range" in f.metadata}
