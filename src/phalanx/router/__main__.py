"""``python -m phalanx.router``: see ``phalanx.router``."""

import sys

from phalanx.router.main import main

sys.exit(main())
