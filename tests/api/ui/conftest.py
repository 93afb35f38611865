"""The ``ui`` fixture of the dashboard's tests (``ui_scene.scene``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ui_scene import Ui, scene


@pytest.fixture
def ui() -> Iterator[Ui]:
    with scene() as found:
        yield found
