"""The dashboard over the real controller (fake clock, in-memory journal), through
TestClient: what the dashboard's unit tests share (the ``ui`` fixture is in ``conftest.py``).

``nobody`` (token ``t-user``) is a plain user; ``root`` (``t-root``) an administrator. A
``Browser`` signs in once with its token and then holds the session cookie, as a browser
does; the loop is run by hand (``run``) between requests.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from phalanx.api.routes import Access, create_app
from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.live.controller import Controller
from phalanx.live.journal import MemoryJournal
from phalanx.policies.catalog import profile
from phalanx.runtime import FakeClock

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

USER = {"Authorization": "Bearer t-user"}
ROOT = {"Authorization": "Bearer t-root"}
START = 1_700_000_000_000
_CSRF = re.compile(r'name="csrf-token" content="([^"]*)"')


@dataclass
class Ui:
    controller: Controller
    clock: FakeClock
    app: Any

    def run(self) -> None:
        self.clock.advance(1)
        self.controller.step()

    def client(self) -> TestClient:
        """A fresh client (a browser of its own: its own cookies), base URL as the host."""
        return TestClient(self.app, base_url="http://testserver", follow_redirects=False)

    def browser(self, token: str) -> tuple[TestClient, str]:
        """A client signed in with ``token`` by ``/ui?token=``, and its CSRF token."""
        client = self.client()
        r = client.get("/ui", params={"token": token})
        assert r.status_code == 303, r.text
        page = client.get("/ui")
        assert page.status_code == 200, page.text
        found = _CSRF.search(page.text)
        assert found is not None
        return client, found.group(1)

    def submit(self, user: str = "nobody", **fields: Any) -> int:
        from phalanx.api.convert import to_spec
        from phalanx.api.wire import JobRequest
        from phalanx.domain.caller import Caller

        fields.setdefault("command", ["/bin/true"])
        spec = to_spec(JobRequest(**fields), Caller(-1, user, False), "/tmp")
        [ids] = self.controller.submit([spec])
        self.run()
        return ids[0]


@contextmanager
def scene(cluster: Cluster | None = None) -> Iterator[Ui]:
    clock = FakeClock(START)
    controller = Controller(
        cluster or regular_cluster(2, 8, 2), profile("phalanx"), MemoryJournal(), clock=clock
    )
    access = Access(
        tokens={"t-user": "nobody", "t-root": "root"},
        owner_uid=0,
        agent_tokens={"t-agent": "gpu001"},
    )
    app = create_app(controller, access)
    with TestClient(app):  # the app's lifespan, as a server runs it
        yield Ui(controller, clock, app)
    app.state.ui_series.stop()
