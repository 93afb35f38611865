"""Real kubectl (Go's apimachinery) reads what encode() writes: the server answers kubectl's
generator commands with protobuf built by encode() from an object richer than kubectl sent
(uid, timestamps, managedFields, owner references, status), and `-o json` must print exactly
what decode() makes of those bytes."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capture_kubectl import COMMANDS, Store, kubectl_against
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_protobuf_properties import jobs, namespaces

from phalanx.kube.pb.quantity import canonical
from phalanx.kube.protobuf import PROTOBUF, decode

pytestmark = pytest.mark.skipif(
    not Path("/usr/bin/kubectl").exists(), reason="kubectl is not installed at /usr/bin/kubectl"
)

AT = "2026-12-01T18:00:00Z"
STATUS: dict[str, dict[str, Any]] = {
    "Namespace": {"phase": "Active", "conditions": [
        {"type": "NamespaceDeletionDiscoveryFailure", "status": "False",
         "lastTransitionTime": AT, "reason": "ResourcesDiscovered", "message": "ok"}]},
    "Job": {"startTime": AT, "active": 1, "ready": 0, "terminating": 0,
            "uncountedTerminatedPods": {}, "conditions": [
                {"type": "Suspended", "status": "False", "lastProbeTime": AT,
                 "lastTransitionTime": AT}]},
    "Deployment": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                   "unavailableReplicas": 2, "conditions": [
                       {"type": "Available", "status": "False", "lastUpdateTime": AT,
                        "lastTransitionTime": AT, "reason": "MinimumReplicasUnavailable"}]},
    "CronJob": {"lastScheduleTime": AT, "active": [{"kind": "Job", "name": "cj-1"}]},
    "Service": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1", "ports": [
        {"port": 80, "protocol": "TCP"}]}]}},
    "PodDisruptionBudget": {"observedGeneration": 1, "disruptionsAllowed": 0,
                            "currentHealthy": 0, "desiredHealthy": 1, "expectedPods": 2,
                            "disruptedPods": {"p-0": AT}},
}


def _as_served(obj: dict[str, Any]) -> dict[str, Any]:
    """What a kube-apiserver would answer for the created object."""
    served = json.loads(json.dumps(obj))
    served["metadata"].update({
        "uid": "6a3c1c55-1111-4c8e-9c1e-000000000001", "resourceVersion": "42", "generation": 1,
        "creationTimestamp": AT, "labels": {"phalanx.io/seen": "yes"},
        "annotations": {"note": "served"}, "finalizers": ["phalanx.io/keep"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": "owner",
                             "uid": "6a3c1c55-1111-4c8e-9c1e-000000000002", "controller": True,
                             "blockOwnerDeletion": False}],
        "managedFields": [{"manager": "kubectl-create", "operation": "Update",
                           "apiVersion": obj["apiVersion"], "time": AT, "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:name": {}}}}],
    })
    if obj["kind"] in STATUS:
        served["status"] = STATUS[obj["kind"]]
    return served


def _kubectl_prints(args: list[str], kubectl: list[str]) -> Any:
    """What kubectl prints with `-o json` for the object the server answered with."""
    split = args.index("--") if "--" in args else len(args)
    done = subprocess.run(
        [*kubectl, *args[:split], "-o", "json", "--show-managed-fields", *args[split:]],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


GENERATORS = [name for name, (args, dry_run) in COMMANDS.items()
              if dry_run and args[0] == "create" and name != "create-token"]


@pytest.mark.parametrize("name", GENERATORS)
def test_kubectl_prints_what_decode_reads_from_encode(name: str, tmp_path: Path) -> None:
    store = Store(respond=_as_served)
    with kubectl_against(store, tmp_path) as kubectl:
        printed = _kubectl_prints(["--validate=false", *COMMANDS[name][0]], kubectl)
    assert [r["contentType"] for r in store.requests] == [PROTOBUF]
    assert printed["metadata"]["uid"] == "6a3c1c55-1111-4c8e-9c1e-000000000001"  # ours, parsed
    assert printed == decode(store.replies[-1])


@pytest.fixture(scope="module")
def kubectl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, list[str]]]:
    store = Store()
    with kubectl_against(store, tmp_path_factory.mktemp("kubectl")) as kubectl:
        yield store, kubectl




@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(namespaces | jobs)
def test_kubectl_reads_generated_objects_as_decode_does(
    kubectl_server: tuple[Store, list[str]], served: dict[str, Any]
) -> None:
    # kubectl accepts any object of the kind it created as the answer, and prints it.
    store, kubectl = kubectl_server
    if served["kind"] == "Namespace":
        args = ["create", "namespace", "x"]
    else:
        args = ["create", "job", "j", "--image=busybox", "--", "true"]
    store.respond = lambda _sent: served
    assert _kubectl_prints(args, kubectl) == decode(store.replies[-1])


EDGE_QUANTITIES = [
    "1", "1.5", "1e3", "1E3", "1000", "1000m", "100Mi", "1024Mi", "0.5Gi", "1.5Ki", "-0", "0m",
    "0.0000000001", "1e-10", "+1k", "1536Mi", "1e2000000000", "1.", ".5", "-1.5Gi", "16Ei",
    "123456789012345678901234567890", "1023.5Ki", "1e21", "1000E", "0.1Ki", "00012", "1.000",
]
numbers = st.builds(
    lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
    st.sampled_from(["", "-", "+"]),
    st.integers(0, 10**20).map(str),
    st.one_of(st.just(""), st.integers(0, 10**12).map(lambda f: f".{f}")),
    st.sampled_from(["", "m", "n", "u", "k", "M", "G", "E", "Ki", "Mi", "Gi", "Ei", "e3",
                     "e-4", "E2", "e0"]),
)


def _kubectl_quantities(values: list[str], kubectl: list[str], store: Store) -> list[str]:
    """What Go's ParseQuantity and String() make of each value, read from kubectl's body."""
    hard = ",".join(f"r{i}={v}" for i, v in enumerate(values))
    store.requests.clear()
    store.respond = None
    done = subprocess.run([*kubectl, "create", "quota", "q", f"--hard={hard}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    sent = decode(base64.b64decode(store.requests[-1]["body"]))
    return [sent["spec"]["hard"][f"r{i}"] for i in range(len(values))]


def test_quantities_are_canonical_as_go_writes_them(
    kubectl_server: tuple[Store, list[str]]
) -> None:
    store, kubectl = kubectl_server
    assert _kubectl_quantities(EDGE_QUANTITIES, kubectl, store) == [
        canonical(v) for v in EDGE_QUANTITIES
    ]


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(numbers, min_size=1, max_size=25))
def test_generated_quantities_are_canonical_as_go_writes_them(
    kubectl_server: tuple[Store, list[str]], values: list[str]
) -> None:
    store, kubectl = kubectl_server
    assert _kubectl_quantities(values, kubectl, store) == [canonical(v) for v in values]
