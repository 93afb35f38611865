"""Cluster definitions: the YAML reader (with line + field in every error) and the generator."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from phalanx.config.clusterspec import cluster_from_yaml, regular_cluster
from phalanx.domain.cluster import PreemptMode
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"

GOOD = """\
name: demo
nodes:
  - names: gpu[001-004]
    gpus: 8
    gpu_model: H100
    cpus: 96
    memory: 1024G
    features: [ib, nvlink]
  - names: cpu[1-2]
    gpus: 0
    cpus: 32
    memory: 65536
    nvlink_block: null
topology:
  leaves:
    - name: leaf1
      nodes: gpu[001-002],cpu1
    - name: leaf2
      nodes: [gpu003, gpu004, cpu2]
  spines:
    - name: spine1
      leaves: leaf[1-2]
  blocks:
    - nodes: gpu[001-002]
partitions:
  - name: gpu
    nodes: gpu[001-004]
    default: true
    default_time: 1:00:00
    max_time: UNLIMITED
    preempt_mode: requeue
    grace_time: 90
  - name: cpu
    nodes: cpu[1-2]
    priority_tier: 2
accounts:
  - name: research
    shares: 60
    quota_gpus: 16
  - name: vision
    parent: research
qos:
  - name: high
    priority: 1000
    preempt: [normal]
    grace_time: "60"
"""


def load(text: str) -> object:
    return cluster_from_yaml(textwrap.dedent(text), source="c.yaml")


def test_good_file() -> None:
    c = cluster_from_yaml(GOOD, source="c.yaml")
    assert c.name == "demo"
    assert [n.name for n in c.nodes] == ["gpu001", "gpu002", "gpu003", "gpu004", "cpu1", "cpu2"]
    assert [n.index for n in c.nodes] == list(range(6))
    gpu1 = c.nodes[0]
    assert (gpu1.gpus, gpu1.gpu_model, gpu1.cpus, gpu1.memory_mb) == (8, "H100", 96, 1048576)
    assert gpu1.features == frozenset({"ib", "nvlink"})
    assert [n.block for n in c.nodes] == [0, 0, None, None, None, None]
    assert c.nodes[4].memory_mb == 65536 and c.nodes[4].gpus == 0
    assert [n.leaf for n in c.nodes] == [0, 0, 1, 1, 0, 1]
    assert [(s.name, s.children, s.parent) for s in c.leaves] == [
        ("leaf1", (0, 1, 4), 0),
        ("leaf2", (2, 3, 5), 0),
    ]
    assert [(s.name, s.children, s.parent) for s in c.spines] == [("spine1", (0, 1), None)]
    gpu = c.partitions["gpu"]
    assert gpu.nodes == (0, 1, 2, 3) and gpu.default
    assert gpu.default_time == HOUR and gpu.max_time is None
    assert gpu.preempt_mode is PreemptMode.REQUEUE and gpu.grace_time == 90 * SECOND
    assert c.partitions["cpu"].nodes == (4, 5) and c.partitions["cpu"].priority_tier == 2
    assert c.default_partition().name == "gpu"
    assert c.accounts["root"].parent is None and c.accounts["root"].shares == 1
    assert c.accounts["research"].parent == "root" and c.accounts["research"].quota_gpus == 16
    assert c.account_path("vision") == ("vision", "research", "root")
    assert set(c.qos) == {"normal", "high"}
    assert c.qos["high"].preempt == frozenset({"normal"}) and c.qos["high"].grace_time == MINUTE
    assert c.total_gpus == 32


def test_example_file_parses() -> None:
    c = cluster_from_yaml(EXAMPLE.read_text(), source=str(EXAMPLE))
    assert len(c.nodes) == 16 and c.total_gpus == 128
    assert [len(s.children) for s in c.leaves] == [8, 8]
    assert len(c.spines) == 1 and c.spines[0].children == (0, 1)
    assert len(c.partitions) == 2 and c.default_partition().name == "gpu"
    assert len(c.qos) == 3
    assert {a.parent for a in c.accounts.values()} == {None, "root", "research"}
    assert {n.block for n in c.nodes} == {0, 1, 2, 3}


def test_minimal_file_gets_defaults() -> None:
    c = cluster_from_yaml(
        "nodes:\n  - {names: 'n[1-20]', gpus: 4, gpu_model: A100, cpus: 8, memory: 64G}\n"
    )
    assert c.name == "cluster"
    # One leaf per 8 nodes in name order (n9 before n10), all under one spine.
    assert [s.name for s in c.leaves] == ["leaf01", "leaf02", "leaf03"]
    assert [len(s.children) for s in c.leaves] == [8, 8, 4]
    assert c.leaves[0].children == tuple(range(8)) and c.nodes[9].leaf == 1
    assert [(s.name, s.children) for s in c.spines] == [("spine1", (0, 1, 2))]
    assert all(s.parent == 0 for s in c.leaves)
    assert list(c.partitions) == ["gpu"] and c.partitions["gpu"].default
    assert c.partitions["gpu"].nodes == tuple(range(20))
    assert list(c.accounts) == ["root"] and list(c.qos) == ["normal"]
    assert not c.enforce_part_limits and not c.enforce_qos  # Slurm's defaults


def test_enforcement_switches() -> None:
    c = cluster_from_yaml(NODE + "enforce_part_limits: true\nenforce_qos: true\n")
    assert c.enforce_part_limits and c.enforce_qos
    with pytest.raises(ConfigError, match="true or false"):
        cluster_from_yaml(NODE + "enforce_qos: ALL\n")


def test_an_unknown_qos_is_scheduled_as_the_default_one() -> None:
    c = cluster_from_yaml(NODE + "qos:\n  - {name: normal, priority: 10}\n  - {name: high}\n")
    assert c.qos_for("high") is c.qos["high"]
    assert c.qos_for("nosuchqos") is c.qos["normal"]


def test_partition_limits_a_job_exceeds() -> None:
    c = cluster_from_yaml(NODE + "partitions:\n  - {name: p, max_time: 60}\n")
    part = c.partitions["p"]
    assert part.exceeded_by(2, HOUR) is None and part.exceeded_by(1, None) is None
    assert part.exceeded_by(3, HOUR) == "PartitionConfig"
    assert part.exceeded_by(1, 2 * HOUR) == "PartitionTimeLimit"


def test_small_cluster_has_no_spine() -> None:
    c = cluster_from_yaml("nodes:\n  - {names: n1, gpus: 1, gpu_model: T4, cpus: 1, memory: 1G}\n")
    assert len(c.leaves) == 1 and c.leaves[0].parent is None and c.spines == ()


NODE = "nodes:\n  - {names: 'n[1-2]', gpus: 1, gpu_model: T4, cpus: 1, memory: 1G}\n"


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        # wrong types
        (
            "nodes:\n  - names: n1\n    gpus: eight\n    cpus: 1\n    memory: 1G\n",
            3,
            "nodes[0].gpus",
            "expected an integer, got 'eight'",
        ),
        (
            "nodes:\n  - {names: n1, gpus: 1, gpu_model: T4, cpus: 1, memory: lots}\n",
            2,
            "nodes[0].memory",
            "invalid memory",
        ),
        ("nodes: gpu1\n", 1, "nodes", "expected a list"),
        (
            NODE + "partitions:\n  - name: p\n    default: maybe\n",
            5,
            "partitions[0].default",
            "expected true or false",
        ),
        (
            NODE + "partitions:\n  - name: p\n    max_time: soon\n",
            5,
            "partitions[0].max_time",
            "invalid time",
        ),
        (
            NODE + "partitions:\n  - name: p\n    preempt_mode: suspend\n",
            5,
            "partitions[0].preempt_mode",
            "off|requeue|cancel",
        ),
        (
            NODE + "partitions:\n  - {name: p, default_time: '2:00:00', max_time: '1:00:00'}\n",
            4,
            "partitions[0].default_time",
            "longer than max_time",
        ),
        # unknown and duplicate keys, missing keys
        (NODE + "switches: 3\n", 3, "switches", "unknown key 'switches'"),
        (
            "nodes:\n  - {names: n1, gpus: 1, gpu_model: T4, cpus: 1, memory: 1G, ram: 2}\n",
            2,
            "nodes[0].ram",
            "unknown key 'ram'",
        ),
        ("nodes:\n  - names: n1\n    gpus: 1\n    gpus: 2\n", 4, "nodes[0].gpus", "duplicate key"),
        ("nodes:\n  - {names: n1, gpus: 1, cpus: 1, memory: 1G}\n", 2, "nodes[0]", "'gpu_model'"),
        ("nodes:\n  - {names: n1, gpus: 0, cpus: 1}\n", 2, "nodes[0]", "missing required key"),
        ("name: x\n", 1, None, "missing required key 'nodes'"),
        # node names
        (
            "nodes:\n  - {names: 'n[2-1]', gpus: 1, gpu_model: T4, cpus: 1, memory: 1G}\n",
            2,
            "nodes[0].names",
            "reversed range",
        ),
        (
            NODE + "  - {names: n2, gpus: 1, gpu_model: T4, cpus: 1, memory: 1G}\n",
            3,
            "nodes[1].names",
            "duplicate node name 'n2'",
        ),
        ("nodes: []\n", 1, "nodes", "at least one node"),
        # references
        (
            NODE + "partitions:\n  - {name: p, nodes: 'n[1-3]'}\n",
            4,
            "partitions[0].nodes",
            "unknown node 'n3'",
        ),
        (
            NODE + "topology:\n  leaves:\n    - {name: l1, nodes: n1}\n",
            5,
            "topology.leaves",
            "nodes in no leaf: n2",
        ),
        (
            NODE + "topology:\n  leaves:\n    - {name: l1, nodes: 'n[1-2]'}\n"
            "    - {name: l2, nodes: n2}\n",
            6,
            "topology.leaves[1].nodes",
            "in leaf 'l1' and leaf 'l2'",
        ),
        (
            NODE + "topology:\n  leaves:\n    - {name: l1, nodes: 'n[1-2]'}\n"
            "  spines:\n    - {name: s1, leaves: [l1, l9]}\n",
            7,
            "topology.spines[0].leaves",
            "unknown leaf 'l9'",
        ),
        (
            NODE
            + "topology:\n  leaves:\n    - {name: l1, nodes: n1}\n    - {name: l1, nodes: n2}\n",
            6,
            "topology.leaves[1].name",
            "duplicate leaf name",
        ),
        (
            NODE + "topology:\n  blocks:\n    - nodes: n1\n    - nodes: 'n[1-2]'\n",
            6,
            "topology.blocks[1].nodes",
            "in two blocks",
        ),
        (NODE + "partitions: []\n", 3, "partitions", "at least one partition"),
        (
            NODE + "partitions:\n  - {name: a, default: true}\n  - {name: b, default: true}\n",
            5,
            "partitions[1].default",
            "more than one partition",
        ),
        (
            NODE + "accounts:\n  - {name: a, parent: nowhere}\n",
            4,
            "accounts[0].parent",
            "unknown parent 'nowhere'",
        ),
        (
            NODE + "accounts:\n  - {name: a, parent: b}\n  - {name: b, parent: a}\n",
            4,
            "accounts[0].parent",
            "cycle",
        ),
        (NODE + "accounts:\n  - {name: a, shares: -1}\n", 4, "accounts[0].shares", ">= 0"),
        (
            NODE + "qos:\n  - {name: high, preempt: [urgent]}\n",
            4,
            "qos[0].preempt",
            "unknown qos 'urgent'",
        ),
        (
            NODE + "qos:\n  - {name: high, grace_time: UNLIMITED}\n",
            4,
            "qos[0].grace_time",
            "UNLIMITED",
        ),
        # YAML itself
        ("nodes: [\n", 2, None, "invalid YAML"),
        ("", 1, None, "empty"),
    ],
)
def test_errors_name_line_and_field(text: str, line: int, field: str | None, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        cluster_from_yaml(text, source="c.yaml")
    err = info.value
    assert (err.source, err.line, err.field) == ("c.yaml", line, field)
    assert words in err.message
    assert str(err).startswith(f"c.yaml:{line}")


def test_unquoted_times_are_not_sexagesimal() -> None:
    c = cluster_from_yaml(NODE + "partitions:\n  - {name: p, default_time: 1:30:00}\n")
    assert c.partitions["p"].default_time == HOUR + 30 * MINUTE


def test_regular_cluster_shape() -> None:
    c = regular_cluster(64, 8, 8)
    assert len(c.nodes) == 64 and c.total_gpus == 512
    assert c.nodes[0].name == "gpu001" and c.nodes[63].name == "gpu064"
    assert [s.name for s in c.leaves][:2] == ["leaf01", "leaf02"] and len(c.leaves) == 8
    assert all(len(s.children) == 8 and s.parent == 0 for s in c.leaves)
    assert c.nodes[17].leaf == 2 and 17 in c.leaves[2].children
    assert [(s.name, s.children) for s in c.spines] == [("spine1", tuple(range(8)))]
    assert c.partitions["gpu"].nodes == tuple(range(64)) and c.partitions["gpu"].default
    assert list(c.accounts) == ["root"]
    assert c.qos["normal"].priority == 0
    assert c.qos["high"].priority == 1000 and c.qos["high"].preempt == frozenset({"normal"})


def test_regular_cluster_spines_and_names() -> None:
    c = regular_cluster(1000, 4, 10, leaves_per_spine=40, prefix="node")
    assert c.nodes[0].name == "node0001" and len(c.leaves) == 100
    assert c.leaves[0].name == "leaf001"
    assert [len(s.children) for s in c.spines] == [40, 40, 20]
    assert c.leaves[45].parent == 1 and 45 in c.spines[1].children
    assert regular_cluster(5, 1, 8).spines == ()


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"nodes": 0}, "--nodes"),
        ({"nodes": 10**11}, "--nodes"),  # built node by node until killed
        ({"gpus_per_node": 10**30}, "--gpus-per-node"),  # overflowed int64 node columns
        ({"gpus_per_node": -1}, "--gpus-per-node"),
        ({"nodes_per_switch": 0}, "--nodes-per-switch"),
        ({"leaves_per_spine": 0}, "--leaves-per-spine"),
        ({"cpus_per_node": 0}, "--cpus-per-node"),
        ({"memory_mb": 0}, "--memory-mb"),
        ({"gpu_model": " "}, "--gpu-model"),
        ({"prefix": "gpu[1]"}, "--prefix"),
    ],
)
def test_regular_cluster_rejects_bad_flags(kwargs: dict[str, object], flag: str) -> None:
    args: dict[str, object] = {"nodes": 4, "gpus_per_node": 8, "nodes_per_switch": 2, **kwargs}
    with pytest.raises(ConfigError) as info:
        regular_cluster(**args)  # type: ignore[arg-type]
    assert info.value.field == flag


def test_health_check() -> None:
    c = cluster_from_yaml(
        NODE
        + "health_check:\n  program: /usr/sbin/nhc -t 60\n  interval: 300\n"
        + "  fatal_xids: [79]\n  gpus: false\n  gpu_interval: 10\n"
    )
    assert c.health.program == "/usr/sbin/nhc -t 60" and c.health.interval_s == 300.0
    assert c.health.fatal_xids == frozenset({79}) and not c.health.gpus
    assert c.health.gpu_interval_s == 10.0
    default = cluster_from_yaml(NODE).health
    assert default.program is None and default.gpus and 79 in default.fatal_xids
    with pytest.raises(ConfigError, match=r"health_check\.interval.*needs a program"):
        cluster_from_yaml(NODE + "health_check:\n  interval: 60\n")
    with pytest.raises(ConfigError, match=r"health_check\.fatal_xids\[0\]"):
        cluster_from_yaml(NODE + "health_check:\n  fatal_xids: [abc]\n")


def test_yaml_nested_past_the_parsers_recursion_is_a_config_error() -> None:
    # PyYAML's composer recursed once per level: 5,000 levels were a RecursionError traceback.
    with pytest.raises(ConfigError, match="nested too deeply"):
        cluster_from_yaml("name: x\nnodes: " + "[" * 5_000 + "]" * 5_000 + "\n")


@pytest.mark.parametrize(
    ("replace", "field"),
    [
        # A node of 10^30 GPUs, CPUs or MB overflowed the scheduler's int64 node columns.
        (("gpus: 1", "gpus: " + "9" * 30), "nodes[0].gpus"),
        (("cpus: 1", "cpus: 2147483648"), "nodes[0].cpus"),
        (("memory: 1G", "memory: " + "9" * 30 + "G"), "nodes[0].memory"),
    ],
)
def test_numbers_past_the_columns_are_refused(replace: tuple[str, str], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        cluster_from_yaml(NODE.replace(*replace))
    assert info.value.field == field
