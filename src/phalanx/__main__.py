"""``python -m phalanx``: the same command as the ``phalanx`` entry point."""

from __future__ import annotations

import sys

from phalanx.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
