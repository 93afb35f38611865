"""``python -m phalanx.commandserver SOCKET [--parent-fd FD]``."""

import sys

from phalanx.commandserver.server import main

sys.exit(main())
