"""``/v1/nodes`` and ``/v1/partitions``."""

from __future__ import annotations

from routes_scene import START, USER, Api

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
