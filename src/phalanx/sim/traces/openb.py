"""Reader of the Alibaba 2023 GPU traces ("openb", FGD paper, USENIX ATC'23), and their cluster.

Pod lists: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`` (times in seconds). Each pod is one single-task job:

- submit: ``creation_time``; runtime: ``deletion_time - scheduled_time`` when the pod was
  scheduled and that is positive, else ``deletion_time - creation_time``; at least 1 s.
- GPUs: ``num_gpu 0`` -> CPU-only; ``num_gpu 1`` with ``gpu_milli`` below 1000 -> a fraction
  of one GPU (``JobSpec.gpu_milli``); otherwise ``num_gpu`` whole GPUs on one node.
- CPUs: ``ceil(cpu_milli / 1000)``; memory: ``memory_mib``; ``gpu_spec`` ``A|B`` -> allowed
  GPU models; account and user: ``qos`` (LS, BE, Burstable, Guaranteed).
- time limit: ``estimates.estimate_limit``, indexed by data row. ``pod_phase`` is ignored: the
  paper replays every pod, whatever became of it.

The ``multigpuNN`` resamplings have no time columns. Their pods are submitted 1 s apart in file
order and run for ``UNTIMED_RUNTIME`` (a year): the paper's experiment, where tasks arrive in
trace order and never leave.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from phalanx.domain.cluster import Account, Cluster, Node, Partition, Qos, Switch
from phalanx.domain.jobspec import MILLI, JobSpec
from phalanx.domain.time import DAY, SECOND, Duration, Instant
from phalanx.errors import TraceError
from phalanx.sim.traces.estimates import estimate_limit
from phalanx.sim.traces.options import NO_OPTIONS, TraceOptions, select
from phalanx.sim.traces.row import Cells, csv_records, seconds_to_ms
from phalanx.sim.workload import TraceJob

__all__ = ["COLUMNS", "NODE_COLUMNS", "UNTIMED_RUNTIME", "openb_cluster", "read_openb"]

COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
"""Required pod columns; the time columns are optional as a group (see the module docstring)."""
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
UNTIMED_RUNTIME: Duration = 365 * DAY


class _Pod(NamedTuple):
    submit: Instant
    runtime: Duration
    spec: JobSpec
    line: int


def read_openb(
    path: str,
    options: TraceOptions = NO_OPTIONS,
) -> list[TraceJob]:
    """Jobs of an openb pod list, options applied as ``options.select`` describes."""
    options.check(path)
    seed = options.seed
    pods = [_parse(cells, index) for index, cells in enumerate(csv_records(path, COLUMNS))]
    kept = select([pod.submit for pod in pods], options)
    jobs = []
    for index, at in kept:
        pod = pods[index]
        # The estimate is drawn only for kept pods; the spec is otherwise final.
        spec = replace(pod.spec, time_limit=estimate_limit(pod.runtime, seed, index))
        jobs.append(TraceJob(at, spec, pod.runtime, trace_id=spec.name, line=pod.line))
    return jobs


def _parse(cells: Cells, index: int) -> _Pod:
    gpus, milli = cells.count("num_gpu"), cells.count("gpu_milli")
    if gpus == 0 and milli:
        raise cells.error("a GPU share needs num_gpu 1", "gpu_milli")
    if gpus > 1 and milli != MILLI:
        raise cells.error("several GPUs must be whole (gpu_milli 1000)", "gpu_milli")
    if milli > MILLI:
        raise cells.error(f"more than one GPU's worth: {milli}", "gpu_milli")
    fraction = gpus == 1 and 0 < milli < MILLI
    models = cells.opt_text("gpu_spec")
    spec = JobSpec(
        name=cells.text("name"),
        user=cells.text("qos", "default"),
        account=cells.text("qos", "default"),
        gpus_per_task=0 if fraction else gpus,
        gpu_milli=milli if fraction else 0,
        cpus_per_task=-(-cells.count("cpu_milli") // 1000),
        mem_per_node_mb=cells.count("memory_mib"),
        gpu_models=frozenset(m for m in (models or "").split("|") if m),
    )
    if "creation_time" not in cells.values:
        return _Pod(index * SECOND, UNTIMED_RUNTIME, spec, cells.line)
    created = seconds_to_ms(cells.seconds("creation_time"))
    deleted = seconds_to_ms(cells.seconds("deletion_time"))
    scheduled = cells.opt_seconds("scheduled_time")
    runtime = deleted - created
    if scheduled is not None and deleted > seconds_to_ms(scheduled):
        runtime = deleted - seconds_to_ms(scheduled)
    return _Pod(created, max(runtime, SECOND), spec, cells.line)


def openb_cluster(node_csv_path: str, nodes_per_switch: int = 16) -> Cluster:
    """The cluster of an openb node list: nodes in file order, ``nodes_per_switch`` per leaf.

    One spine over all leaves, one default partition ``gpu`` with every node, the ``root``
    account (trace accounts hang under it implicitly) and the ``normal`` QOS.
    """
    if nodes_per_switch < 1:
        raise TraceError(
            "nodes per switch must be at least 1", source=node_csv_path, field="nodes_per_switch"
        )
    nodes = []
    for index, cells in enumerate(csv_records(node_csv_path, NODE_COLUMNS)):
        nodes.append(
            Node(
                index=index,
                name=cells.text("sn"),
                gpus=cells.count("gpu"),
                gpu_model=cells.text("model", ""),
                cpus=cells.count("cpu_milli") // 1000,
                memory_mb=cells.count("memory_mib"),
                leaf=index // nodes_per_switch,
            )
        )
    if not nodes:
        raise TraceError("no nodes in the node list", source=node_csv_path)
    all_nodes = tuple(range(len(nodes)))
    leaves = tuple(
        Switch(leaf, f"leaf{leaf}", all_nodes[start : start + nodes_per_switch], parent=0)
        for leaf, start in enumerate(range(0, len(nodes), nodes_per_switch))
    )
    spine = Switch(0, "spine0", tuple(leaf.index for leaf in leaves))
    return Cluster(
        nodes=tuple(nodes),
        leaves=leaves,
        spines=(spine,),
        partitions={"gpu": Partition("gpu", all_nodes, default=True)},
        accounts={"root": Account("root", None)},
        qos={"normal": Qos("normal")},
        name="openb",
    )
