"""``jobset.x-k8s.io/v1alpha2`` JobSet: its child ``batch/v1`` Jobs, which the Job reconciler
(``phalanx.workloads.job``) then runs, and its status.

The JobSet controller (v0.8), in what carries over: each ``replicatedJobs`` entry makes
``replicas`` Jobs ``JOBSET-RJOB-INDEX`` from its template, owned by the JobSet, labelled and
annotated (Job and pod template) with ``jobset.sigs.k8s.io/jobset-name``,
``replicatedjob-name``, ``replicatedjob-replicas``, ``job-index``, ``job-global-index``,
``restart-attempt``, ``job-key`` and ``jobset-uid``; pods get the JobSet's name as their
``subdomain`` (``network.enableDNSHostnames``, default true; ``network.subdomain`` overrides).
``failurePolicy``: none, and a failed child Job fails the JobSet (FailedJobs); else the first
of its ``rules`` that matches the Job (``targetReplicatedJobs``, ``onJobFailureReasons``) acts
(FailJobSet; RestartJobSetAndIgnoreMaxRestarts), else RestartJobSet, until
``restartsCountTowardsMax`` reaches ``maxRestarts`` (then Failed, ReachedMaxRestarts). A
restart deletes every child Job and makes them again with ``restart-attempt`` one up.
``successPolicy``: operator All (every Job of the target replicated jobs, default all,
completed) or Any (one of them). ``startupPolicy`` InOrder makes a replicated job's Jobs only
once every Job before it is ready (ready plus succeeded pods reach its parallelism), with the
StartupPolicyInProgress and StartupPolicyCompleted conditions; AnyOrder makes them all at once.
``suspend`` is passed to the child Jobs (``plan.update``), with the Suspended condition. Once
Completed or Failed, its active child Jobs are deleted; ``ttlSecondsAfterFinished`` deletes the
JobSet. In the ``Plan``, ``create`` holds child Jobs and ``delete`` the names of child Jobs
(not pods).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.domain.time import SECOND, Instant
from phalanx.errors import InputError
from phalanx.workloads.conditions import condition, is_true, set_condition
from phalanx.workloads.events import event
from phalanx.workloads.plan import Context, Plan
from phalanx.workloads.pods import controller_ref
from phalanx.workloads.timestamps import parse_time

__all__ = [
    "GLOBAL_INDEX",
    "JOBSET_NAME",
    "JOBSET_UID",
    "JOB_INDEX",
    "JOB_KEY",
    "REPLICAS",
    "RESTART_ATTEMPT",
    "RJOB_NAME",
    "JobSetShape",
    "ReplicatedJob",
    "Rule",
    "jobset_shape",
    "reconcile",
]

_P = "jobset.sigs.k8s.io/"
JOBSET_NAME = _P + "jobset-name"
RJOB_NAME = _P + "replicatedjob-name"
REPLICAS = _P + "replicatedjob-replicas"
JOB_INDEX = _P + "job-index"
GLOBAL_INDEX = _P + "job-global-index"
RESTART_ATTEMPT = _P + "restart-attempt"
JOB_KEY = _P + "job-key"
JOBSET_UID = _P + "jobset-uid"
CONTROLLER = "jobset"
_IN_PROGRESS = ("InOrderStartupPolicyInProgress", "in order startup policy is in progress")
_STARTED = ("InOrderStartupPolicyCompleted", "in order startup policy has completed")


@dataclass(frozen=True, slots=True)
class ReplicatedJob:
    name: str
    replicas: int
    template: Mapping[str, Any]

    @property
    def parallelism(self) -> int:
        spec = self.template.get("spec") or {}
        value = spec.get("parallelism", 1)
        return value if isinstance(value, int) else 1


@dataclass(frozen=True, slots=True)
class Rule:
    """A ``failurePolicy.rules`` entry; empty ``targets``/``reasons`` match any."""

    action: str
    targets: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()


_RULE_ACTIONS = ("FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts")


@dataclass(frozen=True, slots=True)
class JobSetShape:
    """A JobSet's spec, defaulted as its webhook defaults it."""

    jobs: tuple[ReplicatedJob, ...]
    max_restarts: int = 0
    failure_policy: bool = False
    """Whether ``failurePolicy`` is given (without one, a failed Job fails the JobSet)."""
    rules: tuple[Rule, ...] = ()
    success_any: bool = False
    targets: tuple[str, ...] = ()
    """The replicated jobs success looks at (all when the spec names none)."""
    in_order: bool = False
    suspend: bool = False
    subdomain: str | None = None
    ttl_s: int | None = None


def _count(value: object, where: str, default: int | None) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("must be a non-negative integer", field=where)
    return value


def jobset_shape(obj: Mapping[str, Any]) -> JobSetShape:
    """``InputError`` naming the field for what the JobSet webhook refuses."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    raw = spec.get("replicatedJobs")
    if not isinstance(raw, list) or not raw:
        raise InputError("must have at least one replicated job", field="spec.replicatedJobs")
    jobs: list[ReplicatedJob] = []
    for i, body in enumerate(raw):
        where = f"spec.replicatedJobs[{i}]"
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            raise InputError("a replicated job needs a name", field=f"{where}.name")
        if any(j.name == body["name"] for j in jobs):
            raise InputError(f"duplicate name {body['name']!r}", field=f"{where}.name")
        template = body.get("template")
        if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
            raise InputError("must be a Job template", field=f"{where}.template")
        replicas = _count(body.get("replicas"), f"{where}.replicas", 1) or 0
        jobs.append(ReplicatedJob(str(body["name"]), replicas, template))
    names = [j.name for j in jobs]
    failure = spec.get("failurePolicy") or {}
    success = spec.get("successPolicy") or {}
    operator = success.get("operator", "All")
    if operator not in ("All", "Any"):
        raise InputError(f"unsupported value {operator!r}", field="spec.successPolicy.operator")
    targets = tuple(success.get("targetReplicatedJobs") or names)
    for t in targets:
        if t not in names:
            raise InputError(
                f"{t!r} is not a replicated job", field="spec.successPolicy.targetReplicatedJobs"
            )
    order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder", "AnyOrder")
    if order not in ("AnyOrder", "InOrder"):
        raise InputError(
            f"unsupported value {order!r}", field="spec.startupPolicy.startupPolicyOrder"
        )
    rules = []
    for i, rule in enumerate(failure.get("rules") or ()):
        where = f"spec.failurePolicy.rules[{i}]"
        action = rule.get("action") if isinstance(rule, Mapping) else None
        if action not in _RULE_ACTIONS:
            raise InputError(f"unsupported value {action!r}", field=f"{where}.action")
        rule_targets = tuple(rule.get("targetReplicatedJobs") or ())
        for t in rule_targets:
            if t not in names:
                raise InputError(
                    f"{t!r} is not a replicated job", field=f"{where}.targetReplicatedJobs"
                )
        rules.append(Rule(str(action), rule_targets, tuple(rule.get("onJobFailureReasons") or ())))
    network = spec.get("network") or {}
    dns = network.get("enableDNSHostnames", True)
    return JobSetShape(
        jobs=tuple(jobs),
        max_restarts=_count(failure.get("maxRestarts"), "spec.failurePolicy.maxRestarts", 0) or 0,
        failure_policy=bool(spec.get("failurePolicy")),
        rules=tuple(rules),
        success_any=operator == "Any",
        targets=targets,
        in_order=order == "InOrder",
        suspend=bool(spec.get("suspend", False)),
        subdomain=str(network.get("subdomain") or meta.get("name", "")) if dns else None,
        ttl_s=_count(spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished", None),
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _finished(job: Mapping[str, Any]) -> str | None:
    conditions = (job.get("status") or {}).get("conditions") or ()
    for kind in ("Complete", "Failed"):
        if is_true(conditions, kind):
            return kind
    return None


def _ready(job: Mapping[str, Any], rjob: ReplicatedJob) -> bool:
    status = job.get("status") or {}
    return int(status.get("ready", 0)) + int(status.get("succeeded", 0)) >= rjob.parallelism


def _child(
    obj: Mapping[str, Any],
    shape: JobSetShape,
    rjob: ReplicatedJob,
    index: int,
    glob: int,
    restarts: int,
) -> dict[str, Any]:
    meta = _meta(obj)
    jobset = str(meta.get("name", ""))
    namespace = str(meta.get("namespace", "default"))
    name = f"{jobset}-{rjob.name}-{index}"
    ours = {
        JOBSET_NAME: jobset,
        RJOB_NAME: rjob.name,
        REPLICAS: str(rjob.replicas),
        JOB_INDEX: str(index),
        GLOBAL_INDEX: str(glob),
        RESTART_ATTEMPT: str(restarts),
        JOB_KEY: hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest(),
        JOBSET_UID: str(meta.get("uid", "")),
    }
    template = rjob.template
    tmeta = template.get("metadata") or {}
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    pod_template = spec.setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **ours}
    pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **ours}
    if shape.subdomain is not None:
        pod_template.setdefault("spec", {})["subdomain"] = shape.subdomain
    if shape.suspend:
        spec["suspend"] = True
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**(tmeta.get("labels") or {}), **ours},
            "annotations": {**(tmeta.get("annotations") or {}), **ours},
            "ownerReferences": [controller_ref(obj)],
        },
        "spec": spec,
    }


def _event(
    obj: Mapping[str, Any],
    plan: Plan,
    reason: str,
    message: str,
    now: Instant,
    warning: bool = False,
) -> None:
    plan.events.append(
        event(
            obj, reason, message, now, seq=len(plan.events), warning=warning, component=CONTROLLER
        )
    )


def reconcile(
    obj: Mapping[str, Any],
    children: Sequence[Mapping[str, Any]],
    now: Instant,
    ctx: Context,
) -> Plan:
    """One pass of the JobSet controller over ``obj`` and its child Jobs (module docstring)."""
    del ctx  # the child Jobs' reconciler reads it
    plan = Plan()
    status: dict[str, Any] = copy.deepcopy(dict(obj.get("status") or {}))
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    status["conditions"] = conditions
    try:
        shape = jobset_shape(obj)
    except InputError as e:
        _event(obj, plan, "ValidationFailed", str(e), now, warning=True)
        return plan
    restarts = int(status.get("restarts", 0))
    by_name = {str(_meta(j).get("name")): j for j in children}
    # children of an earlier attempt are deleted (and made again on a later pass)
    current: dict[str, Mapping[str, Any]] = {}
    for name, job in sorted(by_name.items()):
        attempt = str((_meta(job).get("labels") or {}).get(RESTART_ATTEMPT, "0"))
        if attempt != str(restarts):
            plan.delete.append(name)
        else:
            current[name] = job
    done = status.get("terminalState")
    rjob_of = {
        f"{_meta(obj).get('name')}-{r.name}-{i}": r for r in shape.jobs for i in range(r.replicas)
    }

    if done is None:
        failed = [n for n, j in current.items() if _finished(j) == "Failed"]
        complete = {n for n, j in current.items() if _finished(j) == "Complete"}
        targets = [n for n, r in rjob_of.items() if r.name in shape.targets]
        succeeded = (
            any(n in complete for n in targets)
            if shape.success_any
            else bool(targets) and all(n in complete for n in targets)
        )
        if failed:
            action, reason, message = _on_failure(shape, current[failed[0]], rjob_of[failed[0]])
            counted = int(status.get("restartsCountTowardsMax", 0))
            if action == "RestartJobSet" and counted >= shape.max_restarts:
                action = "FailJobSet"
                reason = "ReachedMaxRestarts"
                message = "jobset failed due to reaching max number of restarts"
            if action == "FailJobSet":
                set_condition(conditions, "Failed", True, reason, message, now)
                status["terminalState"] = done = "Failed"
                _event(obj, plan, reason, message, now, warning=True)
            else:
                restarts += 1
                status["restarts"] = restarts
                if action == "RestartJobSet":
                    status["restartsCountTowardsMax"] = counted + 1
                plan.delete.extend(n for n in current if n not in plan.delete)
                _event(
                    obj,
                    plan,
                    "Restarting",
                    f"{message}; restart attempt {restarts}",
                    now,
                    warning=True,
                )
                current = {}
        elif succeeded:
            message = "jobset completed successfully"
            set_condition(conditions, "Completed", True, "AllJobsCompleted", message, now)
            status["terminalState"] = done = "Completed"
            _event(obj, plan, "AllJobsCompleted", message, now)
        if done is None:
            _suspend(plan, obj, shape, current, conditions, now)
            _create(plan, obj, shape, current, restarts, conditions, now)
    if done is not None:
        for name, job in current.items():
            if _finished(job) is None and name not in plan.delete:
                plan.delete.append(name)
        _expire(plan, shape, conditions, now)
    status["replicatedJobsStatus"] = _statuses(shape, rjob_of, current, plan)
    status.setdefault("restarts", restarts)
    if not conditions:
        status.pop("conditions")
    if status != (obj.get("status") or {}):
        plan.status = status
    return plan


def _suspend(
    plan: Plan,
    obj: Mapping[str, Any],
    shape: JobSetShape,
    current: Mapping[str, Mapping[str, Any]],
    conditions: list[dict[str, Any]],
    now: Instant,
) -> None:
    """``spec.suspend`` passed to the unfinished child Jobs (``plan.update``; Kueue admits a
    JobSet by unsuspending it), and the Suspended condition."""
    for job in current.values():
        if _finished(job) is None and bool((job.get("spec") or {}).get("suspend")) != shape.suspend:
            new = copy.deepcopy(dict(job))
            new.setdefault("spec", {})["suspend"] = shape.suspend
            plan.update.append(new)
    if shape.suspend and not is_true(conditions, "Suspended"):
        set_condition(conditions, "Suspended", True, "SuspendedJobs", "jobset is suspended", now)
        _event(obj, plan, "SuspendedJobs", "jobset is suspended", now)
    elif not shape.suspend and is_true(conditions, "Suspended"):
        set_condition(conditions, "Suspended", False, "ResumeJobs", "jobset is resumed", now)
        _event(obj, plan, "ResumeJobs", "jobset is resumed", now)


def _on_failure(
    shape: JobSetShape, job: Mapping[str, Any], rjob: ReplicatedJob
) -> tuple[str, str, str]:
    """(action, reason, message) for failed child ``job``: no failurePolicy fails the JobSet;
    else the first rule that matches (its replicated job, its Failed condition's reason), else
    RestartJobSet (counted toward ``maxRestarts``)."""
    if not shape.failure_policy:
        return "FailJobSet", "FailedJobs", "jobset failed due to one or more job failures"
    failed = condition((job.get("status") or {}).get("conditions") or (), "Failed") or {}
    for rule in shape.rules:
        if rule.targets and rjob.name not in rule.targets:
            continue
        if rule.reasons and failed.get("reason") not in rule.reasons:
            continue
        if rule.action == "FailJobSet":
            return (
                "FailJobSet",
                "FailJobSetFailurePolicyAction",
                "applying FailJobSet failure policy action",
            )
        if rule.action == "RestartJobSetAndIgnoreMaxRestarts":
            return (
                rule.action,
                "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction",
                "applying RestartJobSetAndIgnoreMaxRestarts failure policy action",
            )
        break
    return (
        "RestartJobSet",
        "RestartJobSetFailurePolicyAction",
        "applying RestartJobSet failure policy action",
    )


def _create(
    plan: Plan,
    obj: Mapping[str, Any],
    shape: JobSetShape,
    current: Mapping[str, Mapping[str, Any]],
    restarts: int,
    conditions: list[dict[str, Any]],
    now: Instant,
) -> None:
    """The child Jobs that do not exist yet: all, or (InOrder) a replicated job's only once
    every Job before it is ready."""
    jobset = str(_meta(obj).get("name", ""))
    glob = 0
    blocked = False
    for rjob in shape.jobs:
        names = [f"{jobset}-{rjob.name}-{i}" for i in range(rjob.replicas)]
        if not blocked:
            for i, name in enumerate(names):
                if name not in current and name not in plan.delete:
                    plan.create.append(_child(obj, shape, rjob, i, glob + i, restarts))
        if shape.in_order and not all(n in current and _ready(current[n], rjob) for n in names):
            blocked = True
        glob += rjob.replicas
    if not shape.in_order:
        return
    if blocked:
        if condition(conditions, "StartupPolicyInProgress") is None:
            set_condition(conditions, "StartupPolicyInProgress", True, *_IN_PROGRESS, now)
    elif not is_true(conditions, "StartupPolicyCompleted"):
        set_condition(conditions, "StartupPolicyInProgress", False, *_IN_PROGRESS, now)
        set_condition(conditions, "StartupPolicyCompleted", True, *_STARTED, now)


def _statuses(
    shape: JobSetShape,
    rjob_of: Mapping[str, ReplicatedJob],
    current: Mapping[str, Mapping[str, Any]],
    plan: Plan,
) -> list[dict[str, Any]]:
    gone = set(plan.delete)
    out = []
    for rjob in shape.jobs:
        mine = [j for n, j in current.items() if rjob_of.get(n) is rjob and n not in gone]
        out.append(
            {
                "name": rjob.name,
                "ready": sum(1 for j in mine if _finished(j) is None and _ready(j, rjob)),
                "succeeded": sum(1 for j in mine if _finished(j) == "Complete"),
                "failed": sum(1 for j in mine if _finished(j) == "Failed"),
                "active": sum(
                    1
                    for j in mine
                    if _finished(j) is None and int((j.get("status") or {}).get("active", 0)) > 0
                ),
                "suspended": sum(1 for j in mine if (j.get("spec") or {}).get("suspend")),
            }
        )
    return out


def _expire(
    plan: Plan, shape: JobSetShape, conditions: Sequence[Mapping[str, Any]], now: Instant
) -> None:
    if shape.ttl_s is None:
        return
    ended = None
    for kind in ("Completed", "Failed"):
        found = condition(conditions, kind)
        if found is not None and found.get("status") == "True":
            ended = parse_time(found.get("lastTransitionTime"))
    if ended is None:
        return
    due = ended + shape.ttl_s * SECOND
    if now >= due:
        plan.delete_self = True
    else:
        plan.wake(due)
