"""``python -m models``: see :mod:`models.cli`."""

import sys

try:
    from models.cli import main
except KeyboardInterrupt:  # Ctrl-C while the package loads: the same one line as later
    print("error: interrupted (Ctrl-C); nothing more was written", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
