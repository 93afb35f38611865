"""The live stack on this machine, wired once for the tests that run real processes."""

from __future__ import annotations

import pytest

from phalanx.testing import LiveStack, live_stack


@pytest.fixture
def live() -> LiveStack:
    return live_stack()
