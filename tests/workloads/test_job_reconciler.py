"""batch/v1 Job: pods, engine submissions and status, step by step."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.testing.workloads import Bench
from phalanx.workloads import job as kjob
from phalanx.workloads.plan import ANNOTATION_LOG, Context
from phalanx.workloads.timestamps import rfc3339

T0 = 1_764_613_704_000
CTX = Context(user="alice", log_dir="/logs", workdir="/work", priority_classes={"high": 1000})


def make_job(**spec: Any) -> dict[str, Any]:
    template = spec.pop("template", None) or {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["/bin/sh"],
                    "args": ["-c", "echo hi"],
                    "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
                }
            ],
            "restartPolicy": "Never",
        }
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "pi",
            "namespace": "team-a",
            "uid": "uid-1",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {"template": template, **spec},
    }


def step(bench: Bench, now: int, ctx: Context = CTX) -> kjob.Plan:
    plan = kjob.reconcile(
        bench.obj, list(bench.pods.values()), bench.engine(), now, ctx, bench.names
    )
    bench.apply(plan)
    return plan


def bench_for(obj: dict[str, Any]) -> Bench:
    return Bench(obj)


def test_creates_parallelism_pods_with_labels_owner_and_submissions() -> None:
    bench = bench_for(make_job(parallelism=2, completions=3))
    plan = step(bench, T0)
    assert sorted(p["metadata"]["name"] for p in plan.create) == ["pi-p0000", "pi-p0001"]
    pod = bench.pods["pi-p0000"]
    labels = pod["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "pi"
    assert labels["batch.kubernetes.io/controller-uid"] == labels["controller-uid"] == "uid-1"
    (owner,) = pod["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "pi",
        "uid": "uid-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert pod["metadata"]["annotations"][ANNOTATION_LOG] == "/logs/team-a/pi-p0000.log"
    assert pod["status"]["phase"] == "Pending"
    assert any(
        c["type"] == "phalanx.io/RunsOnHost" and "busybox" in c["message"]
        for c in pod["status"]["conditions"]
    )
    spec = plan.submit[0].spec
    assert spec.command == ("/bin/sh", "-c", "echo hi")
    assert (spec.user, spec.account, spec.cpus_per_task, spec.mem_per_node_mb) == (
        "alice",
        "team-a",
        1,
        200,
    )
    assert ("kueue.x-k8s.io/queue-name", "user-queue") in spec.extra
    assert spec.output == "/logs/team-a/pi-p0000.log" and spec.workdir == "/work"
    assert plan.submit[0].key == "kube/uid-1/pi-p0000"
    assert [e["reason"] for e in plan.events] == ["SuccessfulCreate", "SuccessfulCreate"]
    assert plan.events[0]["message"] == "Created pod: pi-p0000"
    assert bench.obj["status"]["active"] == 2
    assert bench.obj["status"]["ready"] == 0
    assert bench.obj["status"]["startTime"] == rfc3339(T0)


def test_runs_to_completion_with_counts_conditions_and_events() -> None:
    bench = bench_for(make_job(parallelism=2, completions=3))
    step(bench, T0)
    first, _second = sorted(bench.pods)
    bench.move(bench.job_of(first), JobState.RUNNING, T0 + 10)
    plan = step(bench, T0 + 10)
    assert bench.phases()[first] == "Running"
    assert bench.pods[first]["spec"]["nodeName"] == "node1"
    assert {e["reason"] for e in plan.events} == {"Scheduled", "Started"}
    assert bench.obj["status"]["ready"] == 1
    bench.move(bench.job_of(first), JobState.COMPLETED, T0 + 20)
    step(bench, T0 + 20)
    assert bench.phases()[first] == "Succeeded"
    term = bench.pods[first]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert len(bench.pods) == 3  # a third pod replaces the finished one: completions 3
    assert bench.obj["status"]["succeeded"] == 1 and bench.obj["status"]["active"] == 2
    for name in sorted(bench.pods):
        if bench.phases()[name] != "Succeeded":
            bench.move(bench.job_of(name), JobState.RUNNING, T0 + 30)
            bench.move(bench.job_of(name), JobState.COMPLETED, T0 + 40)
    plan = step(bench, T0 + 40)
    status = bench.obj["status"]
    assert status["succeeded"] == 3 and "active" not in status
    assert status["completionTime"] == rfc3339(T0 + 40)
    kinds = [(c["type"], c["status"], c["reason"]) for c in status["conditions"]]
    assert kinds == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert "Completed" in [e["reason"] for e in plan.events]
    assert step(bench, T0 + 50).status is None  # settled: nothing more to write


def test_backoff_limit_fails_the_job_and_stops_the_rest() -> None:
    bench = bench_for(make_job(parallelism=2, completions=4, backoffLimit=1))
    step(bench, T0)
    failures = 0
    while failures < 2:
        name = next(n for n, p in sorted(bench.phases().items()) if p == "Pending")
        bench.move(bench.job_of(name), JobState.RUNNING, T0)
        bench.move(bench.job_of(name), JobState.FAILED, T0 + 5, exit_code=3)
        failures += 1
        plan = step(bench, T0 + 5 * failures)
    failed = [p for p in bench.pods.values() if p["status"]["phase"] == "Failed"]
    assert len(failed) == 2
    assert failed[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    status = bench.obj["status"]
    assert status["failed"] == 2 and "active" not in status
    assert [c["type"] for c in status["conditions"]] == ["FailureTarget", "Failed"]
    assert status["conditions"][1]["reason"] == "BackoffLimitExceeded"
    assert "completionTime" not in status
    assert plan.cancel and plan.delete  # the pod still pending is stopped
    assert any(
        e["reason"] == "BackoffLimitExceeded" and e["type"] == "Warning" for e in plan.events
    )


def test_active_deadline_fails_with_deadline_exceeded() -> None:
    bench = bench_for(make_job(activeDeadlineSeconds=30))
    plan = step(bench, T0)
    assert plan.wake_at == T0 + 30 * SECOND
    (name,) = bench.pods
    bench.move(bench.job_of(name), JobState.RUNNING, T0 + 1)
    step(bench, T0 + 1)
    job_id = bench.job_of(name)
    plan = step(bench, T0 + 30 * SECOND)
    assert plan.cancel == [job_id] and plan.delete == [name]
    assert name not in bench.pods
    failed = bench.obj["status"]["conditions"][-1]
    assert (failed["type"], failed["reason"]) == ("Failed", "DeadlineExceeded")
    assert failed["message"] == "Job was active longer than specified deadline"


def test_indexed_job_pods_carry_their_index() -> None:
    bench = bench_for(make_job(completionMode="Indexed", completions=3, parallelism=3))
    plan = step(bench, T0)
    names = sorted(p["metadata"]["name"] for p in plan.create)
    assert names == ["pi-0-p0000", "pi-1-p0001", "pi-2-p0002"]
    pod = bench.pods["pi-1-p0001"]
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert pod["spec"]["hostname"] == "pi-1"
    spec = next(s.spec for s in plan.submit if s.pods == ("pi-1-p0001",))
    assert ("JOB_COMPLETION_INDEX", "1") in spec.environment
    for name in ("pi-0-p0000", "pi-2-p0002"):
        bench.move(bench.job_of(name), JobState.RUNNING, T0)
        bench.move(bench.job_of(name), JobState.COMPLETED, T0 + 1)
    step(bench, T0 + 1)
    assert bench.obj["status"]["completedIndexes"] == "0,2"
    bench.move(bench.job_of("pi-1-p0001"), JobState.RUNNING, T0)
    bench.move(bench.job_of("pi-1-p0001"), JobState.FAILED, T0 + 2)
    plan = step(bench, T0 + 2)
    assert [p["metadata"]["name"] for p in plan.create] == ["pi-1-p0003"]  # index 1 again


def test_suspend_makes_no_pods_and_resuming_creates_them() -> None:
    bench = bench_for(make_job(suspend=True, parallelism=2, completions=2))
    plan = step(bench, T0)
    assert not plan.create and not plan.submit
    cond = bench.obj["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Suspended", "True", "JobSuspended")
    assert "startTime" not in bench.obj["status"]
    bench.obj["spec"]["suspend"] = False  # Kueue admits the Job
    plan = step(bench, T0 + 5)
    assert len(plan.create) == 2
    cond = bench.obj["status"]["conditions"][0]
    assert (cond["status"], cond["reason"]) == ("False", "JobResumed")
    assert next(e["reason"] for e in plan.events) == "Resumed"
    bench.obj["spec"]["suspend"] = True
    running = sorted(bench.pods)
    ids = sorted(bench.job_of(n) for n in running)
    plan = step(bench, T0 + 6)
    assert sorted(plan.delete) == running and sorted(plan.cancel) == ids
    assert not bench.pods and "active" not in bench.obj["status"]


def test_ttl_after_finished_deletes_the_job() -> None:
    bench = bench_for(make_job(ttlSecondsAfterFinished=10))
    step(bench, T0)
    (name,) = bench.pods
    bench.move(bench.job_of(name), JobState.RUNNING, T0)
    bench.move(bench.job_of(name), JobState.COMPLETED, T0 + 1000)
    plan = step(bench, T0 + 1000)
    assert plan.wake_at == T0 + 11_000 and not plan.delete_self
    assert step(bench, T0 + 11_000).delete_self


def test_work_queue_job_is_done_when_one_succeeded_and_none_runs() -> None:
    bench = bench_for(make_job(parallelism=2))
    step(bench, T0)
    a, b = sorted(bench.pods)
    bench.move(bench.job_of(a), JobState.RUNNING, T0)
    bench.move(bench.job_of(a), JobState.COMPLETED, T0 + 1)
    plan = step(bench, T0 + 1)
    assert not plan.create and "Complete" not in str(bench.obj["status"].get("conditions"))
    bench.move(bench.job_of(b), JobState.RUNNING, T0)
    bench.move(bench.job_of(b), JobState.COMPLETED, T0 + 2)
    step(bench, T0 + 2)
    assert bench.obj["status"]["conditions"][-1]["type"] == "Complete"


def test_pending_pod_says_why_and_when() -> None:
    bench = bench_for(make_job())
    step(bench, T0)
    (name,) = bench.pods
    bench.move(
        bench.job_of(name), JobState.PENDING, T0, reason="Resources", expected_start=T0 + 60_000
    )
    plan = step(bench, T0 + 1)
    cond = next(c for c in bench.pods[name]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == f"Resources; expected to start at {rfc3339(T0 + 60_000)}"
    (ev,) = plan.events
    assert (ev["reason"], ev["type"], ev["source"]["component"]) == (
        "FailedScheduling",
        "Warning",
        "default-scheduler",
    )
    assert step(bench, T0 + 2).events == []  # the same reason is not told twice


def test_resubmits_a_pod_whose_submission_was_lost_under_the_same_key() -> None:
    bench = bench_for(make_job())
    plan = step(bench, T0)
    (name,) = bench.pods
    del bench.pods[name]["metadata"]["annotations"]["phalanx.io/job-id"]
    again = kjob.reconcile(
        bench.obj, list(bench.pods.values()), bench.engine(), T0 + 1, CTX, bench.names
    )
    assert [s.key for s in again.submit] == [plan.submit[0].key]
    assert not again.create


def test_bad_template_gives_a_warning_event_naming_the_field() -> None:
    obj = make_job()
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    bench = bench_for(obj)
    plan = step(bench, T0)
    assert not plan.create
    (ev,) = plan.events
    assert ev["reason"] == "FailedCreate" and ev["type"] == "Warning"
    assert "spec.template.spec.containers[0].resources.requests.cpu" in ev["message"]


def test_priority_class_name_sets_priority() -> None:
    obj = make_job()
    obj["spec"]["template"]["spec"]["priorityClassName"] = "high"
    plan = step(bench_for(obj), T0)
    spec = plan.submit[0].spec
    assert spec.nice == -1000 and ("scheduling.k8s.io/priority", "1000") in spec.extra


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"completionMode": "Indexed", "parallelism": 2}, "spec.completions"),
        ({"completionMode": "Sometimes"}, "spec.completionMode"),
        ({"backoffLimit": -1}, "spec.backoffLimit"),
        ({"activeDeadlineSeconds": 0}, "spec.activeDeadlineSeconds"),
    ],
)
def test_invalid_spec_names_the_field(spec: dict[str, Any], field: str) -> None:
    obj = make_job(**copy.deepcopy(spec))
    with pytest.raises(kjob.InputError) as err:
        kjob.job_shape(obj)
    assert err.value.field == field


def test_completed_indexes_compress_runs() -> None:
    assert kjob.completed_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert kjob.completed_indexes(set()) == ""


def test_the_reconciler_only_reads_its_job_and_pods() -> None:
    # The workload runner hands it the store's own Job (no copy): it must not change it.
    bench = bench_for(make_job(parallelism=2, completions=3))

    def checked_step(now: int) -> kjob.Plan:
        job, pods = copy.deepcopy(bench.obj), copy.deepcopy(bench.pods)
        plan = kjob.reconcile(
            bench.obj, list(bench.pods.values()), bench.engine(), now, CTX, bench.names
        )
        assert bench.obj == job and bench.pods == pods
        bench.apply(plan)
        return plan

    checked_step(T0)
    first = sorted(bench.pods)[0]
    bench.move(bench.job_of(first), JobState.RUNNING, T0 + 10)
    checked_step(T0 + 10)
    bench.move(bench.job_of(first), JobState.COMPLETED, T0 + 20)
    checked_step(T0 + 20)
    bench.obj["spec"]["suspend"] = True
    checked_step(T0 + 30)
    refused = bench_for(make_job(template={"spec": {"containers": [{"name": "c", "image": "x"}]}}))
    before = copy.deepcopy(refused.obj)
    plan = kjob.reconcile(refused.obj, [], refused.engine(), T0, CTX, refused.names)
    assert refused.obj == before and [e["reason"] for e in plan.events] == ["FailedCreate"]
