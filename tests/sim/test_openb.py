from pathlib import Path

import pytest

from phalanx.domain.time import SECOND
from phalanx.errors import TraceError
from phalanx.sim.traces import read_trace
from phalanx.sim.traces.openb import UNTIMED_RUNTIME, openb_cluster, read_openb
from phalanx.sim.traces.options import TraceOptions

OPENB = Path(__file__).resolve().parents[3] / "shared" / "traces" / "openb"
HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
)
ROWS = [
    "pod-a,12000,16384,1,1000,,LS,Running,100,1100,100",  # line 2: one whole GPU
    "pod-b,6000,12288,1,460,V100M16|V100M32,BE,Running,50,950,150",  # fractional, scheduled
    "pod-c,2500,4096,0,0,,BE,Pending,200,260,",  # CPU-only, never scheduled
    "pod-d,64000,262144,8,1000,G2,LS,Running,300,300,300",  # 8 GPUs, zero duration
]


def write(tmp_path: Path, rows: list[str], header: str = HEADER) -> str:
    path = tmp_path / "openb_pod_list_test.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    return str(path)


def test_pods_are_mapped(tmp_path: Path) -> None:
    jobs = read_trace(write(tmp_path, ROWS))  # guessed from the header
    by_name = {job.trace_id: job for job in jobs}
    assert [job.trace_id for job in jobs] == ["pod-b", "pod-a", "pod-c", "pod-d"]
    assert [job.submit for job in jobs] == [0, 50_000, 150_000, 250_000]
    a, b, c, d = (by_name[n] for n in ("pod-a", "pod-b", "pod-c", "pod-d"))
    assert (a.spec.gpus_per_task, a.spec.gpu_milli, a.runtime) == (1, 0, 1000 * SECOND)
    assert (b.spec.gpus_per_task, b.spec.gpu_milli) == (0, 460)
    assert b.spec.gpu_models == frozenset({"V100M16", "V100M32"})
    assert b.runtime == 800 * SECOND  # deletion - scheduled
    assert (b.spec.account, b.spec.user) == ("BE", "BE")
    assert (c.spec.gpus_per_task, c.spec.cpus_per_task, c.spec.mem_per_node_mb) == (0, 3, 4096)
    assert c.runtime == 60 * SECOND  # deletion - creation: never scheduled
    assert (d.spec.gpus_per_task, d.spec.nodes_min, d.runtime) == (8, 1, SECOND)
    assert all(
        job.spec.time_limit is not None and job.spec.time_limit >= job.runtime for job in jobs
    )


def test_options(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS)
    assert [job.submit for job in read_openb(path, TraceOptions(load=2.0))] == [
        0,
        25_000,
        75_000,
        125_000,
    ]
    assert [job.trace_id for job in read_openb(path, TraceOptions(limit=1))] == ["pod-b"]
    assert [job.trace_id for job in read_openb(path, TraceOptions(window=(100_000, 200_000)))] == [
        "pod-c"
    ]


def test_untimed_resamplings_arrive_in_file_order(tmp_path: Path) -> None:
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
    jobs = read_openb(write(tmp_path, ["p0,1000,1,2,1000", "p1,1000,1,1,500"], header))
    assert [(job.trace_id, job.submit) for job in jobs] == [("p0", 0), ("p1", SECOND)]
    assert all(job.runtime == UNTIMED_RUNTIME for job in jobs)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("pod-x,1000,1,-1,0,,LS,Running,1,2,1", "num_gpu"),
        ("pod-x,1000,1,0,500,,LS,Running,1,2,1", "gpu_milli"),
        ("pod-x,1000,1,2,500,,LS,Running,1,2,1", "gpu_milli"),
        ("pod-x,1000,1,1,1000,,LS,Running,soon,2,1", "creation_time"),
        ("pod-x,1000,1,1,1000,,LS,Running,1", "deletion_time"),
    ],
)
def test_malformed_rows_name_line_and_field(tmp_path: Path, row: str, field: str) -> None:
    path = write(tmp_path, [ROWS[0], row])
    with pytest.raises(TraceError) as info:
        read_openb(path)
    assert (info.value.line, info.value.field) == (3, field)


@pytest.mark.skipif(not OPENB.exists(), reason="shared openb traces not present")
def test_real_cluster_and_pod_list() -> None:
    cluster = openb_cluster(str(OPENB / "openb_node_list_gpu_node.csv"))
    assert len(cluster.nodes) == 1_213
    assert cluster.total_gpus == 6_212
    assert len(cluster.leaves) == 76  # ceil(1213 / 16)
    assert cluster.spines[0].children == tuple(range(76))
    assert cluster.nodes[17].leaf == 1 and 17 in cluster.leaves[1].children
    assert cluster.default_partition().nodes == tuple(range(1_213))
    assert {"V100M16", "T4", "G2"} <= cluster.gpu_models
    jobs = read_openb(str(OPENB / "openb_pod_list_default.csv"))
    assert len(jobs) == 8_152
    fractional = sum(1 for job in jobs if job.spec.gpu_milli)
    gpu_tasks = sum(1 for job in jobs if job.spec.gpu_milli or job.spec.gpus_per_task)
    assert round(100 * fractional / gpu_tasks, 1) == 43.6  # the README's figure


def test_cluster_with_small_switches(tmp_path: Path) -> None:
    path = tmp_path / "nodes.csv"
    path.write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        + "".join(f"n{i},64000,1024,{i % 3},T4\n" for i in range(5))
    )
    cluster = openb_cluster(str(path), nodes_per_switch=2)
    assert [leaf.children for leaf in cluster.leaves] == [(0, 1), (2, 3), (4,)]
    assert (cluster.nodes[0].cpus, cluster.total_gpus) == (64, 4)
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,1024,-2,T4\n")
    with pytest.raises(TraceError) as info:
        openb_cluster(str(path))
    assert (info.value.line, info.value.field) == (2, "gpu")
