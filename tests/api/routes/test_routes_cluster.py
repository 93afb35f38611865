"""``/v1/nodes`` and ``/v1/partitions``."""

from __future__ import annotations

from routes_scene import ROOT, START, USER, Api

from phalanx.protocol.agent import AgentHello


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


def test_what_agents_tell_of_their_machine_is_shown(api: Api) -> None:
    api.controller.register(
        AgentHello(
            node="gpu001",
            address="10.0.0.1",
            boot_id="b",
            cpus=64,
            memory_mb=1024,
            gpus=8,
            arch="x86_64",
            os="Linux 6.1",
            boot_time=1_600_000_000_000,
            cpu_load=0.5,
        )
    )
    api.commands("gpu001", cpu_load=2.25, free_mem_mb=512)  # a poll updates load and memory
    nodes = {n["name"]: n for n in api.client.get("/v1/nodes", headers=USER).json()}
    one, two = nodes["gpu001"], nodes["gpu002"]
    assert (one["address"], one["arch"], one["os"]) == ("10.0.0.1", "x86_64", "Linux 6.1")
    assert (one["boot_time"], one["agent_start"]) == (1_600_000_000_000, START)
    assert (one["cpu_load"], one["free_mem_mb"]) == (2.25, 512)
    api.commands("gpu001")  # a poll that says nothing changes nothing
    again = api.client.get("/v1/nodes", headers=USER).json()[0]
    assert (again["cpu_load"], again["free_mem_mb"]) == (2.25, 512)
    assert two["agent"] is False
    assert all(two[k] is None for k in ("address", "arch", "os", "cpu_load", "agent_start"))


def _agents(api: Api) -> None:
    for node in api.controller.cluster.nodes:
        api.controller.register(
            AgentHello(node=node.name, boot_id="b", cpus=64, memory_mb=1024, gpus=8)
        )


def test_an_administrator_drains_a_node_and_it_shows_draining_then_drained(api: Api) -> None:
    _agents(api)
    [job] = api.submit(gpus_per_task=8)
    [busy] = [
        n["name"] for n in api.client.get("/v1/nodes", headers=USER).json() if n["gpus_alloc"]
    ]
    body = {"nodes": [busy], "state": "drain", "reason": "Xid 79"}
    r = api.client.patch("/v1/nodes", json=body, headers=ROOT)
    assert r.status_code == 200, r.text
    [node] = r.json()
    assert (node["name"], node["state"], node["reason"]) == (busy, "draining", "Xid 79")
    assert node["reason_user"] == "root" and node["reason_time"] >= START
    assert api.state(job) == "RUNNING"  # a drain lets running jobs finish
    [other] = api.submit(gpus_per_task=8)
    api.finish(job)
    api.run()
    states = {n["name"]: n["state"] for n in api.client.get("/v1/nodes", headers=USER).json()}
    assert states[busy] == "drained"
    running = next(j for j in api.jobs() if j["job_id"] == other)
    assert running["state"] == "RUNNING" and running["nodelist"] != busy
    r = api.client.patch("/v1/nodes", json={"nodes": [busy], "state": "resume"}, headers=ROOT)
    assert r.status_code == 200 and r.json()[0]["state"] == "idle" and r.json()[0]["reason"] == ""


def test_node_updates_are_refused_with_what_is_wrong(api: Api) -> None:
    drain = {"nodes": ["gpu001"], "state": "drain", "reason": "maint"}
    r = api.client.patch("/v1/nodes", json=drain, headers=USER)
    assert r.status_code == 403
    r = api.client.patch("/v1/nodes", json={**drain, "reason": ""}, headers=ROOT)
    assert r.status_code == 422 and "reason" in r.text
    r = api.client.patch("/v1/nodes", json={**drain, "nodes": ["gpu009"]}, headers=ROOT)
    assert r.status_code == 404 and "gpu009" in r.text
    r = api.client.patch("/v1/nodes", json={**drain, "state": "bogus"}, headers=ROOT)
    assert r.status_code == 422 and "state" in r.text
    r = api.client.patch("/v1/nodes", json={"nodes": ["gpu001"], "state": "resume"}, headers=ROOT)
    assert r.status_code == 409  # not drained
    # Nothing changed by the refused calls.
    assert all(not n["reason"] for n in api.client.get("/v1/nodes", headers=USER).json())


def test_a_downed_node_ends_its_jobs_and_stays_down_until_resumed(api: Api) -> None:
    _agents(api)
    [job] = api.submit(gpus_per_task=8, requeue=False)
    [busy] = [
        n["name"] for n in api.client.get("/v1/nodes", headers=USER).json() if n["gpus_alloc"]
    ]
    r = api.client.patch(
        "/v1/nodes", json={"nodes": [busy], "state": "down", "reason": "hw"}, headers=ROOT
    )
    assert r.status_code == 200 and r.json()[0]["state"] == "down"
    assert r.json()[0]["reason"] == "hw"
    # Its job is killed (the agent is told), and ends NODE_FAIL once its processes are gone.
    assert [c["kind"] for c in api.commands(busy)][-1] == "kill"
    api.finish(job)
    assert api.state(job) == "NODE_FAIL"
    [later] = api.submit(gpus_per_task=8)
    [node] = [n for n in api.client.get("/v1/nodes", headers=USER).json() if n["name"] == busy]
    assert node["state"] == "down" and node["gpus_alloc"] == 0
    placed = next(j for j in api.jobs() if j["job_id"] == later)
    assert placed["state"] == "RUNNING" and placed["nodelist"] != busy
