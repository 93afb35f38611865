"""slurm.conf, topology.conf and gres.conf -> ``Cluster``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from phalanx.config.slurmconf import cluster_from_slurm_conf_text
from phalanx.domain.cluster import Cluster, PreemptMode
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.errors import ConfigError

REF = Path(__file__).parent / "data" / "slurm-ref"


def _cluster(conf: str, topology: str | None = None, gres: str | None = None) -> Cluster:
    return cluster_from_slurm_conf_text(conf, topology, gres, "/etc/slurm/slurm.conf")


def _error(conf: str, topology: str | None = None, gres: str | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        _cluster(conf, topology, gres)
    return str(info.value)


def test_the_reference_cluster_files() -> None:
    cluster = cluster_from_slurm_conf_text(
        (REF / "slurm.conf").read_text(),
        (REF / "topology.conf").read_text(),
        (REF / "gres.conf").read_text(),
        str(REF / "slurm.conf"),
    )
    assert cluster.name == "refcluster"
    assert [n.name for n in cluster.nodes] == ["n01", "n02", "n03", "n04"]
    assert {(n.gpus, n.gpu_model, n.cpus, n.memory_mb) for n in cluster.nodes} == {
        (8, "h100", 64, 512000)
    }
    assert [(s.name, s.children, s.parent) for s in cluster.leaves] == [("leaf0", (0, 1, 2, 3), 0)]
    assert [(s.name, s.children) for s in cluster.spines] == [("spine", (0,))]
    gpu = cluster.partitions["gpu"]
    assert gpu.default and gpu.nodes == (0, 1, 2, 3) and gpu.max_time is None
    assert [a for a in cluster.accounts] == ["root"] and [q for q in cluster.qos] == ["normal"]


def test_nodes_defaults_continuations_comments_and_case() -> None:
    cluster = _cluster(
        "# a comment\n"
        "nodename=DEFAULT cpus=32 RealMemory=1000 Weight=5 State=UNKNOWN\n"
        "NodeName=gpu[01-02] Gres=gpu:a100:4,nic:1 \\\n"
        "    Features=ib,nvlink   # trailing comment\n"
        "NodeName=cpu1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64000\n"
        'NodeName=odd\\#1 Feature="a,b"\n'
    )
    gpu01, gpu02, cpu1, odd = cluster.nodes
    assert (gpu01.name, gpu01.gpus, gpu01.gpu_model, gpu01.cpus, gpu01.memory_mb) == (
        "gpu01",
        4,
        "a100",
        32,
        1000,
    )
    assert gpu01.features == frozenset({"ib", "nvlink"}) and gpu02.name == "gpu02"
    assert (cpu1.gpus, cpu1.gpu_model, cpu1.cpus, cpu1.memory_mb) == (0, "", 32, 64000)
    assert odd.name == "odd#1" and odd.features == frozenset({"a", "b"})
    # No topology.conf: one 8-node leaf, no spine; no partition: "gpu", all nodes, default.
    assert [leaf.children for leaf in cluster.leaves] == [(0, 1, 2, 3)]
    assert cluster.partitions["gpu"].default and cluster.partitions["gpu"].nodes == (0, 1, 2, 3)


def test_cpus_from_sockets_when_not_given() -> None:
    cluster = _cluster("NodeName=a Boards=2 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=2\n")
    assert cluster.nodes[0].cpus == 32


@pytest.mark.parametrize(
    ("gres", "count", "model"),
    [
        ("gpu:8", 8, "gpu"),
        ("gpu:h100:8(S:0-1)", 8, "h100"),
        ("gpu:h100:4,gpu:h100:4", 8, "h100"),
        ("gpu", 1, "gpu"),
        ("gpu:2K", 2048, "gpu"),
        ("mps:100", 0, ""),
    ],
)
def test_gres_forms(gres: str, count: int, model: str) -> None:
    node = _cluster(f"NodeName=a Gres={gres}\n").nodes[0]
    assert (node.gpus, node.gpu_model) == (count, model)


def test_gres_conf_gives_the_model_and_an_unwritten_count() -> None:
    gres = (
        "AutoDetect=off\n"
        "NodeName=a[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"
        "NodeName=b1 Name=gpu Type=l40s Count=2\n"
        "NodeName=other[1-9] Name=gpu Type=x File=/dev/nvidia0\n"
        "Name=mps Count=100\n"
    )
    cluster = _cluster("NodeName=a[1-2] Gres=gpu:8\nNodeName=b1 Gres=gpu\n", gres=gres)
    assert [(n.gpus, n.gpu_model) for n in cluster.nodes] == [(8, "h100"), (8, "h100"), (2, "l40s")]


def test_gres_conf_count_that_contradicts_slurm_conf() -> None:
    message = _error("NodeName=a Gres=gpu:4\n", gres="Name=gpu File=/dev/nvidia[0-7]\n")
    assert message.startswith("/etc/slurm/gres.conf:1, field 'File'")
    assert "8 GPU(s) here and 4 in slurm.conf" in message


def test_partitions_times_tiers_and_preemption() -> None:
    cluster = _cluster(
        "ClusterName=c\n"
        "PreemptType=preempt/partition_prio\n"
        "PreemptMode=REQUEUE,GANG\n"
        "NodeName=n[1-4] Gres=gpu:h100:8\n"
        "NodeSet=fast Nodes=n[3-4]\n"
        "PartitionName=DEFAULT MaxTime=2-00:00:00 State=UP\n"
        "PartitionName=batch Nodes=n[1-2],fast Default=YES DefaultTime=60 PriorityTier=1\n"
        "PartitionName=urgent Nodes=ALL MaxTime=UNLIMITED PriorityTier=10 PriorityJobFactor=5 "
        "PreemptMode=CANCEL GraceTime=30\n"
        "PartitionName=empty\n"
        "PartitionName=old Nodes=n1 Priority=3 DefaultTime=1:30:00 MaxTime=4:00:00\n"
    )
    batch, urgent, empty, old = (cluster.partitions[p] for p in ("batch", "urgent", "empty", "old"))
    assert batch.default and not urgent.default
    assert batch.nodes == (0, 1, 2, 3) and urgent.nodes == (0, 1, 2, 3) and empty.nodes == ()
    assert (batch.default_time, batch.max_time) == (60 * MINUTE, 48 * HOUR)
    assert urgent.max_time is None and urgent.grace_time == 30 * SECOND
    assert (batch.priority_tier, urgent.priority_tier, urgent.priority_job_factor) == (1, 10, 5)
    assert (old.priority_tier, old.priority_job_factor) == (3, 3)
    assert (old.default_time, old.max_time) == (90 * MINUTE, 4 * HOUR)
    assert batch.preempt_mode is PreemptMode.REQUEUE
    assert urgent.preempt_mode is PreemptMode.CANCEL
    assert cluster.default_partition() is batch and cluster.name == "c"


@pytest.mark.parametrize(
    ("lines", "part_limits", "qos"),
    [
        ("", False, False),
        ("EnforcePartLimits=NO\nAccountingStorageEnforce=associations,limits\n", False, False),
        ("EnforcePartLimits=ALL\nAccountingStorageEnforce=associations,limits,qos\n", True, True),
        ("EnforcePartLimits=any\nAccountingStorageEnforce=all\n", True, True),
    ],
)
def test_enforce_part_limits_and_qos(lines: str, part_limits: bool, qos: bool) -> None:
    cluster = _cluster(lines + "NodeName=n1\n")
    assert (cluster.enforce_part_limits, cluster.enforce_qos) == (part_limits, qos)
    assert "expected ALL, ANY or NO" in _error("EnforcePartLimits=maybe\nNodeName=n1\n")


def test_preemption_is_off_without_preempt_type() -> None:
    cluster = _cluster("NodeName=n1\nPartitionName=p Nodes=n1 PreemptMode=REQUEUE\n")
    assert cluster.partitions["p"].preempt_mode is PreemptMode.OFF


def test_topology_leaves_spines_and_upper_levels() -> None:
    topology = (
        "SwitchName=s1 Nodes=n[1-2] LinkSpeed=100\n"
        "SwitchName=s2 Nodes=n[3-4]\n"
        "SwitchName=s3 Nodes=n5\n"
        "SwitchName=agg1 Switches=s[1-2]\n"
        "SwitchName=agg2 Switches=s3\n"
        "SwitchName=core Switches=agg[1-2]\n"
    )
    cluster = _cluster("TopologyPlugin=topology/tree\nNodeName=n[1-5]\n", topology)
    assert [(s.name, s.children, s.parent) for s in cluster.leaves] == [
        ("s1", (0, 1), 0),
        ("s2", (2, 3), 0),
        ("s3", (4,), 1),
    ]
    assert [(s.name, s.children) for s in cluster.spines] == [("agg1", (0, 1)), ("agg2", (2,))]
    assert [n.leaf for n in cluster.nodes] == [0, 0, 1, 1, 2]


def test_topology_blocks_and_an_ignored_topology() -> None:
    blocks = "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2,4\n"
    cluster = _cluster("TopologyPlugin=topology/block\nNodeName=n[1-4]\n", blocks)
    assert [n.block for n in cluster.nodes] == [0, 0, 1, 1]
    flat = _cluster("TopologyPlugin=topology/flat\nNodeName=n[1-2]\n", "garbage line\n")
    assert [leaf.name for leaf in flat.leaves] == ["leaf01"]


def test_include_is_relative_to_the_including_file() -> None:
    calls: list[tuple[str, str]] = []

    def reader(path: str, including: str) -> Sequence[tuple[str, str]]:
        calls.append((path, including))
        if path == "nodes.conf":
            return [("NodeName=n[1-2] Gres=gpu:a100:8\nInclude parts.conf\n", "/etc/nodes.conf")]
        return [("PartitionName=p Nodes=ALL Default=YES MaxTime=bad\n", "/etc/parts.conf")]

    with pytest.raises(ConfigError) as info:
        cluster_from_slurm_conf_text(
            "INCLUDE nodes.conf\n", None, None, "/etc/slurm.conf", include=reader
        )
    assert calls == [("nodes.conf", "/etc/slurm.conf"), ("parts.conf", "/etc/nodes.conf")]
    assert str(info.value).startswith("/etc/parts.conf:1, field 'MaxTime'")


def test_include_errors() -> None:
    assert "Include cannot be read here" in _error("Include other.conf\nNodeName=a\n")

    def missing(path: str, including: str) -> Sequence[tuple[str, str]]:
        raise ConfigError(f"cannot read {path!r}")

    with pytest.raises(ConfigError) as info:
        cluster_from_slurm_conf_text("\n\nInclude x.conf\n", None, None, "s.conf", include=missing)
    assert str(info.value) == "s.conf:3, field 'Include': cannot read 'x.conf'"

    def itself(path: str, including: str) -> Sequence[tuple[str, str]]:
        return [("Include s.conf\n", "s.conf")]

    with pytest.raises(ConfigError, match="nested over 16 deep"):
        cluster_from_slurm_conf_text("Include s.conf\n", None, None, "s.conf", include=itself)


@pytest.mark.parametrize(
    ("conf", "topology", "gres", "where", "message"),
    [
        ("NodeName=a RealMemory=lots\n", None, None, "slurm.conf:1, field 'RealMemory'", "integer"),
        ("NodeName=a\n\nNodeName=a\n", None, None, "slurm.conf:3, field 'NodeName'", "twice"),
        ("NodeName=a RealMemroy=1\n", None, None, "slurm.conf:1, field 'RealMemroy'", "unknown"),
        ("NodeName=a[1-\n", None, None, "slurm.conf:1, field 'NodeName'", ""),
        ("NodeName=a Gres=gpu:a:1,gpu:b:1\n", None, None, "slurm.conf:1, field 'Gres'", "types"),
        ("NodeName=a Gres=gpu:h100:x\n", None, None, "slurm.conf:1, field 'Gres'", "count"),
        ("ClusterName=x\n", None, None, "slurm.conf", "no NodeName"),
        ("NodeName=a\nPartitionName=p Nodes=b\n", None, None, "slurm.conf:2, field 'Nodes'", "'b'"),
        (
            "NodeName=a\nPartitionName=p Nodes=a Default=YES\nPartitionName=q Default=YES\n",
            None,
            None,
            "slurm.conf:3, field 'Default'",
            "line 2",
        ),
        (
            "NodeName=a\nPartitionName=p DefaultTime=2:00:00 MaxTime=60\n",
            None,
            None,
            "slurm.conf:2, field 'DefaultTime'",
            "longer",
        ),
        ("NodeName=a\nPartitionName=p MaxTime=soon\n", None, None, "field 'MaxTime'", "invalid"),
        ("NodeName=a\nPartitionName=p Default=maybe\n", None, None, "field 'Default'", "YES"),
        (
            "PreemptType=preempt/qos\nPreemptMode=SUSPEND,GANG\nNodeName=a\nPartitionName=p\n",
            None,
            None,
            "slurm.conf:2, field 'PreemptMode'",
            "SUSPEND",
        ),
        ("NodeName=a\nbogus\n", None, None, "slurm.conf:2", "Key=Value"),
        ("NodeName=a[1-2]\n", "SwitchName=s Nodes=a1\n", None, "topology.conf:1", "a2"),
        ("NodeName=a\n", "SwitchName=s Nodes=zz\n", None, "topology.conf:1, field 'Nodes'", "zz"),
        (
            "NodeName=a\n",
            "SwitchName=s Nodes=a\nSwitchName=t Nodes=a\n",
            None,
            "topology.conf:2, field 'Nodes'",
            "switch 's' and switch 't'",
        ),
        ("NodeName=a\n", "SwitchName=s Nodes=a\nSwitchName=u Switches=v\n", None, "2", "'v'"),
        ("NodeName=a\n", "SwitchName=s\n", None, "topology.conf:1", "Nodes="),
        ("NodeName=a Gres=gpu\n", None, "Name=gpu Type=a\nName=gpu Type=b\n", "gres.conf", "b)"),
        ("NodeName=a\n", None, "Nmae=gpu\n", "gres.conf:1, field 'Nmae'", "unknown"),
        # Past 2^31 - 1 a node's count overflowed the scheduler's int64 columns downstream.
        ("NodeName=a Gres=gpu:h100:" + "9" * 30 + "\n", None, None, "field 'Gres'", "over"),
        ("NodeName=a CPUs=" + "9" * 30 + "\n", None, None, "field 'CPUs'", "at most"),
        ("NodeName=a RealMemory=" + "9" * 30 + "\n", None, None, "field 'RealMemory'", "at most"),
        (
            "NodeName=a Sockets=2 CoresPerSocket=2147483647\n",
            None,
            None,
            "'CoresPerSocket'",
            "CPUs",
        ),
    ],
)
def test_errors_name_the_file_the_line_and_the_key(
    conf: str, topology: str | None, gres: str | None, where: str, message: str
) -> None:
    text = _error(conf, topology, gres)
    assert text.startswith("/etc/slurm/") and where in text and message in text, text


def test_health_check_program_and_interval() -> None:
    conf = "NodeName=n1 CPUs=4 RealMemory=1000\nHealthCheckProgram=/usr/sbin/nhc\n"
    health = _cluster(conf + "HealthCheckInterval=300\nHealthCheckNodeState=ANY\n").health
    assert (health.program, health.interval_s) == ("/usr/sbin/nhc", 300.0)
    assert _cluster("NodeName=n1 CPUs=4 RealMemory=1000\n").health.program is None
    assert "HealthCheckInterval" in _error(conf + "HealthCheckInterval=often\n")
