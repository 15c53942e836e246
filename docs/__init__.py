"""The documentation's sources (pages/) and generators (_gen/); not part of the package."""
