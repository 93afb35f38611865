"""Probes and restartPolicy read from a pod spec: Kubernetes' defaults, named ports, and
errors that name the field."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.domain.jobspec import TaskLaunch
from phalanx.domain.probes import Exec, HttpGet, Probe, Probes, TcpSocket
from phalanx.domain.time import SECOND
from phalanx.errors import InputError, SpecError
from phalanx.workloads.plan import Context
from phalanx.workloads.podspec import pod_task
from phalanx.workloads.specs import pod_spec


def pod(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    base = {"name": "web", "image": "python", "command": ["python3", "-m", "http.server"]}
    return {"spec": {"containers": [{**base, **container}], **spec}}


def test_defaults_are_kubernetes() -> None:
    task = pod_task(pod({"livenessProbe": {"tcpSocket": {"port": 80}}}), {}, where="")
    assert task.restart == "Always"
    assert task.probes == Probes(liveness=Probe(TcpSocket(80)))
    probe = Probe(TcpSocket(80))
    assert (probe.initial_delay, probe.period, probe.timeout) == (0, 10 * SECOND, SECOND)
    assert (probe.success_threshold, probe.failure_threshold) == (1, 3)
    assert Probes().grace == 30 * SECOND


def test_every_field_and_a_named_port() -> None:
    container = {
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {
            "httpGet": {
                "port": "http",
                "path": "healthz",
                "scheme": "HTTPS",
                "host": "10.0.0.1",
                "httpHeaders": [{"name": "X-A", "value": "b"}],
            },
            "initialDelaySeconds": 2,
            "periodSeconds": 3,
            "timeoutSeconds": 4,
            "successThreshold": 2,
            "failureThreshold": 5,
        },
        "startupProbe": {"exec": {"command": ["cat", "/tmp/ok"]}},
    }
    task = pod_task(
        pod(container, restartPolicy="OnFailure", terminationGracePeriodSeconds=7), {}, where=""
    )
    assert task.restart == "OnFailure"
    assert task.probes == Probes(
        startup=Probe(Exec(("cat", "/tmp/ok"))),
        readiness=Probe(
            HttpGet(8080, "/healthz", "10.0.0.1", "HTTPS", (("X-A", "b"),)),
            initial_delay=2 * SECOND,
            period=3 * SECOND,
            timeout=4 * SECOND,
            success_threshold=2,
            failure_threshold=5,
        ),
        grace=7 * SECOND,
    )


def test_no_probes_is_none() -> None:
    assert pod_task(pod({}), {}, where="").probes is None


@pytest.mark.parametrize(
    ("container", "spec", "field"),
    [
        ({"livenessProbe": {"httpGet": {"port": "web"}}}, {},
         "spec.template.spec.containers[0].livenessProbe.httpGet.port"),
        ({"livenessProbe": {"httpGet": {"port": 0}}}, {},
         "spec.template.spec.containers[0].livenessProbe.httpGet.port"),
        ({"readinessProbe": {}}, {}, "spec.template.spec.containers[0].readinessProbe"),
        ({"readinessProbe": {"exec": {"command": []}}}, {},
         "spec.template.spec.containers[0].readinessProbe.exec.command"),
        ({"startupProbe": {"tcpSocket": {"port": 1}, "periodSeconds": 0}}, {},
         "spec.template.spec.containers[0].startupProbe.periodSeconds"),
        ({"livenessProbe": {"tcpSocket": {"port": 1}, "successThreshold": 2}}, {},
         "spec.template.spec.containers[0].livenessProbe.successThreshold"),
        ({"livenessProbe": {"grpc": {"port": 1}}}, {},
         "spec.template.spec.containers[0].livenessProbe.grpc"),
        ({"livenessProbe": {"httpGet": {"port": 1, "scheme": "FTP"}}}, {},
         "spec.template.spec.containers[0].livenessProbe.httpGet.scheme"),
        ({}, {"restartPolicy": "Sometimes"}, "spec.template.spec.restartPolicy"),
        ({"livenessProbe": {"tcpSocket": {"port": 1}}}, {"terminationGracePeriodSeconds": -1},
         "spec.template.spec.terminationGracePeriodSeconds"),
    ],
)  # fmt: skip
def test_bad_probes_name_their_field(
    container: dict[str, Any], spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputError) as caught:
        pod_task(pod(container, **spec), {}, where="spec.template")
    assert caught.value.field == field


def test_in_place_pods_carry_restart_and_probes_to_their_task() -> None:
    task = pod_task(
        pod({"readinessProbe": {"tcpSocket": {"port": 9}}}, restartPolicy="Always"), {}, where=""
    )
    args: dict[str, Any] = {
        "ctx": Context(log_dir="/logs", workdir="/w"),
        "name": "web",
        "namespace": "ns",
        "pod": "web",
        "owner_labels": {},
        "template": {},
        "value": 0,
    }
    spec = pod_spec(task, in_place=True, **args)
    assert spec.tasks == (
        TaskLaunch(
            command=("python3", "-m", "http.server"),
            workdir="/w",
            output="/logs/ns/web.log",
            restart="Always",
            probes=Probes(readiness=Probe(TcpSocket(9))),
        ),
    )
    # a Job's or a ReplicaSet's pod: its exit ends the job; its probes run all the same
    [own] = pod_spec(task, **args).tasks
    assert own.restart == "Never" and own.probes == Probes(readiness=Probe(TcpSocket(9)))
    plain = pod_task(pod({}), {}, where="")
    assert pod_spec(plain, **args).tasks == ()  # neither: as before


def test_a_task_launch_refuses_an_unknown_policy() -> None:
    with pytest.raises(SpecError) as caught:
        TaskLaunch(("true",), restart="Sometimes")
    assert caught.value.field == "restartPolicy"
