"""The ``ablate`` command line (also ``python -m ablate``): parser.py builds it and runs ``main``,
commands.py holds what each subcommand does, tables.py what they print, checks.py the checks of
the command line's own inputs. May import every other package of ``ablate`` but ``benchmarks``.
"""

from ablate.cli.parser import EXIT_USAGE, build_parser, main

__all__ = ["EXIT_USAGE", "build_parser", "main"]
