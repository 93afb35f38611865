"""Bare pods: one in-place engine job each; their status from the engine job and the agent's
container report (ready, restarts, CrashLoopBackOff); bad specs stay Pending with the field."""

from __future__ import annotations

from typing import Any

from phalanx.domain.state import JobState
from phalanx.workloads import barepod
from phalanx.workloads.plan import (
    ANNOTATION_JOB_ID,
    ANNOTATION_KEY,
    ANNOTATION_LOG,
    ContainerView,
    Context,
    EngineJob,
)

KILLED = "Container failed liveness probe, will be restarted"
CTX = Context(user="alice", log_dir="/logs", workdir="/w")


def bare(**spec: Any) -> dict[str, Any]:
    container = {"name": "web", "image": "python", "command": ["python3", "-m", "http.server"]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u-1", "annotations": {}},
        "spec": {"containers": [container], **spec},
        "status": {"phase": "Pending"},
    }


def running(pod: dict[str, Any], job_id: int = 5) -> dict[str, Any]:
    pod["metadata"]["annotations"][ANNOTATION_JOB_ID] = str(job_id)
    return pod


def conditions(pod: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in pod["status"]["conditions"]}


def test_owned_pods_are_not_bare() -> None:
    assert barepod.is_bare(bare())
    owned = bare()
    owned["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "controller": True}]
    assert not barepod.is_bare(owned)


def test_a_new_bare_pod_is_submitted_once_under_its_uid() -> None:
    plan = barepod.reconcile(bare(), None, 0, CTX)
    [sub] = plan.submit
    assert sub.key == "pod/u-1" == barepod.submission_key(bare()) and sub.pods == ("web",)
    assert sub.spec.account == "ns" and sub.spec.user == "alice"
    [task] = sub.spec.tasks
    assert task.restart == "Always" and task.output == "/logs/ns/web.log"
    [annotated] = plan.update
    assert annotated["metadata"]["annotations"] == {
        ANNOTATION_KEY: "pod/u-1",
        ANNOTATION_LOG: "/logs/ns/web.log",
    }


def test_a_bad_spec_stays_pending_saying_which_field() -> None:
    pod = bare(restartPolicy="Sometimes")
    plan = barepod.reconcile(pod, None, 0, CTX)
    assert plan.submit == []
    [new] = plan.update
    [cond] = [c for c in new["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "False" and cond["message"].startswith("spec.restartPolicy: ")
    [warning] = plan.events
    assert warning["type"] == "Warning" and warning["reason"] == "FailedCreate"
    assert barepod.reconcile(new, None, 1, CTX).events == []  # said once


def job(*containers: ContainerView | None) -> EngineJob:
    return EngineJob(id=5, state=JobState.RUNNING, start=1_000, nodes=("n1",),
                     addresses=("10.0.0.1",), containers=containers)  # fmt: skip


def test_a_running_pod_without_report_is_ready() -> None:
    [new] = barepod.reconcile(running(bare()), job(), 2_000, CTX).update
    assert new["status"]["phase"] == "Running" and new["spec"]["nodeName"] == "n1"
    assert conditions(new)["Ready"] == "True"
    [status] = new["status"]["containerStatuses"]
    assert status["ready"] and status["restartCount"] == 0


def test_a_crash_looping_pod_shows_the_agents_report() -> None:
    view = ContainerView(
        ready=False,
        started=False,
        restart_count=3,
        state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
        last_state={"terminated": {"exitCode": 1, "reason": "Error"}},
    )
    [new] = barepod.reconcile(running(bare()), job(view), 2_000, CTX).update
    assert new["status"]["phase"] == "Running"
    assert conditions(new)["Ready"] == "False" and conditions(new)["ContainersReady"] == "False"
    [ready] = [c for c in new["status"]["conditions"] if c["type"] == "Ready"]
    assert ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [web]"
    [status] = new["status"]["containerStatuses"]
    assert status["restartCount"] == 3 and not status["ready"]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["exitCode"] == 1
    # ready again: the conditions follow
    back = ContainerView(ready=True, started=True, restart_count=3,
                         state={"running": {"startedAt": "x"}})  # fmt: skip
    [again] = barepod.reconcile(new, job(back), 3_000, CTX).update
    assert conditions(again)["Ready"] == "True"
    assert barepod.reconcile(again, job(back), 4_000, CTX).update == []  # nothing changed


def test_an_ended_pod_keeps_its_end() -> None:
    ended = EngineJob(id=5, state=JobState.CANCELLED, start=1_000, end=2_000, signal=9,
                      nodes=("n1",), addresses=("10.0.0.1",))  # fmt: skip
    [new] = barepod.reconcile(running(bare()), ended, 3_000, CTX).update
    assert new["status"]["phase"] == "Failed"


def test_the_kubelets_events_as_a_probe_kills_and_the_container_backs_off() -> None:
    up = ContainerView(ready=True, started=True, restart_count=0,
                       state={"running": {"startedAt": "t0"}})  # fmt: skip
    [pod] = barepod.reconcile(running(bare()), job(up), 1_000, CTX).update
    message = "Liveness probe failed: dial tcp 127.0.0.1:9: connect: connection refused"
    killed = ContainerView(
        ready=False,
        started=False,
        restart_count=1,
        state={"waiting": {"reason": "CrashLoopBackOff"}},
        last_state={"terminated": {"exitCode": 143, "finishedAt": "t1", "message": KILLED}},
        probe_message=message,
    )  # fmt: skip
    plan = barepod.reconcile(pod, job(killed), 2_000, CTX)
    got = [(e["reason"], e["type"], e["message"]) for e in plan.events]
    assert got == [
        ("Unhealthy", "Warning", message),
        ("Killing", "Normal", "Container web failed liveness probe, will be restarted"),
        ("BackOff", "Warning", "Back-off restarting failed container web in pod web_ns(u-1)"),
    ]
    assert len({e["metadata"]["name"] for e in plan.events}) == 3
    [pod] = plan.update
    again = ContainerView(ready=True, started=True, restart_count=1,
                          state={"running": {"startedAt": "t2"}}, last_state=killed.last_state,
                          probe_message=message)  # fmt: skip
    plan = barepod.reconcile(pod, job(again), 3_000, CTX)
    assert [e["reason"] for e in plan.events] == ["Started"]
    [pod] = plan.update
    unready = ContainerView(ready=False, started=True, restart_count=1,
                            state={"running": {"startedAt": "t2"}}, last_state=killed.last_state,
                            probe_message="Readiness probe failed: HTTP probe failed with "
                            "statuscode: 503")  # fmt: skip
    plan = barepod.reconcile(pod, job(unready), 4_000, CTX)
    assert [(e["reason"], e["message"]) for e in plan.events] == [
        ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
    ]


def test_a_probed_pod_is_not_ready_before_its_first_report() -> None:
    probed = running(bare())
    probed["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 8000}}
    [new] = barepod.reconcile(probed, job(), 2_000, CTX).update
    assert conditions(new)["Ready"] == "False"
    [status] = new["status"]["containerStatuses"]
    assert not status["ready"] and status["started"]
    probed["spec"]["containers"][0]["startupProbe"] = {"tcpSocket": {"port": 8000}}
    [new] = barepod.reconcile(probed, job(), 2_000, CTX).update
    assert not new["status"]["containerStatuses"][0]["started"]
