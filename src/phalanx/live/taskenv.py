"""What each task of a job sees: Slurm's environment variables and output file names.

Pure functions: the executor calls them for every task it starts. Names and formats follow
a real Slurm 22.05 (``shared/slurm/reference/out/85-99``): ``SLURM_JOB_NODELIST`` as a
hostlist, ``SLURM_TASKS_PER_NODE`` as ``2(x3)``, GPU device ids as comma lists; plus what
``torch.distributed`` reads (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK,
LOCAL_WORLD_SIZE).
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.domain.cluster import Cluster
from phalanx.domain.hostlist import compress
from phalanx.domain.job import JobSpec
from phalanx.sched.capacity import Allocation

__all__ = ["TaskPlace", "expand_pattern", "task_environment", "task_places"]


@dataclass(frozen=True, slots=True)
class TaskPlace:
    """One task of a job: which node (position in the allocation) and which ranks."""

    node_position: int
    local_rank: int
    global_rank: int


def task_places(alloc: Allocation, tasks_per_node: int) -> list[TaskPlace]:
    """Tasks in rank order: node by node, ``tasks_per_node`` on each (block distribution)."""
    places = []
    for position in range(len(alloc.nodes)):
        for local in range(tasks_per_node):
            places.append(TaskPlace(position, local, position * tasks_per_node + local))
    return places


def _repeat_counts(values: list[int]) -> str:
    # Slurm's compressed count list: "2(x3),1" for [2, 2, 2, 1].
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        count = j - i
        out.append(f"{values[i]}(x{count})" if count > 1 else str(values[i]))
        i = j
    return ",".join(out)


def task_environment(
    *,
    job_id: int,
    spec: JobSpec,
    alloc: Allocation,
    cluster: Cluster,
    place: TaskPlace,
    submit_dir: str,
    master_port: int,
    master_addr: str | None = None,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
) -> dict[str, str]:
    """The variables one task starts with (on top of the submitter's exported environment).

    ``master_addr`` is where rank 0 listens: the first node's name unless the node's address
    differs (emulated nodes on one machine all listen on 127.0.0.1)."""
    names = [cluster.nodes[i].name for i in alloc.nodes]
    nodelist = compress(names)
    per_node = spec.tasks_per_node
    ntasks = per_node * len(alloc.nodes)
    devices = alloc.devices[place.node_position]
    gpus = ",".join(str(d) for d in devices)
    env = {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
        "SLURM_JOB_NAME": spec.name,
        "SLURM_JOB_ACCOUNT": spec.account,
        "SLURM_JOB_PARTITION": spec.partition or "",
        "SLURM_JOB_QOS": spec.qos,
        "SLURM_JOB_USER": spec.user,
        "SLURM_PROCID": str(place.global_rank),
        "SLURM_LOCALID": str(place.local_rank),
        "SLURM_NODEID": str(place.node_position),
        "SLURMD_NODENAME": names[place.node_position],
        "SLURM_NTASKS": str(ntasks),
        "SLURM_NPROCS": str(ntasks),
        "SLURM_NTASKS_PER_NODE": str(per_node),
        "SLURM_TASKS_PER_NODE": _repeat_counts([per_node] * len(names)),
        "SLURM_JOB_NUM_NODES": str(len(names)),
        "SLURM_NNODES": str(len(names)),
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_CPUS_ON_NODE": str(alloc.cpus),
        "SLURM_JOB_CPUS_PER_NODE": _repeat_counts([alloc.cpus] * len(names)),
        "SLURM_SUBMIT_DIR": submit_dir,
        "MASTER_ADDR": master_addr if master_addr is not None else names[0],
        "MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(ntasks),
        "RANK": str(place.global_rank),
        "LOCAL_RANK": str(place.local_rank),
        "LOCAL_WORLD_SIZE": str(per_node),
    }
    if spec.cpus_per_task != 1:
        # Slurm sets it only when --cpus-per-task was given; 1 is the default here.
        env["SLURM_CPUS_PER_TASK"] = str(spec.cpus_per_task)
    if devices:
        env["CUDA_VISIBLE_DEVICES"] = gpus
        env["SLURM_JOB_GPUS"] = gpus
        env["SLURM_GPUS_ON_NODE"] = str(len(devices))
        if spec.gpus_per_task:
            env["SLURM_GPUS_PER_TASK"] = str(spec.gpus_per_task)
    if array_job_id is not None and array_task_id is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(array_job_id)
        env["SLURM_ARRAY_TASK_ID"] = str(array_task_id)
    return env


def expand_pattern(
    pattern: str,
    *,
    job_id: int,
    name: str,
    user: str,
    node: str,
    task: int,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
) -> str:
    """Slurm's filename pattern: %j %J %A %a %x %N %t %u and %% (a digit width like %4j
    zero-pads numbers, as Slurm does)."""
    values = {
        "j": str(job_id),
        "J": str(job_id),
        "A": str(array_job_id if array_job_id is not None else job_id),
        "a": str(array_task_id) if array_task_id is not None else "4294967294",
        "x": name,
        "N": node,
        "t": str(task),
        "u": user,
    }
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch != "%" or i + 1 == n:
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < n and pattern[j].isdigit():
            j += 1
        width = int(pattern[i + 1 : j]) if j > i + 1 else 0
        code = pattern[j] if j < n else ""
        if code == "%":
            out.append("%")
        elif code in values:
            value = values[code]
            out.append(value.zfill(width) if value.isdigit() else value)
        else:
            out.append(pattern[i : j + 1])  # not a pattern: kept as written
        i = j + 1
    return "".join(out)
