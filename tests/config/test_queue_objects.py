"""Queue objects as the Kubernetes API holds them: each checked as a ``--queues`` document
is (the field path named), dangling references inactive as Kueue leaves them, and what the
server adds (status, uid, resourceVersion) or the engine does not model left out."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.config.queue_objects import active_queues, check_object, objects_from_yaml
from phalanx.errors import ConfigError

KUEUE = "kueue.x-k8s.io/v1beta2"


def flavor(name: str = "default-flavor") -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cq(
    name: str = "cq", quota: Any = 9, flavor_name: str = "default-flavor", **spec: Any
) -> dict[str, Any]:
    groups = [
        {
            "coveredResources": ["cpu"],
            "flavors": [
                {"name": flavor_name, "resources": [{"name": "cpu", "nominalQuota": quota}]}
            ],
        }
    ]
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": "u-1", "resourceVersion": "12", "generation": 2},
        "spec": {"namespaceSelector": {}, "resourceGroups": groups, **spec},
        "status": {"pendingWorkloads": 3},
    }


def lq(name: str = "user-queue", target: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"clusterQueue": target},
    }


def cohort(name: str, parent: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": {"parentName": parent},
    }


def test_a_stored_object_is_read_as_its_file_document() -> None:
    queues, inactive = active_queues([flavor(), cq(), lq()])
    assert inactive == {}
    assert list(queues.cluster_queues) == ["cq"]
    assert queues.cluster_queues["cq"].resource_groups[0].flavors[0].resources[0].nominal == 9000
    assert queues.local_queues[("team-a", "user-queue")].cluster_queue == "cq"


def test_a_negative_quota_names_its_field_path() -> None:
    with pytest.raises(ConfigError) as caught:
        check_object(cq(quota=-1))
    assert caught.value.field == "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"


def test_an_unknown_spec_field_is_refused_but_kueue_fields_not_modelled_pass() -> None:
    with pytest.raises(ConfigError) as caught:
        check_object(cq(bogus=1))
    assert "bogus" in str(caught.value)
    check_object(cq(admissionChecks=["prov"]))
    check_object({**lq(), "spec": {"clusterQueue": "cq", "fairSharing": {"weight": "2"}}})


def test_a_missing_flavor_makes_the_queue_and_its_local_queues_inactive() -> None:
    queues, inactive = active_queues([cq(), lq()])
    assert not queues.cluster_queues and not queues.local_queues
    reason, message = inactive[("ClusterQueue", "", "cq")]
    assert reason == "FlavorNotFound" and "default-flavor" in message
    assert inactive[("LocalQueue", "team-a", "user-queue")][0] == "ClusterQueueIsInactive"


def test_a_local_queue_of_no_cluster_queue_is_inactive_alone() -> None:
    queues, inactive = active_queues([flavor(), cq(), lq(), lq("other", "nowhere")])
    assert list(queues.local_queues) == [("team-a", "user-queue")]
    assert inactive == {
        ("LocalQueue", "team-a", "other"): (
            "ClusterQueueDoesNotExist",
            "Can't submit new workloads to clusterQueue nowhere",
        )
    }


def test_cohorts_in_a_cycle_are_inactive_and_the_rest_stay() -> None:
    queues, inactive = active_queues([cohort("a", "b"), cohort("b", "a"), cohort("c", "d")])
    assert list(queues.cohorts) == ["c"]
    assert {k for k, (r, _) in inactive.items() if r == "CohortCycle"} == {
        ("Cohort", "", "a"),
        ("Cohort", "", "b"),
    }


def test_the_objects_of_a_queues_file_and_of_a_cluster_yaml() -> None:
    text = "apiVersion: x\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n---\nkind: y\n"
    assert [d["kind"] for d in objects_from_yaml(text)] == ["ResourceFlavor", "y"]
    cluster = "name: c\nqueues:\n- {kind: ClusterQueue, metadata: {name: q}}\n"
    assert objects_from_yaml(cluster, "queues") == [
        {"kind": "ClusterQueue", "metadata": {"name": "q"}}
    ]
