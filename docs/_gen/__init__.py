"""Generators of the docs' generated pages (results tables, calibration tables, reference; blocks.py
rewrites a page's generated block); not shipped in the wheel."""
