"""``python -m worker.cli``: the ``curator`` command."""

import sys

from worker.cli import main

sys.exit(main())
