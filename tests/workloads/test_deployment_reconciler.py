"""apps/v1 Deployment: ReplicaSets, rollouts within maxSurge/maxUnavailable, Recreate, scale,
revisions and history, paused, conditions -- stepped with its ReplicaSets and their pods."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.errors import InputError
from phalanx.testing.apps import AppsBench, make_deployment
from phalanx.workloads import deployment
from phalanx.workloads.rollout import HASH_LABEL, fenceposts, template_hash

T0 = 1_764_613_704_000


def conditions(bench: AppsBench) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in bench.obj["status"]["conditions"]}


def sizes(bench: AppsBench) -> dict[str, int]:
    return {n: b.obj["spec"]["replicas"] for n, b in sorted(bench.benches.items())}


def revisions(bench: AppsBench) -> dict[str, str]:
    return {
        n: b.obj["metadata"]["annotations"][deployment.REVISION]
        for n, b in sorted(bench.benches.items())
    }


def test_first_rollout_makes_one_replicaset_named_by_its_template_hash() -> None:
    bench = AppsBench(make_deployment(replicas=3))
    plan = bench.step(T0)
    (rs,) = plan.create
    digest = template_hash(bench.obj["spec"]["template"])
    assert rs["metadata"]["name"] == f"web-{digest}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: digest}
    assert rs["spec"]["template"]["metadata"]["labels"][HASH_LABEL] == digest
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["metadata"]["annotations"][deployment.REVISION] == "1"
    assert rs["spec"]["replicas"] == 3  # nothing old: the whole count at once
    assert bench.obj["metadata"]["annotations"][deployment.REVISION] == "1"
    assert conditions(bench)["Progressing"] == ("True", "NewReplicaSetCreated")
    assert plan.events[0]["message"] == f"Scaled up replica set web-{digest} from 0 to 3"
    bench.settle(T0 + SECOND)
    status = bench.obj["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (3, 3, 3)
    assert "unavailableReplicas" not in status and status["observedGeneration"] == 1
    assert conditions(bench) == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }
    assert bench.counts() == (3, 3)


def test_hash_is_stable_and_moves_with_the_template_and_collisions() -> None:
    t = make_deployment()["spec"]["template"]
    assert template_hash(t) == template_hash(copy.deepcopy(t))
    other = copy.deepcopy(t)
    other["spec"]["containers"][0]["image"] = "v2"
    assert template_hash(other) != template_hash(t) != template_hash(t, 1)
    assert set(template_hash(t)) <= set("bcdfghjklmnpqrstvwxz2456789")


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        (10, None, None, (3, 2)),  # 25%: surge rounds up, unavailable down
        (4, None, None, (1, 1)),
        (1, None, None, (1, 0)),
        (3, 0, 0, (0, 1)),  # both zero: one may be unavailable
        (10, "50%", 2, (5, 2)),
    ],
)
def test_fenceposts(
    replicas: int, surge: object, unavailable: object, expected: tuple[int, int]
) -> None:
    params = {}
    if surge is not None:
        params["maxSurge"] = surge
    if unavailable is not None:
        params["maxUnavailable"] = unavailable
    assert fenceposts({"rollingUpdate": params}, replicas) == expected


def test_bad_strategy_values_name_the_field() -> None:
    with pytest.raises(InputError, match="maxSurge"):
        fenceposts({"rollingUpdate": {"maxSurge": "lots"}}, 3)
    obj = make_deployment(strategy={"type": "Sideways"})
    plan = deployment.reconcile(obj, [], T0, AppsBench(obj).ctx)
    assert not plan.create and "spec.strategy.type" in plan.events[0]["message"]


def test_rolling_update_respects_surge_and_unavailability_and_converges() -> None:
    bench = AppsBench(
        make_deployment(
            replicas=4,
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1},
            },
        )
    )
    now = bench.settle(T0)
    (old,) = bench.benches
    bench.set_image("v2")
    seen_total = []
    for _ in range(30):
        # one pending job starts per step: the rollout must wait for pods to be available
        bench.start_pending(now, limit=1)
        bench.step(now)
        total = sum(sizes(bench).values())
        active, ready = bench.counts()
        seen_total.append(total)
        assert total <= 4 + 1 and active <= 4 + 1
        assert ready >= 4 - 1
        now += SECOND
    assert sizes(bench)[old] == 0 and len(bench.benches) == 2
    status = bench.obj["status"]
    assert status["updatedReplicas"] == 4 == status["availableReplicas"] == status["replicas"]
    assert conditions(bench)["Progressing"] == ("True", "NewReplicaSetAvailable")
    assert max(seen_total) == 5
    assert revisions(bench)[old] == "1" and "2" in revisions(bench).values()


def test_recreate_empties_the_old_replicaset_before_the_new_one_starts() -> None:
    bench = AppsBench(make_deployment(replicas=2, strategy={"type": "Recreate"}))
    now = bench.settle(T0)
    (old,) = bench.benches
    bench.set_image("v2")
    plan = bench.step(now)
    assert not plan.create and sizes(bench) == {old: 0}
    assert bench.counts() == (0, 0)  # the old pods are gone first
    plan = bench.step(now + SECOND)
    (new,) = plan.create
    assert new["spec"]["replicas"] == 2
    bench.settle(now + 2 * SECOND)
    assert bench.obj["status"]["updatedReplicas"] == 2
    assert conditions(bench)["Available"] == ("True", "MinimumReplicasAvailable")


def test_scale_and_self_heal() -> None:
    bench = AppsBench(make_deployment(replicas=2))
    now = bench.settle(T0)
    bench.change(replicas=5)
    now = bench.settle(now)
    assert bench.counts() == (5, 5) and bench.obj["status"]["readyReplicas"] == 5
    (rs,) = bench.benches.values()
    assert rs.obj["metadata"]["annotations"][deployment.DESIRED] == "5"
    # a node dies: its replica's engine job ends NODE_FAIL; the ReplicaSet replaces it
    lost = sorted(rs.pods)[0]
    rs.move(rs.job_of(lost), JobState.NODE_FAIL, now)
    bench.step(now)
    assert lost not in rs.pods and bench.counts()[0] == 5
    now = bench.settle(now + SECOND)
    assert bench.counts() == (5, 5)
    bench.change(replicas=1)
    bench.settle(now)
    assert bench.counts() == (1, 1) and bench.obj["status"]["replicas"] == 1


def test_scaling_mid_rollout_is_shared_in_proportion() -> None:
    bench = AppsBench(
        make_deployment(
            replicas=10,
            strategy={"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}},
        )
    )
    now = bench.settle(T0)
    bench.set_image("v2")
    bench.step(now)  # the new ReplicaSet at 3 (surge), its pods not started
    before = sizes(bench)
    assert sorted(before.values()) == [3, 8]  # and the old one down by what may go
    bench.change(replicas=20)
    bench.step(now + SECOND)
    after = sizes(bench)
    assert sum(after.values()) == 20 + 3  # within the new count and its surge
    assert all(after[n] > before[n] for n in before)


def test_undo_brings_an_old_replicaset_back_at_the_next_revision() -> None:
    bench = AppsBench(make_deployment(replicas=2))
    now = bench.settle(T0)
    (first,) = bench.benches
    v1 = copy.deepcopy(bench.obj["spec"]["template"])
    bench.set_image("v2")
    now = bench.settle(now)
    # kubectl rollout undo: the template of revision 1 patched back, as Go writes it
    v1["metadata"]["creationTimestamp"] = None
    v1["spec"]["containers"][0]["env"] = []
    bench.change(template=v1)
    now = bench.settle(now)
    assert revisions(bench)[first] == "3"
    annotations = bench.benches[first].obj["metadata"]["annotations"]
    assert annotations[deployment.REVISION_HISTORY] == "1"
    assert bench.obj["metadata"]["annotations"][deployment.REVISION] == "3"
    assert sizes(bench)[first] == 2 and len(bench.benches) == 2


def test_min_ready_seconds_reaches_the_new_replicaset() -> None:
    bench = AppsBench(make_deployment(replicas=1))
    now = bench.settle(T0)
    bench.change(minReadySeconds=30)
    bench.step(now)
    (rs,) = bench.benches.values()
    assert rs.obj["spec"]["minReadySeconds"] == 30 and rs.obj["metadata"]["generation"] == 2


def test_revision_history_limit_deletes_the_oldest_idle_replicasets() -> None:
    bench = AppsBench(make_deployment(replicas=1, revisionHistoryLimit=1))
    now = bench.settle(T0)
    for image in ("v2", "v3", "v4"):
        bench.set_image(image)
        now = bench.settle(now)
    assert sorted(revisions(bench).values()) == ["3", "4"]


def test_change_cause_is_copied_and_last_applied_is_not() -> None:
    obj = make_deployment(replicas=1)
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue", "team": "a"}
    obj["metadata"]["annotations"] = {
        "kubernetes.io/change-cause": "first",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    plan = deployment.reconcile(obj, [], T0, AppsBench(obj).ctx)
    notes = plan.create[0]["metadata"]["annotations"]
    assert notes["kubernetes.io/change-cause"] == "first"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in notes
    labels = plan.create[0]["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "user-queue" and "team" not in labels


def test_paused_scales_but_does_not_roll() -> None:
    bench = AppsBench(make_deployment(replicas=2))
    now = bench.settle(T0)
    bench.change(paused=True)
    bench.set_image("v2")
    bench.change(replicas=3)
    now = bench.settle(now)
    assert len(bench.benches) == 1 and bench.counts() == (3, 3)
    assert conditions(bench)["Progressing"] == ("Unknown", "DeploymentPaused")
    bench.change(paused=False)
    bench.settle(now, steps=40)
    assert len(bench.benches) == 2 and bench.obj["status"]["updatedReplicas"] == 3
    assert conditions(bench)["Progressing"] == ("True", "NewReplicaSetAvailable")


def test_progress_deadline_exceeded_when_pods_never_start() -> None:
    bench = AppsBench(make_deployment(replicas=2, progressDeadlineSeconds=30))
    plan = bench.step(T0)
    assert plan.wake_at is not None and plan.wake_at > T0 + 30 * SECOND
    bench.step(T0 + SECOND)  # the pods are seen: progress, the deadline counts from here
    assert conditions(bench)["Progressing"] == ("True", "ReplicaSetUpdated")
    bench.step(T0 + 31 * SECOND)
    assert conditions(bench)["Progressing"] == ("True", "ReplicaSetUpdated")
    bench.step(T0 + 32 * SECOND)
    assert conditions(bench) == {
        "Available": ("False", "MinimumReplicasUnavailable"),
        "Progressing": ("False", "ProgressDeadlineExceeded"),
    }


@settings(max_examples=40, deadline=None)
@given(
    replicas=st.integers(0, 8),
    surge=st.integers(0, 3),
    unavailable=st.integers(0, 3),
    starts=st.lists(st.integers(0, 3), min_size=60, max_size=60),
)
def test_rollout_property(replicas: int, surge: int, unavailable: int, starts: list[int]) -> None:
    """During a rollout, available >= replicas - maxUnavailable and all ReplicaSets together
    ask for at most replicas + maxSurge; it converges once pods keep starting."""
    strategy = {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    bench = AppsBench(make_deployment(replicas=replicas, strategy=strategy))
    now = bench.settle(T0)
    bench.set_image("v2")
    max_surge, max_unavailable = fenceposts(strategy, replicas)
    for started in starts:
        bench.start_pending(now, limit=started)
        bench.step(now)
        total = sum(sizes(bench).values())
        active, ready = bench.counts()
        assert total <= replicas + max_surge
        assert active <= replicas + max_surge
        assert ready >= replicas - max_unavailable
        now += SECOND
    bench.settle(now, steps=40)
    status = bench.obj["status"]
    assert status.get("updatedReplicas", 0) == replicas == status.get("availableReplicas", 0)
    assert status.get("replicas", 0) == replicas
    assert conditions(bench)["Progressing"] == ("True", "NewReplicaSetAvailable")


def test_a_scale_down_mid_rollout_that_moves_nothing_still_lets_the_rollout_finish() -> None:
    """2 -> 1 replicas while the rollout holds 1 old + 1 new: maxSurge 1 allows 2 in all, so
    the scale moves nothing, but it must still re-annotate both ReplicaSets (as Kubernetes'
    scale() does), or the Deployment takes itself for mid-scale for ever and stays at 1 + 1.
    Hypothesis found this history."""
    bench = AppsBench(make_deployment(replicas=2, strategy={"type": "RollingUpdate"}))
    now = bench.settle(T0)
    bench.set_image("v2")
    bench.step(now)
    now += SECOND
    bench.start_pending(now, limit=1)
    bench.step(now)
    now += SECOND
    bench.step(now)
    now += SECOND
    assert sorted(sizes(bench).values()) == [1, 1]
    bench.change(replicas=1)
    bench.step(now)
    bench.settle(now + SECOND, steps=20)
    new = next(n for n, b in bench.benches.items() if revisions(bench)[n] == "2")
    assert sizes(bench)[new] == 1 and sum(sizes(bench).values()) == 1
    assert bench.counts() == (1, 1)


_ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.integers(0, 4)),
        st.tuples(st.just("image"), st.sampled_from(["v1", "v2", "v3"])),
        st.tuples(st.just("replicas"), st.integers(0, 6)),
        st.tuples(st.just("fail"), st.integers(0, 9)),
    ),
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(actions=_ACTIONS, recreate=st.booleans())
def test_any_history_converges_to_the_replica_count(
    actions: list[tuple[str, object]], recreate: bool
) -> None:
    """Whatever happens (images changed back and forth, scales, pods failing, pods slow to
    start), once pods start again the Deployment converges: one ReplicaSet of the current
    template holds every replica, all available; the others are at zero."""
    strategy = {"type": "Recreate"} if recreate else {"type": "RollingUpdate"}
    bench = AppsBench(make_deployment(replicas=2, strategy=strategy))
    now = bench.settle(T0)
    for kind, arg in actions:
        if kind == "start":
            bench.start_pending(now, limit=int(str(arg)))
        elif kind == "image":
            bench.set_image(str(arg))
        elif kind == "replicas":
            bench.change(replicas=arg)
        else:
            pods = sorted(bench.pods())
            if pods:
                name = pods[int(str(arg)) % len(pods)]
                owner = next(b for b in bench.benches.values() if name in b.pods)
                owner.move(owner.job_of(name), JobState.FAILED, now)
        bench.step(now)
        now += SECOND
    bench.settle(now, steps=60)
    replicas = bench.obj["spec"]["replicas"]
    image = bench.obj["spec"]["template"]["spec"]["containers"][0]["image"]
    active = {n: s for n, s in sizes(bench).items() if s}
    assert len(active) <= 1 and sum(active.values()) == replicas
    for name in active:
        template = bench.benches[name].obj["spec"]["template"]
        assert template["spec"]["containers"][0]["image"] == image
    assert bench.counts() == (replicas, replicas)
    status = bench.obj["status"]
    assert status.get("availableReplicas", 0) == replicas == status.get("updatedReplicas", 0)


def test_a_template_that_cannot_run_shows_as_replica_failure() -> None:
    obj = make_deployment(replicas=2)
    del obj["spec"]["template"]["spec"]["containers"][0]["command"]
    bench = AppsBench(obj)
    bench.step(T0)
    bench.step(T0 + SECOND)
    failure = conditions(bench)["ReplicaFailure"]
    assert failure == ("True", "FailedCreate")
    message = next(
        c["message"] for c in bench.obj["status"]["conditions"] if c["type"] == "ReplicaFailure"
    )
    assert "command" in message
    bench.change(template=make_deployment()["spec"]["template"])
    bench.settle(T0 + 2 * SECOND)
    assert "ReplicaFailure" not in conditions(bench) and bench.counts() == (2, 2)
