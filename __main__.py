"""``python -m ablate ...``: the ``ablate`` command."""

import sys

from ablate.cli import main

sys.exit(main())
