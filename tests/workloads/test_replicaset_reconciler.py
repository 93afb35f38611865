"""apps/v1 ReplicaSet: pods to the replica count, which go first, replacements, status."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.errors import InputError
from phalanx.testing.workloads import Bench
from phalanx.workloads import replicaset
from phalanx.workloads.plan import Context
from phalanx.workloads.replicaset import available, replicaset_shape
from phalanx.workloads.timestamps import rfc3339

T0 = 1_764_613_704_000
HOUR = 3600 * SECOND
CTX = Context(user="alice", log_dir="/logs", priority_classes={"serving": 100_000})


def make_rs(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    template = spec.pop("template", None) or {
        "metadata": {"labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "command": ["sleep", "1d"]}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid", "generation": 4},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template,
            **spec,
        },
    }


def step(bench: Bench, now: int, ctx: Context = CTX) -> replicaset.Plan:
    plan = replicaset.reconcile(
        bench.obj, list(bench.pods.values()), bench.engine(), now, ctx, bench.names
    )
    before = set(bench.pods)
    bench.apply(plan)
    for name in set(bench.pods) - before:
        bench.pods[name]["metadata"]["creationTimestamp"] = rfc3339(now)
    return plan


def running(bench: Bench, now: int) -> None:
    for job_id, job in list(bench.jobs.items()):
        if job.state is JobState.PENDING:
            bench.move(job_id, JobState.RUNNING, now)


def test_creates_the_replicas_each_an_unlimited_engine_job_at_its_priority() -> None:
    rs = make_rs(replicas=3)
    rs["spec"]["template"]["spec"]["priorityClassName"] = "serving"
    bench = Bench(rs)
    plan = step(bench, T0)
    assert len(plan.create) == 3 and len(plan.submit) == 3
    pod = plan.create[0]
    assert pod["metadata"]["name"] == "web-p0000"
    assert pod["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert pod["spec"]["restartPolicy"] == "Always"
    spec = plan.submit[0].spec
    assert spec.time_limit == CTX.service_time_limit  # not the partition's DefaultTime
    assert spec.nice == -100_000
    assert not spec.requeue  # a lost node ends it NODE_FAIL; the ReplicaSet replaces it
    assert [e["reason"] for e in plan.events] == ["SuccessfulCreate"] * 3
    assert bench.obj["status"] == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "observedGeneration": 4,
    }


def test_active_deadline_seconds_still_limits_a_pod() -> None:
    rs = make_rs(replicas=1)
    rs["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 60
    plan = step(Bench(rs), T0)
    assert plan.submit[0].spec.time_limit == 60 * SECOND


def test_ready_and_available_follow_the_pods_and_min_ready_seconds() -> None:
    bench = Bench(make_rs(replicas=2, minReadySeconds=10))
    step(bench, T0)
    running(bench, T0 + SECOND)
    plan = step(bench, T0 + 2 * SECOND)
    status = bench.obj["status"]
    assert status["readyReplicas"] == 2 and "availableReplicas" not in status
    assert status["fullyLabeledReplicas"] == 2
    assert plan.wake_at == T0 + 12 * SECOND
    step(bench, T0 + 12 * SECOND)
    assert bench.obj["status"]["availableReplicas"] == 2


def pod(name: str, phase: str, *, ready: bool | None = None, **fields: Any) -> dict[str, Any]:
    """A pod as the agent reports it: an explicit ``Ready`` condition where ``ready`` is given
    (since ``since``), on ``node``, created at ``created``, with ``restarts``."""
    status: dict[str, Any] = {"phase": phase, "startTime": rfc3339(T0)}
    if ready is not None:
        since = rfc3339(fields.get("since", T0))
        status["conditions"] = [
            {"type": "Ready", "status": str(ready), "lastTransitionTime": since}
        ]
    status["containerStatuses"] = [{"restartCount": fields.get("restarts", 0)}]
    return {
        "metadata": {"name": name, "creationTimestamp": rfc3339(fields.get("created", T0))},
        "spec": {"nodeName": fields["node"]} if "node" in fields else {},
        "status": status,
    }


def test_readiness_is_the_ready_condition_else_running() -> None:
    now = T0 + 60 * SECOND
    assert available(pod("a", "Running"), 0, now)  # no probe: running is ready
    assert not available(pod("b", "Running", ready=False), 0, now)
    assert not available(pod("c", "Pending", ready=True), 0, now)
    assert available(pod("d", "Running", ready=True, since=T0), 60, now)
    assert not available(pod("e", "Running", ready=True, since=T0 + SECOND), 60, now)


def test_scale_down_order_is_kubernetes_ranking() -> None:
    now = T0 + HOUR
    pods = [
        pod("old-ready", "Running", ready=True, since=T0, node="n1"),
        pod("new-ready", "Running", ready=True, since=T0 + 50 * SECOND, node="n2"),
        pod("restarted", "Running", ready=True, since=T0, node="n3", restarts=4),
        pod("young", "Running", ready=True, since=T0, node="n4", created=T0 + SECOND),
        pod("not-ready", "Running", ready=False, node="n5"),
        pod("pending-bound", "Pending", node="n6"),
        pod("unbound", "Running"),
    ]
    order = [p["metadata"]["name"] for p in replicaset.deletion_order(pods, now)]
    assert order == [
        "unbound",
        "pending-bound",
        "not-ready",
        "new-ready",
        "restarted",
        "young",
        "old-ready",
    ]


def test_pods_doubled_up_on_a_node_go_before_lone_ones() -> None:
    pods = [
        pod("lone-newest", "Running", node="a", created=T0 + 9 * SECOND),
        pod("shared-1", "Running", node="b"),
        pod("shared-2", "Running", node="b"),
    ]
    first = replicaset.deletion_order(pods, T0 + HOUR)[0]["metadata"]["name"]
    assert first.startswith("shared")


def test_scale_down_cancels_and_deletes_pending_pods_first() -> None:
    bench = Bench(make_rs(replicas=3))
    step(bench, T0)
    names = sorted(bench.pods)
    bench.move(bench.job_of(names[0]), JobState.RUNNING, T0)
    bench.move(bench.job_of(names[2]), JobState.RUNNING, T0)
    step(bench, T0 + SECOND)
    jobs = {n: bench.job_of(n) for n in names}
    bench.obj["spec"]["replicas"] = 1
    plan = step(bench, T0 + 2 * SECOND)
    assert plan.delete[0] == names[1]  # the pending one
    assert len(plan.delete) == 2 and len(bench.pods) == 1
    assert plan.cancel == [jobs[n] for n in plan.delete]
    assert [e["reason"] for e in plan.events] == ["SuccessfulDelete"] * 2
    assert bench.obj["status"]["replicas"] == 1


@pytest.mark.parametrize(
    "state", [JobState.NODE_FAIL, JobState.FAILED, JobState.CANCELLED, JobState.COMPLETED]
)
def test_a_pod_whose_job_ended_is_replaced_in_the_same_pass(state: JobState) -> None:
    bench = Bench(make_rs(replicas=2))
    step(bench, T0)
    running(bench, T0)
    step(bench, T0 + SECOND)
    lost = sorted(bench.pods)[0]
    bench.move(bench.job_of(lost), state, T0 + 2 * SECOND)
    plan = step(bench, T0 + 3 * SECOND)
    assert plan.delete == [lost]
    assert len(plan.create) == 1 and len(plan.submit) == 1
    assert len(bench.pods) == 2 and lost not in bench.pods
    assert bench.obj["status"]["replicas"] == 2


def test_a_pod_deleted_by_the_user_is_replaced() -> None:
    bench = Bench(make_rs(replicas=2))
    step(bench, T0)
    del bench.pods[sorted(bench.pods)[0]]
    plan = step(bench, T0 + SECOND)
    assert len(plan.create) == 1 and len(bench.pods) == 2


def test_a_bad_template_says_so_and_makes_nothing() -> None:
    rs = make_rs(replicas=2)
    rs["spec"]["template"]["spec"]["containers"][0].pop("command")
    plan = step(Bench(rs), T0)
    assert not plan.create
    assert plan.events[0]["reason"] == "FailedCreatePod"
    assert plan.status is not None
    failure = plan.status["conditions"][0]
    assert (failure["type"], failure["reason"]) == ("ReplicaFailure", "FailedCreate")
    assert "command" in failure["message"]


def test_selector_must_select_the_template() -> None:
    rs = make_rs()
    rs["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(InputError, match="selector"):
        replicaset_shape(rs)
    bench = Bench(rs)
    plan = step(bench, T0)
    assert not plan.create and plan.events[0]["reason"] == "FailedCreate"
    assert "spec.template.metadata.labels" in plan.events[0]["message"]
    assert not step(bench, T0 + SECOND).events  # once per generation
    bench.obj["metadata"]["generation"] += 1
    assert step(bench, T0 + 2 * SECOND).events
    expr = make_rs()
    expr["spec"]["selector"] = {
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]
    }
    assert replicaset_shape(expr).replicas == 3
    bad = copy.deepcopy(expr)
    bad["spec"]["selector"]["matchExpressions"][0]["operator"] = "Near"
    with pytest.raises(InputError, match="operator"):
        replicaset_shape(bad)


def test_a_preempted_pod_waits_as_pending_and_is_not_replaced() -> None:
    bench = Bench(make_rs(replicas=1))
    step(bench, T0)
    running(bench, T0)
    step(bench, T0 + SECOND)
    (name,) = bench.pods
    bench.move(bench.job_of(name), JobState.REQUEUED, T0 + 2 * SECOND)
    plan = step(bench, T0 + 3 * SECOND)
    assert not plan.create and not plan.delete
    assert bench.pods[name]["status"]["phase"] == "Pending"
    assert bench.obj["status"]["replicas"] == 1 and "readyReplicas" not in bench.obj["status"]


def test_a_pod_that_crashes_as_it_starts_is_replaced_after_a_back_off() -> None:
    bench = Bench(make_rs(replicas=1))
    step(bench, T0)
    (first,) = bench.pods
    bench.move(bench.job_of(first), JobState.RUNNING, T0)
    bench.move(bench.job_of(first), JobState.FAILED, T0 + 500)  # `false` as the command
    plan = step(bench, T0 + SECOND)
    assert not plan.create and not plan.delete and plan.wake_at == T0 + 500 + 10 * SECOND
    assert bench.pods[first]["status"]["phase"] == "Failed"
    assert [e["reason"] for e in plan.events if e["reason"] == "BackOff"] == ["BackOff"]
    assert bench.obj["status"]["replicas"] == 1
    assert not step(bench, T0 + 5 * SECOND).create  # still backing off
    plan = step(bench, T0 + 11 * SECOND)
    assert plan.delete == [first] and len(plan.create) == 1
    # scaled to zero meanwhile: the pod backing off just goes
    bench2 = Bench(make_rs(replicas=1))
    step(bench2, T0)
    (pod,) = bench2.pods
    bench2.move(bench2.job_of(pod), JobState.RUNNING, T0)
    bench2.move(bench2.job_of(pod), JobState.FAILED, T0 + 100)
    bench2.obj["spec"]["replicas"] = 0
    plan = step(bench2, T0 + SECOND)
    assert plan.delete == [pod] and not plan.create and not bench2.pods
