"""Generators of the docs' generated pages (results tables, reference); not shipped in the wheel."""
