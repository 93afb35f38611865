"""The REST API over the real controller (fake clock, in-memory journal), through TestClient.

TestClient's connections carry no peer credentials: every caller is known by its bearer
token. ``nobody`` is a plain user; ``root`` an administrator. The controller's loop is run by
hand (``controller.step()``) between requests.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from phalanx.api.routes import Access, create_app
from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.time import MINUTE
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

    def finish(self, job_id: int, exit_code: int = 0) -> None:
        """Every node of the job's run reports its end, as agents would."""
        job = self.controller.job(job_id)
        assert job.alloc is not None
        nodes = [self.controller.cluster.nodes[i].name for i in job.alloc.nodes]
        report = {"job_id": job_id, "run": job.run, "state": "exited", "exit_code": exit_code}
        for node in nodes:
            agent = self.controller.fleet.agents[node]
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


@pytest.fixture
def api() -> Iterator[Api]:
    clock = FakeClock(START)
    journal = MemoryJournal()
    controller = Controller(regular_cluster(2, 8, 2), profile("phalanx"), journal, clock=clock)
    app = create_app(
        controller, Access(tokens={"t-alice": "nobody", "t-root": "root"}, owner_uid=0)
    )
    with TestClient(app) as client:
        yield Api(client, controller, journal, clock)


# ---------------------------------------------------------------------------- who is asking


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic t-alice"},
        {"Authorization": "t-alice"},
    ],
)
def test_unknown_callers_are_refused(api: Api, headers: dict[str, str]) -> None:
    for method, path in [("GET", "/v1/jobs"), ("POST", "/v1/jobs"), ("GET", "/v1/nodes")]:
        r = api.client.request(method, path, headers=headers, json={"command": CMD})
        assert r.status_code == 401
        assert "token" in r.json()["error"]
    assert api.journal.events == []


def test_ping_needs_no_token(api: Api) -> None:
    r = api.client.get("/v1/ping")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "controller_id": api.controller.id}


# ---------------------------------------------------------------------------- submit


def test_submit_one(api: Api) -> None:
    r = api.client.post("/v1/jobs", json={"command": CMD, "gpus_per_task": 8}, headers=USER)
    assert r.status_code == 201
    assert r.json() == {"job_ids": [[1]]}
    api.run()
    [job] = api.jobs()
    assert job["job_id"] == 1
    assert job["user"] == "nobody"  # the caller, known from the token
    assert job["state"] == "RUNNING"
    assert job["gpus"] == 8.0


def test_submit_a_batch_with_an_array(api: Api) -> None:
    r = api.client.post(
        "/v1/jobs/batch",
        json={"jobs": [{"command": CMD}, {"command": CMD, "array": "0-2"}, {"command": CMD}]},
        headers=USER,
    )
    assert r.status_code == 201
    assert r.json() == {"job_ids": [[1], [2, 3, 4], [5]]}
    api.run()
    assert [j["job_id"] for j in api.jobs()] == [1, 2, 3, 4, 5]
    tasks = [(j["array_job_id"], j["array_task_id"]) for j in api.jobs(ids="2")]
    assert tasks == [(2, 0), (2, 1), (2, 2)]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"command": CMD, "time": "soon"}, "time"),
        ({"command": CMD, "partition": "nope"}, "partition"),
        ({"command": CMD, "gpus_per_task": 9}, "resources"),  # 8-GPU nodes
        ({"command": CMD, "nodes": "2", "gpus_per_task": 9}, "resources"),
        ({"command": CMD, "mem": "4X"}, "mem"),
        ({"command": CMD, "array": "0-5000"}, "array"),
        ({"command": CMD, "dependency": "afterok:1?afterok:2"}, "dependency"),
        ({"command": CMD, "workdir": "rel"}, "workdir"),
        ({}, "command"),
        ({"command": []}, "command"),
        ({"command": CMD, "gpus_per_task": -1}, "gpus_per_task"),
        ({"command": CMD, "unknown": 1}, "unknown"),
    ],
)
def test_bad_submissions_name_the_field(api: Api, body: dict[str, Any], field: str) -> None:
    r = api.client.post("/v1/jobs", json=body, headers=USER)
    assert r.status_code == 422, r.text
    answer = r.json()
    assert answer["field"] == field
    assert isinstance(answer["error"], str) and answer["error"]
    assert api.journal.events == []
    api.run()
    assert api.jobs(all="true") == []


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"command": CMD, "time": "soon"}, "jobs.1.time"),
        ({"command": CMD, "gpus_per_task": 9}, "jobs.1.resources"),
        ({"command": CMD, "partition": "nope"}, "jobs.1.partition"),
        ({}, "jobs.1.command"),
    ],
)
def test_a_bad_job_in_a_batch_refuses_the_batch(api: Api, bad: dict[str, Any], field: str) -> None:
    body = {"jobs": [{"command": CMD}, bad, {"command": CMD}]}
    r = api.client.post("/v1/jobs/batch", json=body, headers=USER)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert api.journal.events == []  # nothing of the batch was queued
    api.run()
    assert api.jobs(all="true") == []


def test_what_slurm_queues_without_enforcement_is_queued(api: Api) -> None:
    # An unknown QOS (no AccountingStorageEnforce=qos) runs under "normal" and keeps its name;
    # more nodes than the partition has (no EnforcePartLimits) waits for PartitionConfig.
    [gold] = api.submit(qos="gold")
    [big] = api.submit(nodes="3")
    detail = api.client.get(f"/v1/jobs/{big}", headers=USER).json()
    assert (detail["state"], detail["reason"]) == ("PENDING", "PartitionConfig")
    detail = api.client.get(f"/v1/jobs/{gold}", headers=USER).json()
    assert (detail["state"], detail["qos"]) == ("RUNNING", "gold")


@pytest.mark.parametrize(
    ("body", "field"),
    [({"command": CMD, "qos": "nope"}, "qos"), ({"command": CMD, "nodes": "3"}, "nodes")],
)
def test_an_enforcing_cluster_refuses_unknown_qos_and_partition_limits(
    body: dict[str, Any], field: str
) -> None:
    cluster = dataclasses.replace(
        regular_cluster(2, 8, 2), enforce_part_limits=True, enforce_qos=True
    )
    controller = Controller(cluster, profile("phalanx"), MemoryJournal(), clock=FakeClock(START))
    app = create_app(controller, Access(tokens={"t-alice": "nobody"}, owner_uid=0))
    with TestClient(app) as client:
        r = client.post("/v1/jobs", json=body, headers=USER)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


def test_a_full_journal_refuses_submissions_with_507(api: Api) -> None:
    api.journal.fail = True
    r = api.client.post("/v1/jobs", json={"command": CMD}, headers=USER)
    assert r.status_code == 507
    assert "submissions refused" in r.json()["error"]
    r = api.client.post("/v1/jobs/batch", json={"jobs": [{"command": CMD}]}, headers=USER)
    assert r.status_code == 507
    api.run()
    assert api.jobs(all="true") == []
    assert api.controller.loop.next_due() is None
    # Once the journal takes writes again, the ids are the ones never handed out.
    api.journal.fail = False
    assert api.submit() == [1]


# ---------------------------------------------------------------------------- queries


def test_job_list_filters(api: Api) -> None:
    [a] = api.submit(gpus_per_task=8, nodes="2", time="10")  # takes the whole cluster
    [b] = api.submit(headers=ROOT, gpus_per_task=1)
    c = api.submit(array="0-2", gpus_per_task=1)
    [d] = api.submit(headers=ROOT, hold=True)
    api.client.delete(f"/v1/jobs/{d}", headers=ROOT)
    api.run()
    assert api.state(a) == "RUNNING" and api.state(b) == "PENDING"
    assert api.state(d) == "CANCELLED"

    def ids(**params: Any) -> list[int]:
        return [j["job_id"] for j in api.jobs(**params)]

    assert ids() == [a, b, *c]  # finished jobs only with all
    assert ids(all="true") == [a, b, *c, d]
    assert ids(state="RUNNING") == [a]
    assert ids(state="pending") == [b, *c]
    assert ids(state="CANCELLED") == [d]
    assert ids(state="RUNNING,CANCELLED") == [a, d]
    assert ids(user="root") == [b]
    assert ids(user="root", all="true") == [b, d]
    assert ids(user="nobody") == [a, *c]
    assert ids(partition="gpu") == [a, b, *c]
    assert ids(partition="other") == []
    assert ids(ids=f"{b},{a}") == [b, a]
    assert ids(ids=str(c[0])) == c  # an array job id lists its tasks
    assert ids(ids="999") == []


def test_job_table_is_the_job_list_as_rows(api: Api) -> None:
    [a] = api.submit(gpus_per_task=8, nodes="2", time="10")
    [b] = api.submit(headers=ROOT, gpus_per_task=1)
    c = api.submit(array="0-2", gpus_per_task=1)
    [d] = api.submit(headers=ROOT, hold=True)
    api.client.delete(f"/v1/jobs/{d}", headers=ROOT)
    api.run()

    def table(**params: Any) -> list[dict[str, Any]]:
        r = api.client.get("/v1/jobs/table", params=params, headers=USER)
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"fields", "rows"}
        return [dict(zip(body["fields"], row, strict=True)) for row in body["rows"]]

    assert table() == api.jobs()  # every field by default
    assert table(all="true", user="root") == api.jobs(all="true", user="root")
    some = table(fields="state,job_id,nodelist,job_id", state="RUNNING,PENDING", partition="gpu")
    assert some == [
        {k: j[k] for k in ("state", "job_id", "nodelist")}
        for j in api.jobs(state="RUNNING,PENDING", partition="gpu")
    ]
    assert [j["job_id"] for j in some] == [a, b, *c]
    assert table(fields="job_id", ids=f"{c[0]}_1,{d}", all="true") == [
        {"job_id": c[1]},
        {"job_id": d},
    ]
    r = api.client.get("/v1/jobs/table", params={"fields": "job_id,colour"}, headers=USER)
    assert r.status_code == 422
    assert r.json()["field"] == "fields" and "colour" in r.json()["error"]
    assert api.client.get("/v1/jobs/table").status_code == 401


def test_bad_ids_are_refused(api: Api) -> None:
    r = api.client.get("/v1/jobs", params={"ids": "1,x"}, headers=USER)
    assert r.status_code == 422
    assert r.json()["field"] == "ids"


def test_job_list_by_array_task_id(api: Api) -> None:
    tasks = api.submit(array="0-2")
    one = [j["job_id"] for j in api.jobs(ids=f"{tasks[0]}_1")]
    assert one == [tasks[1]]


def test_one_job(api: Api) -> None:
    [a] = api.submit(name="one", comment="hi")
    r = api.client.get(f"/v1/jobs/{a}", headers=USER)
    assert r.status_code == 200
    info = r.json()
    assert (info["job_id"], info["name"], info["comment"]) == (a, "one", "hi")
    assert info["command"] == CMD and info["workdir"] == "/nonexistent"  # nobody's home


def test_unknown_job_is_404(api: Api) -> None:
    r = api.client.get("/v1/jobs/999", headers=USER)
    assert r.status_code == 404
    assert r.json() == {"error": "no job 999", "field": None}
    assert api.client.delete("/v1/jobs/999", headers=ROOT).status_code == 404


# ---------------------------------------------------------------------------- cancel


def test_cancel_ownership(api: Api) -> None:
    [mine] = api.submit(gpus_per_task=1)
    [roots] = api.submit(headers=ROOT, gpus_per_task=1)
    [other] = api.submit(gpus_per_task=1)

    r = api.client.delete(f"/v1/jobs/{roots}", headers=USER)
    assert r.status_code == 403
    assert "root" in r.json()["error"]
    assert api.journal.events[-1].__class__.__name__ == "Submit"  # nothing journaled

    r = api.client.delete(f"/v1/jobs/{mine}", headers=USER)
    assert r.status_code == 200
    assert r.json() == {"cancelled": [mine]}

    r = api.client.delete(f"/v1/jobs/{other}", headers=ROOT)  # root may cancel anyone's
    assert r.status_code == 200
    assert r.json() == {"cancelled": [other]}
    api.run()
    assert api.state(roots) == "RUNNING"


def test_cancel_of_a_pending_job_ends_it_and_again_cancels_nothing(api: Api) -> None:
    [mine] = api.submit(hold=True)
    assert api.state(mine) == "PENDING"
    assert api.client.delete(f"/v1/jobs/{mine}", headers=USER).json() == {"cancelled": [mine]}
    api.run()
    assert api.state(mine) == "CANCELLED"
    assert api.client.delete(f"/v1/jobs/{mine}", headers=USER).json() == {"cancelled": []}


def test_cancel_of_an_array_cancels_every_task(api: Api) -> None:
    tasks = api.submit(array="0-3", hold=True)
    r = api.client.delete(f"/v1/jobs/{tasks[0]}", headers=USER)
    assert r.json() == {"cancelled": tasks}
    api.run()
    assert {api.state(t) for t in tasks} == {"CANCELLED"}


# ---------------------------------------------------------------------------- cluster


def test_nodes(api: Api) -> None:
    for node in api.controller.cluster.nodes:  # agents on every node
        api.controller.register(
            AgentHello(node=node.name, boot_id="b", cpus=64, memory_mb=1024, gpus=8)
        )
    api.submit(gpus_per_task=8)  # best fit: one node full
    r = api.client.get("/v1/nodes", headers=USER)
    assert r.status_code == 200
    nodes = r.json()
    assert [n["name"] for n in nodes] == ["gpu001", "gpu002"]
    by_state = sorted(n["state"] for n in nodes)
    assert by_state == ["allocated", "idle"]
    for n in nodes:
        assert n["gpus"] == 8 and n["gpu_model"] == "A100"
        assert n["partitions"] == ["gpu"] and n["leaf"] == "leaf01"
        assert n["agent"] is True and n["reason"] == ""
    assert sorted(n["gpus_alloc"] for n in nodes) == [0.0, 8.0]


def test_a_partly_used_node_is_mixed(api: Api) -> None:
    api.submit(gpus_per_task=3)
    states = sorted(n["state"] for n in api.client.get("/v1/nodes", headers=USER).json())
    assert states == ["idle", "mixed"]


def test_partitions(api: Api) -> None:
    r = api.client.get("/v1/partitions", headers=USER)
    assert r.status_code == 200
    assert r.json() == [
        {
            "name": "gpu",
            "nodes": ["gpu001", "gpu002"],
            "default": True,
            "max_time_ms": None,
            "default_time_ms": None,
            "priority_tier": api.controller.cluster.partitions["gpu"].priority_tier,
        }
    ]


# ---------------------------------------------------------------------------- accounting


def test_accounting_lists_jobs_once_they_end(api: Api) -> None:
    [ran] = api.submit(gpus_per_task=2)
    [waits] = api.submit(hold=True)
    assert api.client.get("/v1/accounting", headers=USER).json() == []
    api.clock.advance(MINUTE)
    ended_at = api.clock.now()
    api.finish(ran, exit_code=3)
    api.client.delete(f"/v1/jobs/{waits}", headers=USER)
    api.run()
    r = api.client.get("/v1/accounting", headers=USER)
    assert r.status_code == 200
    records = {rec["job_id"]: rec for rec in r.json()}
    assert set(records) == {ran, waits}
    assert records[ran]["state"] == "FAILED"
    assert records[ran]["exit_code"] == 3
    assert records[ran]["start"] == START
    assert records[ran]["end"] == ended_at  # no epilog: the end is the report
    assert records[ran]["gpus"] == 2.0 and records[ran]["nodelist"].startswith("gpu00")
    assert records[waits]["state"] == "CANCELLED" and records[waits]["start"] is None
    assert records[ran]["user"] == "nobody"
    by_id = api.client.get("/v1/accounting", params={"ids": str(ran)}, headers=USER).json()
    assert [rec["job_id"] for rec in by_id] == [ran]
    assert api.client.get("/v1/accounting", params={"user": "root"}, headers=USER).json() == []
    later = api.clock.now() + 1
    assert api.client.get("/v1/accounting", params={"since": later}, headers=USER).json() == []


# ---------------------------------------------------------------------------- metrics


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_metrics(api: Api) -> None:
    api.submit(gpus_per_task=8, nodes="2")
    api.submit(gpus_per_task=1)
    r = api.client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'phalanx_pending_jobs{reason="Resources"} 1.0' in text
    assert 'phalanx_pending_jobs{reason="Priority"} 0.0' in text
    assert _metric(text, "phalanx_running_jobs") == 1.0
    assert _metric(text, "phalanx_eta_sched") == 1.0  # nothing booked yet
    assert _metric(text, "phalanx_theta_overhead") == 0.0
    assert _metric(text, "phalanx_gpus_allocated") == 16.0
    assert _metric(text, "phalanx_gpus_total") == 16.0
    assert _metric(text, "phalanx_submissions_total") == 2.0
    assert "phalanx_scheduling_pass_seconds_bucket" in text


# ---------------------------------------------------------------------------- agents


def test_agent_endpoints_need_an_administrator(api: Api) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    reports = {"boot_id": "b1", "reports": []}
    calls = [
        ("POST", "/v1/agents/register", hello),
        ("GET", "/v1/agents/gpu001/commands?wait=0&boot_id=b1&epoch=1", None),
        ("POST", "/v1/agents/gpu001/reports", reports),
    ]
    for method, path, body in calls:
        r = api.client.request(method, path, json=body, headers=USER)
        assert r.status_code == 403, path
        assert "administrator" in r.json()["error"]
        assert api.client.request(method, path, json=body).status_code == 401
    assert not api.controller.agent_registered("gpu001")


def test_agent_protocol_as_root(api: Api) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    r = api.client.post("/v1/agents/register", json=hello, headers=ROOT)
    assert r.status_code == 200
    welcome = r.json()
    assert welcome["controller_id"] == api.controller.id and welcome["node"] == "gpu001"
    assert welcome["heartbeat_s"] > 0 and welcome["acked"] == [] and welcome["epoch"] == 1
    assert api.controller.agent_registered("gpu001")
    r = api.client.post("/v1/agents/register", json={**hello, "node": "gpu002"}, headers=ROOT)
    assert r.status_code == 200
    [job] = api.submit(gpus_per_task=8)
    node = api.controller.cluster.nodes[api.controller.job(job).alloc.nodes[0]].name  # type: ignore[union-attr]
    mine = {"wait": 0, "boot_id": "b1", "epoch": 1}
    r = api.client.get(f"/v1/agents/{node}/commands", params=mine, headers=ROOT)
    assert r.status_code == 200
    [launch] = r.json()["commands"]
    assert (launch["kind"], launch["job_id"], launch["run"], launch["epoch"]) == (
        "launch",
        job,
        1,
        1,
    )
    assert launch["tasks"][0]["argv"] == CMD
    unknown = {**hello, "node": "gpu999"}
    assert api.client.post("/v1/agents/register", json=unknown, headers=ROOT).status_code == 404


@pytest.mark.parametrize(
    "change",
    [
        {"boot_id": ""},
        {"boot_id": "has space"},
        {"node": ""},
        {"epoch": -1},
        {"epoch": 2**63},
        {"cpus": -2},
    ],
)
def test_a_malformed_registration_is_refused(api: Api, change: dict[str, object]) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    r = api.client.post("/v1/agents/register", json={**hello, **change}, headers=ROOT)
    assert r.status_code == 422
    assert not api.controller.agent_registered("gpu001")


def test_only_the_registered_incarnation_gets_commands_others_are_told_why(api: Api) -> None:
    hello = {"node": "gpu001", "boot_id": "b1", "cpus": 64, "memory_mb": 1024, "gpus": 8}
    assert api.client.post("/v1/agents/register", json=hello, headers=ROOT).status_code == 200
    second = api.client.post("/v1/agents/register", json={**hello, "boot_id": "b2"}, headers=ROOT)
    assert second.status_code == 409
    assert (second.json()["reason"], second.json()["epoch"]) == ("held", 1)
    stranger = {"wait": 0, "boot_id": "b2", "epoch": 1}
    r = api.client.get("/v1/agents/gpu001/commands", params=stranger, headers=ROOT)
    assert r.status_code == 409 and r.json()["reason"] == "fenced"
    body = {"boot_id": "b9", "epoch": 0, "reports": []}
    r = api.client.post("/v1/agents/gpu001/reports", json=body, headers=ROOT)
    assert r.status_code == 409 and r.json()["reason"] == "unregistered"


def test_openapi_lists_the_job_routes(api: Api) -> None:
    r = api.client.get("/openapi.json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    assert "/v1/jobs" in paths
    assert {"get", "post"} <= set(paths["/v1/jobs"])
    assert "delete" in paths["/v1/jobs/{job_id}"]
