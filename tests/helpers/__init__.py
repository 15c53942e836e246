"""What the tests share besides fixtures: paths, tiny configs, sweep and row builders, the forked
CLI harness and a throwaway PostgreSQL. Import from here (``from tests.helpers.configs import
TINY_BASE``); fixtures live in tests/conftest.py, which no test imports."""
