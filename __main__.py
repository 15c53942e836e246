"""``python -m ablate ...``: the ``ablate`` command."""

import sys

from ablate.cli.parser import main

sys.exit(main())
