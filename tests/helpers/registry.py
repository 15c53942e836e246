"""Components registered inside a test, gone after it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def isolated_registry() -> Iterator[None]:
    """The components registered inside are gone after it (the tables and the plugin modules as
    they were), so that the built-in lists other tests pin stay the built-ins."""
    from ablate.lit_modules.components import plugins
    from ablate.lit_modules.model import kinds

    tables = {kind: dict(table) for kind, table in kinds.TABLES.items()}
    modules = set(sys.modules)
    try:
        yield
    finally:
        for kind, table in kinds.TABLES.items():
            table.clear()
            table.update(tables[kind])
        for name in set(sys.modules) - modules:
            if name.startswith(plugins.FILE_PREFIX):
                del sys.modules[name]
