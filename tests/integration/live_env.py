"""What the integration tests give their jobs: this process's PATH (no other variable)."""

from __future__ import annotations

import os


def env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
