"""``/v1/nodes`` and ``/v1/partitions``."""

from __future__ import annotations

from routes_scene import USER, Api

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
