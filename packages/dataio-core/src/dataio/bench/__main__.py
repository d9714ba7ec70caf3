"""``python -m dataio.bench``: see ``dataio.bench``."""

import sys

from .cli import main

sys.exit(main())
