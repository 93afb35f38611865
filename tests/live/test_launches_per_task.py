"""A gang whose tasks differ (``JobSpec.tasks``, a PyTorchJob's pods): each task its own
argv, variables over the ones Phalanx sets, directory and output; other jobs unchanged."""

from __future__ import annotations

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import NODE_ADDRESS_AT_LAUNCH, NODE_NAME_AT_LAUNCH, JobSpec, TaskLaunch
from phalanx.engine import Launch
from phalanx.live.launches import launch_commands
from phalanx.sched.capacity import Allocation

CLUSTER = regular_cluster(2, 8, 2)
ALLOC = Allocation((0, 1), ((0,), (0,)), 0, 1, 0)


def _launch(spec: JobSpec) -> dict[str, list[object]]:
    cmd = Launch(job_id=42, run=1, alloc=ALLOC, spec=spec, time_limit=60_000)
    per_node = launch_commands(CLUSTER, cmd, "10.0.0.7", as_user=False)
    return {node: list(c.tasks) for node, c in per_node.items()}


def test_each_task_runs_its_own_launch() -> None:
    spec = JobSpec(
        name="pt",
        nodes_min=2,
        nodes_max=2,
        command=("unused",),
        environment=(("SHARED", "1"),),
        workdir="/tmp",
        tasks=(
            TaskLaunch(
                ("python3", "-c", "m"),
                (("MASTER_PORT", "23456"), ("RANK", "0")),
                output="/logs/pt-master-0.log",
            ),
            TaskLaunch(
                ("python3", "-c", "w"),
                (("MASTER_PORT", "23456"), ("RANK", "1")),
                workdir="/srv",
                output="/logs/pt-worker-0.log",
            ),
        ),
    )
    tasks = [t for node in sorted(_launch(spec)) for t in _launch(spec)[node]]
    master, worker = tasks  # type: ignore[misc]
    assert master.argv == ["python3", "-c", "m"] and worker.argv == ["python3", "-c", "w"]
    assert master.stdout == "/logs/pt-master-0.log" and worker.stdout == "/logs/pt-worker-0.log"
    assert master.cwd == "/tmp" and worker.cwd == "/srv"
    # the pod's variable wins over Phalanx's (15000 + job id) ...
    assert master.env["MASTER_PORT"] == worker.env["MASTER_PORT"] == "23456"
    # ... and what it does not set comes from the launch: rank 0's node
    assert worker.env["MASTER_ADDR"] == "10.0.0.7" and worker.env["SHARED"] == "1"
    assert worker.env["RANK"] == "1" and worker.env["SLURM_PROCID"] == "1"


def test_a_job_without_task_launches_is_unchanged() -> None:
    spec = JobSpec(name="plain", nodes_min=2, nodes_max=2, command=("hostname",), workdir="/tmp")
    tasks = [t for ts in _launch(spec).values() for t in ts]
    assert [t.argv for t in tasks] == [["hostname"], ["hostname"]]
    assert {t.env["MASTER_PORT"] for t in tasks} == {"15042"}
    assert {t.stdout for t in tasks} == {"/tmp/slurm-42.out"}


def test_what_is_known_only_at_launch_is_filled_in_per_node() -> None:
    """A pod's ``spec.nodeName`` and ``status.podIP`` (``fieldRef``), in its variables and
    its argv, become the node each task is placed on and that node's address."""
    spec = JobSpec(
        name="pods",
        nodes_min=2,
        nodes_max=2,
        command=("echo", f"on {NODE_NAME_AT_LAUNCH}"),
        environment=(("NODE", NODE_NAME_AT_LAUNCH), ("IP", NODE_ADDRESS_AT_LAUNCH)),
        workdir="/tmp",
    )
    cmd = Launch(job_id=7, run=1, alloc=ALLOC, spec=spec, time_limit=60_000)
    addresses = {CLUSTER.nodes[0].name: "10.0.0.1", CLUSTER.nodes[1].name: "10.0.0.2"}
    per_node = launch_commands(CLUSTER, cmd, "10.0.0.1", as_user=False, address=addresses.get)
    for node, command in per_node.items():
        (task,) = command.tasks
        assert task.env["NODE"] == node and task.env["IP"] == addresses[node]
        assert task.argv == ["echo", f"on {node}"]
    # without addresses (agents on this machine), the loopback address
    per_node = launch_commands(CLUSTER, cmd, "127.0.0.1", as_user=False)
    assert {t.env["IP"] for c in per_node.values() for t in c.tasks} == {"127.0.0.1"}
