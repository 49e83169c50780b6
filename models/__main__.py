"""``python -m models``: see :mod:`models.cli`."""

import sys

from models.cli import main

sys.exit(main())
