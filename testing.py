"""Test helpers for your own components (``ablate.testing``), the checks of
``ablate check-component``::

    import ablate.testing

    def test_scalenorm_keeps_the_contracts():
        ablate.testing.assert_conforms("norm", "scalenorm", plugins=["my_norm.py"])
"""

from __future__ import annotations

from ablate.lit_modules.components.conformance import Result, check
from ablate.lit_modules.components.plugins import import_plugins

__all__ = ["Result", "assert_conforms", "check_component"]


def check_component(kind: str, name: str, plugins: list[str] | tuple[str, ...] = ()) -> list[Result]:
    """Import ``plugins``, then run every contract of the conformance kit on the component."""
    import_plugins([*plugins])
    return check(kind, name, plugins)


def assert_conforms(kind: str, name: str, plugins: list[str] | tuple[str, ...] = ()) -> None:
    """AssertionError naming every broken contract, one line each."""
    broken = [r.line() for r in check_component(kind, name, plugins) if r.ok is False]
    assert not broken, f"the {kind} component {name!r} breaks:\n" + "\n".join(broken)
