"""Test-wide settings: CI replays the same hypothesis examples on every run."""

from __future__ import annotations

import os

from hypothesis import settings

# Locally, each run explores new examples (and keeps failures in .hypothesis/ to replay);
# in CI (CI=true) the examples are derived from the test itself, so a run is repeatable.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
