"""``valueFrom.secretKeyRef`` and ``configMapKeyRef`` in a pod template: read from the
Context's Secrets and ConfigMaps of the pod's namespace; a missing one names the field,
unless ``optional``."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.errors import InputError
from phalanx.workloads.plan import Context
from phalanx.workloads.podspec import pod_task

CTX = Context(
    secrets={("team", "db"): {"password": "s3cret"}},
    config_maps={("team", "settings"): {"mode": "fast"}},
)
META = {"name": "p", "namespace": "team"}


def template(*env: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "main", "command": ["true"], "env": list(env)}
    return {"spec": {"containers": [container]}}


def ref(kind: str, name: str, key: str, **extra: Any) -> dict[str, Any]:
    return {"valueFrom": {kind: {"name": name, "key": key, **extra}}}


def test_keys_of_secrets_and_config_maps_become_variables() -> None:
    task = pod_task(
        template(
            {"name": "PASSWORD", **ref("secretKeyRef", "db", "password")},
            {"name": "MODE", **ref("configMapKeyRef", "settings", "mode")},
        ),
        META,
        refs=CTX,
    )
    env = dict(task.environment)
    assert env["PASSWORD"] == "s3cret" and env["MODE"] == "fast"


def test_a_missing_secret_or_key_names_the_field() -> None:
    with pytest.raises(InputError) as caught:
        pod_task(template({"name": "X", **ref("secretKeyRef", "nope", "k")}), META, refs=CTX)
    assert caught.value.field == "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef"
    assert 'secret "nope" not found' in str(caught.value)
    with pytest.raises(InputError, match="couldn't find key other in Secret team/db"):
        pod_task(template({"name": "X", **ref("secretKeyRef", "db", "other")}), META, refs=CTX)


def test_an_optional_missing_key_sets_nothing() -> None:
    task = pod_task(
        template({"name": "X", **ref("secretKeyRef", "nope", "k", optional=True)}),
        META,
        refs=CTX,
    )
    assert "X" not in dict(task.environment)


def test_another_namespaces_secret_is_not_read() -> None:
    with pytest.raises(InputError):
        pod_task(
            template({"name": "X", **ref("secretKeyRef", "db", "password")}),
            {"name": "p", "namespace": "other"},
            refs=CTX,
        )
