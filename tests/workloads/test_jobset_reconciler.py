"""JobSet reconciler: child Jobs, their labels, failure, success and startup policies."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.domain.time import SECOND
from phalanx.errors import InputError
from phalanx.workloads import jobset
from phalanx.workloads.plan import Context, Plan

CTX = Context()
T0 = 1_000 * SECOND


def jobset_obj(**spec: Any) -> dict[str, Any]:
    template = {
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": {"containers": [{"name": "c", "image": "b", "command": ["true"]}]}
            },
        }
    }
    body: dict[str, Any] = {
        "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": copy.deepcopy(template)},
            {"name": "workers", "replicas": 2, "template": copy.deepcopy(template)},
        ]
    }
    body.update(spec)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns", "uid": "u9"},
        "spec": body,
    }


class World:
    """The JobSet and its child Jobs in memory; a test sets the children's conditions."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.jobs: dict[str, dict[str, Any]] = {}
        self.plans: list[Plan] = []

    def step(self, now: int) -> Plan:
        plan = jobset.reconcile(self.obj, list(self.jobs.values()), now, CTX)
        for child in plan.create:
            assert child["metadata"]["name"] not in self.jobs
            self.jobs[child["metadata"]["name"]] = copy.deepcopy(child)
        for name in plan.delete:
            self.jobs.pop(name)
        for child in plan.update:
            self.jobs[child["metadata"]["name"]] = copy.deepcopy(child)
        if plan.status is not None:
            self.obj["status"] = plan.status
        self.plans.append(plan)
        return plan

    def finish(self, name: str, kind: str) -> None:
        self.jobs[name]["status"] = {"conditions": [{"type": kind, "status": "True"}]}

    def ready(self, name: str) -> None:
        self.jobs[name]["status"] = {"ready": 2, "active": 2}


def test_child_jobs_named_labelled_and_owned() -> None:
    w = World(jobset_obj())
    w.step(T0)
    assert sorted(w.jobs) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    job = w.jobs["js-workers-1"]
    labels = job["metadata"]["labels"]
    assert labels[jobset.JOBSET_NAME] == "js"
    assert labels[jobset.RJOB_NAME] == "workers"
    assert labels[jobset.JOB_INDEX] == "1" and labels[jobset.GLOBAL_INDEX] == "2"
    assert labels[jobset.RESTART_ATTEMPT] == "0" and labels[jobset.REPLICAS] == "2"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    pod = job["spec"]["template"]
    assert pod["metadata"]["labels"][jobset.JOBSET_NAME] == "js"
    assert pod["spec"]["subdomain"] == "js"
    assert job["apiVersion"] == "batch/v1" and job["spec"]["parallelism"] == 2


def test_all_complete_completes_the_jobset() -> None:
    w = World(jobset_obj())
    w.step(T0)
    w.finish("js-driver-0", "Complete")
    w.finish("js-workers-0", "Complete")
    w.step(T0 + SECOND)
    assert "terminalState" not in w.obj["status"]
    w.finish("js-workers-1", "Complete")
    w.step(T0 + 2 * SECOND)
    assert w.obj["status"]["terminalState"] == "Completed"
    (cond,) = w.obj["status"]["conditions"]
    assert (cond["type"], cond["reason"]) == ("Completed", "AllJobsCompleted")
    workers = w.obj["status"]["replicatedJobsStatus"][1]
    assert workers["name"] == "workers" and workers["succeeded"] == 2


def test_success_any_of_a_target_deletes_the_rest() -> None:
    w = World(jobset_obj(successPolicy={"operator": "Any", "targetReplicatedJobs": ["driver"]}))
    w.step(T0)
    w.finish("js-workers-0", "Complete")
    w.step(T0 + SECOND)
    assert "terminalState" not in w.obj["status"]
    w.finish("js-driver-0", "Complete")
    plan = w.step(T0 + 2 * SECOND)
    assert w.obj["status"]["terminalState"] == "Completed"
    assert plan.delete == ["js-workers-1"]


def test_failure_without_restarts_fails() -> None:
    w = World(jobset_obj())
    w.step(T0)
    w.finish("js-workers-0", "Failed")
    plan = w.step(T0 + SECOND)
    assert w.obj["status"]["terminalState"] == "Failed"
    assert w.obj["status"]["conditions"][0]["reason"] == "FailedJobs"
    assert sorted(plan.delete) == ["js-driver-0", "js-workers-1"]


def test_failure_restarts_all_child_jobs_until_max_restarts() -> None:
    w = World(jobset_obj(failurePolicy={"maxRestarts": 1}))
    w.step(T0)
    w.finish("js-workers-0", "Failed")
    plan = w.step(T0 + SECOND)
    assert sorted(plan.delete) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    assert w.obj["status"]["restarts"] == 1 and not w.jobs
    w.step(T0 + 2 * SECOND)
    assert sorted(w.jobs) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    assert w.jobs["js-driver-0"]["metadata"]["labels"][jobset.RESTART_ATTEMPT] == "1"
    w.finish("js-driver-0", "Failed")
    w.step(T0 + 3 * SECOND)
    assert w.obj["status"]["terminalState"] == "Failed"
    assert w.obj["status"]["conditions"][0]["reason"] == "ReachedMaxRestarts"


def test_in_order_startup_waits_for_readiness() -> None:
    w = World(jobset_obj(startupPolicy={"startupPolicyOrder": "InOrder"}))
    w.step(T0)
    assert sorted(w.jobs) == ["js-driver-0"]
    types = {c["type"]: c["status"] for c in w.obj["status"]["conditions"]}
    assert types == {"StartupPolicyInProgress": "True"}
    w.ready("js-driver-0")
    w.step(T0 + SECOND)
    assert sorted(w.jobs) == ["js-driver-0", "js-workers-0", "js-workers-1"]
    w.ready("js-workers-0")
    w.ready("js-workers-1")
    w.step(T0 + 2 * SECOND)
    types = {c["type"]: c["status"] for c in w.obj["status"]["conditions"]}
    assert types == {"StartupPolicyInProgress": "False", "StartupPolicyCompleted": "True"}


def test_suspend_and_ttl() -> None:
    w = World(jobset_obj(suspend=True, ttlSecondsAfterFinished=10))
    w.step(T0)
    assert all(j["spec"]["suspend"] for j in w.jobs.values())
    for name in list(w.jobs):
        w.finish(name, "Complete")
    plan = w.step(T0 + SECOND)
    assert plan.wake_at == T0 + 11 * SECOND and not plan.delete_self
    assert w.step(T0 + 11 * SECOND).delete_self


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"replicatedJobs": []}, "spec.replicatedJobs"),
        ({"successPolicy": {"operator": "Most"}}, "spec.successPolicy.operator"),
        ({"successPolicy": {"targetReplicatedJobs": ["x"]}}, "targetReplicatedJobs"),
        ({"startupPolicy": {"startupPolicyOrder": "Random"}}, "startupPolicyOrder"),
        ({"failurePolicy": {"maxRestarts": -2}}, "spec.failurePolicy.maxRestarts"),
    ],
)
def test_bad_specs_name_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        jobset.jobset_shape(jobset_obj(**change))
    assert field in str(e.value)
    plan = jobset.reconcile(jobset_obj(**change), [], T0, CTX)
    assert not plan.create and plan.events[0]["reason"] == "ValidationFailed"


def test_failure_policy_rules_first_match_wins() -> None:
    rules = [
        {"action": "FailJobSet", "targetReplicatedJobs": ["driver"]},
        {
            "action": "RestartJobSetAndIgnoreMaxRestarts",
            "onJobFailureReasons": ["PodFailurePolicy"],
        },
    ]
    w = World(jobset_obj(failurePolicy={"maxRestarts": 0, "rules": rules}))
    w.step(T0)
    w.jobs["js-workers-0"]["status"] = {
        "conditions": [{"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]
    }
    plan = w.step(T0 + SECOND)
    assert w.obj["status"]["restarts"] == 1
    assert w.obj["status"].get("restartsCountTowardsMax", 0) == 0  # ignored by the rule
    assert "RestartJobSetAndIgnoreMaxRestarts" in plan.events[0]["message"]
    w.step(T0 + 2 * SECOND)
    w.finish("js-workers-1", "Failed")  # no rule matches: RestartJobSet, none left
    w.step(T0 + 3 * SECOND)
    assert w.obj["status"]["conditions"][0]["reason"] == "ReachedMaxRestarts"
    w = World(jobset_obj(failurePolicy={"maxRestarts": 5, "rules": rules}))
    w.step(T0)
    w.finish("js-driver-0", "Failed")
    w.step(T0 + SECOND)
    assert w.obj["status"]["terminalState"] == "Failed"
    assert w.obj["status"]["conditions"][0]["reason"] == "FailJobSetFailurePolicyAction"


def test_resume_unsuspends_the_children() -> None:
    w = World(jobset_obj(suspend=True))
    w.step(T0)
    assert w.obj["status"]["conditions"][0]["reason"] == "SuspendedJobs"
    w.obj["spec"]["suspend"] = False
    plan = w.step(T0 + SECOND)
    assert sorted(j["metadata"]["name"] for j in plan.update) == sorted(w.jobs)
    assert not any(j["spec"]["suspend"] for j in w.jobs.values())
    (cond,) = w.obj["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Suspended", "False", "ResumeJobs")
    assert not w.step(T0 + 2 * SECOND).update
