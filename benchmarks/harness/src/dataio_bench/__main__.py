"""``python -m dataio_bench``: see ``dataio_bench``."""

import sys

from .cli import main

sys.exit(main())
