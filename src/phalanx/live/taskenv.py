"""What each task of a job sees: Slurm's environment variables and output file names.

Pure functions: the executor calls them for every task it starts (``task_environment``), and
for every task of an srun step (``step_environment`` on top). Names and formats follow a real
Slurm 22.05 (``shared/slurm/reference/out/85-99``, compared variable by variable in
``tests/slurm/test_job_environment.py``): ``SLURM_JOB_NODELIST`` as a hostlist,
``SLURM_TASKS_PER_NODE`` as ``2(x3)``, GPU device ids as comma lists; plus what
``torch.distributed`` reads (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK,
LOCAL_WORLD_SIZE).

As in Slurm, the variables that echo a submission option (``SLURM_GPUS_PER_TASK``,
``SLURM_GPUS_PER_NODE``, ``SLURM_MEM_PER_CPU``, ``SLURM_PRIO_PROCESS``, ``SLURM_SUBMIT_HOST``...)
are not set here: the submitting command (sbatch, srun, salloc) puts them in the job's
environment, and an srun step binds one GPU set per task when its environment has
``SLURM_GPUS_PER_TASK`` (Slurm's srun reads that variable as ``--gpus-per-task``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from phalanx.domain.cluster import Cluster
from phalanx.domain.hostlist import compress
from phalanx.domain.jobspec import JobSpec
from phalanx.sched.capacity import Allocation

__all__ = [
    "TaskPlace",
    "expand_pattern",
    "step_environment",
    "task_environment",
    "task_places",
    "topology_address",
]


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


SLURM_PROTOCOL = "9728:109"
"""The end of ``SLURM_WORKING_CLUSTER`` (``name:host:port:protocol:select plugin``): Slurm
22.05's RPC protocol version and the id of select/cons_tres, as the reference sets them."""
SLURMCTLD_PORT = 6817
"""Slurm's default SlurmctldPort, in ``SLURM_WORKING_CLUSTER``: Phalanx's controller does not
speak Slurm's RPC on any port, and no Phalanx command reads the variable."""


def topology_address(cluster: Cluster, node: int) -> tuple[str, str]:
    """``SLURM_TOPOLOGY_ADDR`` and ``SLURM_TOPOLOGY_ADDR_PATTERN`` of a node: its switches
    from the top down, then its name (``spine.leaf0.n01``, ``switch.switch.node``)."""
    n = cluster.nodes[node]
    path = [n.name]
    kinds = ["node"]
    if 0 <= n.leaf < len(cluster.leaves):
        leaf = cluster.leaves[n.leaf]
        path.insert(0, leaf.name)
        kinds.insert(0, "switch")
        if leaf.parent is not None:
            path.insert(0, cluster.spines[leaf.parent].name)
            kinds.insert(0, "switch")
    return ".".join(path), ".".join(kinds)


def _gpu_variables(devices: tuple[int, ...] | list[int]) -> dict[str, str]:
    # Slurm's gres/gpu plugin sets the same list for CUDA, ROCm and oneAPI alike.
    ids = ",".join(str(d) for d in devices)
    return {
        "CUDA_VISIBLE_DEVICES": ids,
        "GPU_DEVICE_ORDINAL": ids,
        "ROCR_VISIBLE_DEVICES": ids,
        "ZE_AFFINITY_MASK": ids,
    }


def _array_variables(spec: JobSpec, array_job_id: int, array_task_id: int) -> dict[str, str]:
    ids = sorted(spec.array.task_ids) if spec.array is not None else [array_task_id]
    strides = {b - a for a, b in itertools.pairwise(ids)}
    return {
        "SLURM_ARRAY_JOB_ID": str(array_job_id),
        "SLURM_ARRAY_TASK_ID": str(array_task_id),
        "SLURM_ARRAY_TASK_COUNT": str(len(ids)),
        "SLURM_ARRAY_TASK_MIN": str(ids[0]),
        "SLURM_ARRAY_TASK_MAX": str(ids[-1]),
        # Slurm's step is the stride of an evenly spaced range, else 1.
        "SLURM_ARRAY_TASK_STEP": str(strides.pop() if len(strides) == 1 else 1),
    }


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
    uid: int | None = None,
    gid: int | None = None,
    controller_host: str = "localhost",
) -> dict[str, str]:
    """The variables one task starts with (on top of the submitter's exported environment).

    ``master_addr`` is where rank 0 listens: the first node's name unless the node's address
    differs (emulated nodes on one machine all listen on 127.0.0.1). ``uid`` and ``gid`` are
    the job's user's (``SLURM_JOB_UID``, ``SLURM_JOB_GID``: left out when unknown);
    ``controller_host`` goes in ``SLURM_WORKING_CLUSTER``.

    A batch job's script (``spec.batch``) is Slurm's batch step: task 0 of the job, on its
    first node, with all of that node's GPUs, ``SLURM_GTIDS=0``."""
    names = [cluster.nodes[i].name for i in alloc.nodes]
    nodelist = compress(names)
    per_node = spec.tasks_per_node
    ntasks = per_node * len(alloc.nodes)
    devices = alloc.devices[place.node_position]
    gpus = ",".join(str(d) for d in devices)
    partition = spec.partition or cluster.default_partition().name
    address, pattern = topology_address(cluster, alloc.nodes[place.node_position])
    first = place.node_position * per_node
    gtids = "0" if spec.batch else ",".join(str(r) for r in range(first, first + per_node))
    env = {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
        "SLURM_JOB_NAME": spec.name,
        "SLURM_JOB_ACCOUNT": spec.account,
        "SLURM_JOB_PARTITION": partition,
        "SLURM_JOB_QOS": spec.qos,
        "SLURM_JOB_USER": spec.user,
        "SLURM_CLUSTER_NAME": cluster.name,
        "SLURM_WORKING_CLUSTER": f"{cluster.name}:{controller_host}:{SLURMCTLD_PORT}:"
        + SLURM_PROTOCOL,
        "SLURM_PROCID": str(place.global_rank),
        "SLURM_LOCALID": str(place.local_rank),
        "SLURM_NODEID": str(place.node_position),
        "SLURM_GTIDS": gtids,
        "SLURMD_NODENAME": names[place.node_position],
        "SLURM_TOPOLOGY_ADDR": address,
        "SLURM_TOPOLOGY_ADDR_PATTERN": pattern,
        # Slurm's cloud nodes' addresses; Phalanx has none, and Slurm then says "(null)".
        "SLURM_NODE_ALIASES": "(null)",
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
    if uid is not None and gid is not None:
        env["SLURM_JOB_UID"] = str(uid)
        env["SLURM_JOB_GID"] = str(gid)
    if spec.cpus_per_task != 1:
        # Slurm sets it only when --cpus-per-task was given; 1 is the default here.
        env["SLURM_CPUS_PER_TASK"] = str(spec.cpus_per_task)
    submitted = dict(spec.environment)
    if alloc.mem_mb and not {"SLURM_MEM_PER_CPU", "SLURM_MEM_PER_GPU"} & submitted.keys():
        # --mem-per-cpu and --mem-per-gpu are per node here: the submitter's own variable
        # says which was asked for, as in Slurm, where only one of the three is set.
        env["SLURM_MEM_PER_NODE"] = str(alloc.mem_mb)
    if devices:
        env.update(_gpu_variables(devices))
        env["SLURM_JOB_GPUS"] = gpus
        env["SLURM_GPUS_ON_NODE"] = str(len(devices))
        per_task = submitted.get("SLURM_GPUS_PER_TASK")
        if per_task and not spec.batch:
            # A job that srun started outside an allocation with --gpus-per-task: each task
            # its own GPUs, as in a step.
            env.update(_gpu_variables(_task_devices(devices, per_task, place.local_rank)))
    if array_job_id is not None and array_task_id is not None:
        env.update(_array_variables(spec, array_job_id, array_task_id))
    return env


def _task_devices(devices: tuple[int, ...], per_task: str, local_rank: int) -> list[int]:
    """The GPUs of one task of a node under ``--gpus-per-task`` (``2`` or ``h100:2``): the
    node's, ``per_task`` each, in local rank order; all of them if the text is not a count."""
    count = per_task.rpartition(":")[2]
    if not count.isdecimal() or int(count) < 1:
        return list(devices)
    n = int(count)
    mine = list(devices[local_rank * n : (local_rank + 1) * n])
    return mine or list(devices)


def step_environment(
    *,
    step: int,
    alloc: Allocation,
    cluster: Cluster,
    ntasks: int,
    nodes: int,
    per_node: int,
    place: TaskPlace,
    job_nodes: tuple[int, ...],
    environment: dict[str, str],
) -> dict[str, str]:
    """What srun adds for one task of step ``step`` (on top of ``task_environment`` for the
    step's part ``alloc`` of the job, whose nodes are ``job_nodes``): ``ntasks`` tasks over the
    first ``nodes`` nodes, ``per_node`` on each but the last (block distribution).
    ``environment`` is the step's own (srun's caller's): with ``SLURM_GPUS_PER_TASK`` each
    task gets its own GPUs (``SLURM_STEP_GPUS``, ``CUDA_VISIBLE_DEVICES``...), else all of the
    node's."""
    names = compress([cluster.nodes[i].name for i in alloc.nodes[:nodes]])
    counts = [max(0, min(per_node, ntasks - i * per_node)) for i in range(nodes)]
    first = place.node_position * per_node
    node_ranks = range(first, first + counts[place.node_position])
    env = {
        "SLURM_STEP_ID": str(step),
        "SLURM_STEPID": str(step),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_STEP_NUM_NODES": str(nodes),
        "SLURM_STEP_NODELIST": names,
        "SLURM_STEP_TASKS_PER_NODE": _repeat_counts(counts),
        "SLURM_NODELIST": names,
        "SLURM_NTASKS": str(ntasks),
        "SLURM_NPROCS": str(ntasks),
        "SLURM_GTIDS": ",".join(str(r) for r in node_ranks),
        "WORLD_SIZE": str(ntasks),
        "SLURM_DISTRIBUTION": "block",
        "SLURM_JOB_NODELIST": compress([cluster.nodes[i].name for i in job_nodes]),
        "SLURM_JOB_NUM_NODES": str(len(job_nodes)),
        # srun's legacy name of the allocation's CPUs for heterogeneous jobs: group 0.
        "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0": _repeat_counts([alloc.cpus] * len(job_nodes)),
    }
    devices = alloc.devices[place.node_position]
    if devices:
        per_task = environment.get("SLURM_GPUS_PER_TASK")
        mine = _task_devices(devices, per_task, place.local_rank) if per_task else devices
        env.update(_gpu_variables(mine))
        env["SLURM_STEP_GPUS"] = ",".join(str(d) for d in mine)
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
        while j < n and pattern[j].isdecimal():
            j += 1
        width = int(pattern[i + 1 : j]) if j > i + 1 else 0
        code = pattern[j] if j < n else ""
        if code == "%":
            out.append("%")
        elif code in values:
            value = values[code]
            out.append(value.zfill(width) if value.isdecimal() else value)
        else:
            out.append(pattern[i : j + 1])  # not a pattern: kept as written
        i = j + 1
    return "".join(out)
