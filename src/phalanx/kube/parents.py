"""The passes of the workloads whose children are workloads, not pods: a JobSet's (its
child Jobs) and a Deployment's (its ReplicaSets), carried out by the workload runner
(``phalanx.kube.controllers``), which reconciles the children in turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.kube.workload_ports import JOBS, REPLICASETS, Key, Obj, Resource, engine_job
from phalanx.workloads import deployment, jobset
from phalanx.workloads.plan import Plan
from phalanx.workloads.selectors import match_labels

if TYPE_CHECKING:
    from phalanx.kube.controllers import WorkloadRunner

__all__ = ["deployment_pass", "jobset_pass"]


def jobset_pass(runner: WorkloadRunner, key: Key, obj: Obj, uid: str) -> Plan:
    """A JobSet's pass: its plan creates and deletes child Jobs, not pods."""
    children = runner.store.owned(JOBS, key[1], uid, {jobset.JOBSET_NAME: key[2]})
    shown = runner.kueue.view(key, obj)
    plan = jobset.reconcile(shown, children, runner.clock(), runner.context(obj))
    _carry_out_children(runner, key, JOBS, plan)
    if runner.kueue.queued(key, obj):
        mine = {(JOBS, key[1], str(c["metadata"]["name"])) for c in children}
        ids = sorted(i for i, owner in runner.owners.items() if owner in mine)
        found = runner.engine.jobs(finished=True, ids=ids) if ids else []
        jobs = {j.id: engine_job(j, runner.engine.cluster, runner.address) for j in found}
        runner.kueue.sync(key, obj, plan.status or obj.get("status"), jobs)
    return plan


def deployment_pass(runner: WorkloadRunner, key: Key, obj: Obj, uid: str) -> Plan:
    """A Deployment's pass: its plan creates, scales and deletes ReplicaSets."""
    labels = match_labels((obj.get("spec") or {}).get("selector"))
    children = runner.store.owned(REPLICASETS, key[1], uid, labels)
    plan = deployment.reconcile(obj, children, runner.clock(), runner.context(obj))
    return _carry_out_children(runner, key, REPLICASETS, plan)


def _carry_out_children(
    runner: WorkloadRunner, key: Key, child: Resource, plan: Plan
) -> Plan:
    """The plan of a workload whose children are workloads: children created, changed and
    deleted, its annotations, status, Events, wake-up time, its own deletion."""
    resource, namespace, name = key
    runner.reconciles += 1
    for made in plan.create:
        runner.quietly(runner.store.create, made)
    for changed in plan.update:  # a JobSet's spec.suspend, a ReplicaSet's replicas
        meta = {k: v for k, v in changed["metadata"].items() if k != "resourceVersion"}
        runner.quietly(runner.store.update, {**changed, "metadata": meta})
    for child_name in plan.delete:
        runner.quietly(runner.store.delete, child, namespace, child_name)
    if plan.annotate:
        current = runner.store.get(resource, namespace, name)
        if current is not None:
            meta = current["metadata"]
            meta["annotations"] = {**(meta.get("annotations") or {}), **plan.annotate}
            meta.pop("resourceVersion", None)
            runner.quietly(runner.store.update, current)
    if plan.status is not None:
        runner.backlog[key] = plan.status
    runner.backlog_events.extend(plan.events)
    if plan.wake_at is not None:
        runner.wakes[key] = plan.wake_at
    if plan.delete_self:
        runner.quietly(runner.store.delete, resource, namespace, name)
    return plan
