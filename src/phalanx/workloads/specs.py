"""Engine job requests for pods: one pod as a job of one task, or a gang of pods as one job
with a task per pod, in the namespace's account, queued as the owner's Kueue labels say."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.domain.jobspec import MAX_TIME, JobSpec, TaskLaunch
from phalanx.domain.queues import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from phalanx.domain.time import SECOND
from phalanx.errors import InputError
from phalanx.workloads.plan import Context
from phalanx.workloads.podspec import PodTask

__all__ = ["PRIORITY_EXTRA", "gang_spec", "log_file", "pod_spec", "priority"]

PRIORITY_EXTRA = "scheduling.k8s.io/priority"
"""``JobSpec.extra``: the value of the pod's PriorityClass (it is also the job's ``nice``,
negated, so that multifactor priority adds it)."""


def log_file(ctx: Context, namespace: str, pod: str) -> str:
    """Where pod ``pod``'s container output goes."""
    return posixpath.join(ctx.log_dir, namespace, f"{pod}.log")


def priority(template: Mapping[str, Any], ctx: Context, where: str) -> int:
    """The value of ``spec.priorityClassName`` (the global default class's when none)."""
    name = (template.get("spec") or {}).get("priorityClassName")
    if name is None:
        return ctx.global_default_priority
    if name not in ctx.priority_classes:
        raise InputError(
            f"no PriorityClass with name {name} was found", field=f"{where}.spec.priorityClassName"
        )
    return ctx.priority_classes[name]


def _extra(owner_labels: Mapping[str, str], image: str, value: int) -> tuple[tuple[str, str], ...]:
    extra = [
        (k, owner_labels[k]) for k in (QUEUE_NAME_LABEL, PRIORITY_CLASS_LABEL) if k in owner_labels
    ]
    extra.append(("image", image))
    if value:
        extra.append((PRIORITY_EXTRA, str(value)))
    return tuple(extra)


def _time_limit(template: Mapping[str, Any]) -> int | None:
    seconds = (template.get("spec") or {}).get("activeDeadlineSeconds")
    if not isinstance(seconds, int) or seconds <= 0:
        return None
    # Kubernetes takes any int64; past MAX_TIME (31,700 years) a deadline is none at all, and
    # a job spec refuses it.
    return min(seconds * SECOND, MAX_TIME)


def pod_spec(
    task: PodTask,
    *,
    ctx: Context,
    name: str,
    namespace: str,
    pod: str,
    owner_labels: Mapping[str, str],
    template: Mapping[str, Any],
    value: int,
    in_place: bool = False,
) -> JobSpec:
    """A job of one task running ``task`` as pod ``pod`` (job name ``name``). ``in_place``:
    the node's agent carries out the pod's ``restartPolicy`` and probes, as a kubelet does
    (bare pods, a ReplicaSet's); without, the task's exit ends the job, whose controller
    decides what follows (a Job's backoff, a ReplicaSet's replacement); its probes still run
    on its node."""
    output = log_file(ctx, namespace, pod)
    workdir = task.workdir or ctx.workdir
    own: tuple[TaskLaunch, ...] = ()
    if in_place or task.probes is not None:
        # A probed pod's probes run on its node either way (readiness is the agent's to
        # tell); only an in-place pod restarts there.
        own = (
            TaskLaunch(
                command=task.argv,
                environment=task.environment,
                workdir=workdir,
                output=output,
                restart=task.restart if in_place else "Never",
                probes=task.probes,
            ),
        )
    return JobSpec(
        name=name,
        user=ctx.user,
        account=namespace,
        partition=ctx.partition,
        qos=ctx.qos,
        gpus_per_task=task.gpus,
        cpus_per_task=task.cpus,
        mem_per_node_mb=task.mem_mb,
        time_limit=_time_limit(template),
        command=task.argv,
        workdir=workdir,
        output=output,
        environment=task.environment,
        nice=-value,
        extra=_extra(owner_labels, task.image, value),
        tasks=own,
    )


def gang_spec(
    tasks: Sequence[tuple[str, PodTask]],
    *,
    ctx: Context,
    name: str,
    namespace: str,
    owner_labels: Mapping[str, str],
    value: int,
    time_limit: int | None = None,
    elastic_min: int | None = None,
) -> JobSpec:
    """One job whose task r runs ``tasks[r]`` (pod name, task), all started together. Every
    task gets the most any pod asks for (a job's tasks are alike); the pods spread one per
    node where ``ctx.max_nodes`` allows, else pack evenly on the fewest nodes. With
    ``elastic_min``, an elastic job of one pod per node, on ``elastic_min`` to all of them."""
    count = len(tasks)
    per_node = next(
        d for d in range(1, count + 1) if count % d == 0 and count // d <= max(1, ctx.max_nodes)
    )
    if elastic_min is not None:
        per_node = 1
    nodes = count // per_node
    mem = max(t.mem_mb for _, t in tasks)
    first = tasks[0][1]
    return JobSpec(
        name=name,
        user=ctx.user,
        account=namespace,
        partition=ctx.partition,
        qos=ctx.qos,
        nodes_min=nodes if elastic_min is None else min(elastic_min, nodes),
        nodes_max=nodes,
        elastic=elastic_min is not None,
        tasks_per_node=per_node,
        gpus_per_task=max(t.gpus for _, t in tasks),
        cpus_per_task=max(t.cpus for _, t in tasks),
        mem_per_node_mb=mem * per_node,
        time_limit=time_limit,
        command=first.argv,
        workdir=first.workdir or ctx.workdir,
        output=log_file(ctx, namespace, tasks[0][0]),
        nice=-value,
        extra=_extra(owner_labels, first.image, value),
        tasks=tuple(
            TaskLaunch(
                command=t.argv,
                environment=t.environment,
                workdir=t.workdir or ctx.workdir,
                output=log_file(ctx, namespace, pod),
            )
            for pod, t in tasks
        ),
    )
