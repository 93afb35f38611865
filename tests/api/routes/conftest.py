"""The ``api`` fixture of the route tests (``routes_scene.scene``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from routes_scene import Api, scene


@pytest.fixture
def api() -> Iterator[Api]:
    with scene() as api:
        yield api
