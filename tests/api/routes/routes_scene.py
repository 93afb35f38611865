"""The REST API over the real controller (fake clock, in-memory journal), through TestClient:
what the route tests share (``Api``; the ``api`` fixture is in ``conftest.py``).

TestClient's connections carry no peer credentials: every caller is known by its bearer
token. ``nobody`` is a plain user; ``root`` an administrator. The controller's loop is run by
hand (``controller.step()``) between requests.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.routes import Access, create_app
from phalanx.config.clusterspec import regular_cluster
from phalanx.live.controller import Controller
from phalanx.live.journal import MemoryJournal
from phalanx.policies.catalog import profile
from phalanx.protocol.agent import AgentHello
from phalanx.runtime import FakeClock

with warnings.catch_warnings():
    # Starlette asks for its httpx2 fork when plain httpx is what is installed; the test
    # client works the same with either, and warnings are errors in this suite.
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

USER = {"Authorization": "Bearer t-alice"}
ROOT = {"Authorization": "Bearer t-root"}
CMD = ["/bin/true"]
START = 1_700_000_000_000


@dataclass
class Api:
    client: TestClient
    controller: Controller
    journal: MemoryJournal
    clock: FakeClock
    taken: dict[str, int] = field(default_factory=dict)
    """node -> the last command seq its agent took (``commands``)."""

    def submit(self, headers: dict[str, str] = USER, **fields: Any) -> list[int]:
        fields.setdefault("command", CMD)
        r = self.client.post("/v1/jobs", json=fields, headers=headers)
        assert r.status_code == 201, r.text
        [ids] = r.json()["job_ids"]
        self.run()
        return list(ids)

    def run(self) -> None:
        """Run the loop 1 ms later: an input is stamped after the last event handled."""
        self.clock.advance(1)
        self.controller.step()

    def jobs(self, headers: dict[str, str] = USER, **params: Any) -> list[dict[str, Any]]:
        r = self.client.get("/v1/jobs", params=params, headers=headers)
        assert r.status_code == 200, r.text
        return list(r.json()["jobs"])

    def state(self, job_id: int) -> str:
        r = self.client.get(f"/v1/jobs/{job_id}", headers=USER)
        assert r.status_code == 200, r.text
        return str(r.json()["state"])

    def agents(self) -> None:
        """An agent (boot ``b``, epoch 1) on every node."""
        for node in self.controller.cluster.nodes:
            self.controller.register(
                AgentHello(node=node.name, boot_id="b", cpus=64, memory_mb=1024, gpus=8)
            )

    def commands(self, node: str, **health: Any) -> list[dict[str, Any]]:
        """What the agent of ``node`` (boot ``b``, epoch 1) is told to do since it last
        asked (it carried out every command it was given before)."""
        after = self.taken.get(node, 0)
        params = {"boot_id": "b", "epoch": 1, "wait": 0, "after": after, **health}
        r = self.client.get(f"/v1/agents/{node}/commands", params=params, headers=ROOT)
        assert r.status_code == 200, r.text
        out = list(r.json()["commands"])
        self.taken[node] = max([after, *(c["seq"] for c in out)])
        return out

    def finish(self, job_id: int, exit_code: int = 0) -> None:
        """Every node of the job's run reports its end, as agents would."""
        job = self.controller.job(job_id)
        assert job.alloc is not None
        nodes = [self.controller.cluster.nodes[i].name for i in job.alloc.nodes]
        report = {"job_id": job_id, "run": job.run, "state": "exited", "exit_code": exit_code}
        for node in nodes:
            agent = self.controller.fleet.registry.agents[node]
            if not agent.registered:  # agents on every node, as they would be
                self.controller.register(
                    AgentHello(node=node, boot_id="b", cpus=64, memory_mb=1024, gpus=8)
                )
            r = self.client.post(
                f"/v1/agents/{node}/reports",
                json={"boot_id": agent.boot_id, "epoch": agent.epoch, "reports": [report]},
                headers=ROOT,
            )
            assert r.status_code == 200, r.text
        assert r.json()["acked"] == [[job_id, job.run]]
        self.run()


@contextmanager
def serve(controller: Controller, access: Access) -> Iterator[TestClient]:
    """The API of ``controller`` through a test client."""
    with TestClient(create_app(controller, access)) as client:
        yield client


@contextmanager
def scene() -> Iterator[Api]:
    """A 2-node, 8-GPU cluster; ``nobody`` (``USER``) and ``root`` (``ROOT``) call."""
    clock = FakeClock(START)
    journal = MemoryJournal()
    controller = Controller(regular_cluster(2, 8, 2), profile("phalanx"), journal, clock=clock)
    access = Access(tokens={"t-alice": "nobody", "t-root": "root"}, owner_uid=0)
    with serve(controller, access) as client:
        yield Api(client, controller, journal, clock)
