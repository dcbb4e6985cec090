"""``python -m claimcheck.cli``: the ``claimcheck`` command."""

import sys

from claimcheck.cli import main

sys.exit(main())
