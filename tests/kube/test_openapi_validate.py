"""phalanx.kube.openapi.validate against the shared example manifests and hand-made bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_data import EXAMPLES, needs_data, needs_examples

from phalanx.kube.openapi import (
    FieldError,
    bad_request_message,
    invalid_message,
    loads_strict,
    prune,
    strict_decoding_message,
    validate,
)
from phalanx.kube.openapi.fielderror import STRICT_REASONS

pytestmark = [needs_data]

ADAPTED = sorted((EXAMPLES / "adapted").rglob("*.yaml")) if EXAMPLES.is_dir() else []


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@needs_examples
@pytest.mark.parametrize("path", ADAPTED, ids=lambda p: str(p.relative_to(EXAMPLES / "adapted")))
def test_every_adapted_manifest_validates_clean(path: Path) -> None:
    docs = _docs(path)
    assert docs
    for doc in docs:
        assert validate(doc, "Strict") == ([], []), (doc["kind"], validate(doc, "Strict"))


# derived file -> (Strict errors as (path, reason), Warn warnings)
DERIVED = {
    "unknown-field-job.yaml": (
        [("spec.bogusHoldoutField", "UnknownField")],
        ['unknown field "spec.bogusHoldoutField"'],
    ),
    "unknown-field-pytorchjob.yaml": (
        [("spec.bogusHoldoutField", "UnknownField")],
        ['unknown field "spec.bogusHoldoutField"'],
    ),
    "invalid-name-job.yaml": ([("metadata.name", "FieldValueInvalid")], []),
    "invalid-value-job.yaml": ([("spec.parallelism", "FieldValueInvalid")], []),
    "over-quota-job.yaml": ([], []),  # valid: quota is Kueue's business, not the API's
}


@needs_examples
@pytest.mark.parametrize("name", sorted(DERIVED))
def test_derived_bad_input_names_the_field(name: str) -> None:
    (doc,) = _docs(EXAMPLES / "derived" / name)
    want_errors, want_warnings = DERIVED[name]
    errors, warnings = validate(doc, "Strict")
    assert [(e.path, e.reason) for e in errors] == want_errors
    assert warnings == []
    errors, warnings = validate(doc, "Warn")
    assert [(e.path, e.reason) for e in errors if not e.strict] == [
        p for p in want_errors if p[1] not in STRICT_REASONS
    ]
    assert warnings == want_warnings
    errors, warnings = validate(doc, "Ignore")
    assert all(not e.strict for e in errors) and warnings == []


@needs_examples
def test_kube_apiserver_wording() -> None:
    (job,) = _docs(EXAMPLES / "derived" / "invalid-value-job.yaml")
    errors, _ = validate(job, "Strict")
    assert errors[0].message == (
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"
    )
    assert invalid_message("Job", "batch", "k8s-holdout-invalid-value", errors) == (
        'Job.batch "k8s-holdout-invalid-value" is invalid: spec.parallelism: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    (bad_name,) = _docs(EXAMPLES / "derived" / "invalid-name-job.yaml")
    assert validate(bad_name, "Ignore")[0][0].message == (
        'metadata.name: Invalid value: "K8s_Holdout_Bad_Name": a lowercase RFC 1123 subdomain '
        "must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    (unknown,) = _docs(EXAMPLES / "derived" / "unknown-field-job.yaml")
    assert strict_decoding_message(validate(unknown, "Strict")[0]) == (
        'strict decoding error: unknown field "spec.bogusHoldoutField"'
    )


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "c", "image": "busybox"}],
                    "restartPolicy": "Never",
                }
            },
            **spec,
        },
    }


def _paths(errors: list[FieldError]) -> list[tuple[str, str]]:
    return [(e.path, e.reason) for e in errors]


def test_nested_unknown_field_path_has_list_index() -> None:
    job = _job()
    job["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    job["metadata"]["labelz"] = {}
    errors, _ = validate(job, "Strict")
    assert _paths(errors) == [  # in the object's order
        ("metadata.labelz", "UnknownField"),
        ("spec.template.spec.containers[0].imagee", "UnknownField"),
    ]


def test_missing_required_fields() -> None:
    job = _job()
    del job["spec"]["template"]["spec"]["containers"][0]["name"]
    del job["spec"]["template"]["spec"]["containers"][0]["image"]
    errors, _ = validate(job, "Ignore")
    assert _paths(errors) == [("spec.template.spec.containers[0].name", "FieldValueRequired")]
    assert errors[0].message == "spec.template.spec.containers[0].name: Required value"


def test_a_builtin_kinds_wrong_type_is_gos_decoding_error() -> None:
    """kube-apiserver decodes built-in kinds into Go structs: the first wrong type fails the
    request (400) with encoding/json's words, and nothing else is reported."""
    job = _job(parallelism="two", suspend=1, bogus=1)
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": True}]
    errors, warnings = validate(job, "Strict")
    assert _paths(errors) == [("spec.template.spec.containers[0].env[0].value", "DecodeError")]
    assert errors[0].message == (
        "json: cannot unmarshal bool into Go struct field EnvVar.spec.template.spec.containers"
        ".env.value of type string"
    )
    assert errors[0].bad_request and not errors[0].strict and warnings == []
    del job["spec"]["template"]["spec"]["containers"][0]["env"]
    errors, _ = validate(job, "Warn")
    assert bad_request_message(errors) == (
        "json: cannot unmarshal string into Go struct field JobSpec.spec.parallelism of type int32"
    )


def test_a_crds_wrong_type_is_a_validation_error() -> None:
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"clusterQueue": 5, "stopPolicy": ["x"]},
    }
    errors, _ = validate(lq, "Strict")
    assert _paths(errors) == [
        ("spec.clusterQueue", "FieldValueTypeInvalid"),
        ("spec.stopPolicy", "FieldValueTypeInvalid"),
    ]
    assert errors[0].message == (
        'spec.clusterQueue: Invalid value: "integer": spec.clusterQueue in body must be of type '
        'string: "integer"'
    )


def test_int_or_string_and_quantities_take_both() -> None:
    job = _job()
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": 1, "memory": "1Gi"}, "limits": {"cpu": 0.5}}
    container["ports"] = [{"containerPort": 80}]
    container["livenessProbe"] = {"httpGet": {"port": "http", "path": "/"}}
    assert validate(job, "Strict") == ([], [])
    container["livenessProbe"]["httpGet"]["port"] = True
    assert _paths(validate(job, "Strict")[0]) == [
        ("spec.template.spec.containers[0].livenessProbe.httpGet.port", "DecodeError")
    ]


def test_names_follow_each_kinds_rule() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "1svc"},
        "spec": {"ports": [{"port": 80}]},
    }
    assert _paths(validate(svc, "Strict")[0]) == [("metadata.name", "FieldValueInvalid")]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    assert validate(ns, "Strict")[0][0].message.endswith("must not contain dots")
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "system:Odd_Name"},
    }
    assert validate(role, "Strict") == ([], [])
    nameless = _job()
    del nameless["metadata"]["name"]
    assert validate(nameless, "Strict")[0][0].message == (
        "metadata.name: Required value: name or generateName is required"
    )
    nameless["metadata"]["generateName"] = "job-"
    assert validate(nameless, "Strict") == ([], [])


def test_crd_schema_constraints_and_pruning() -> None:
    cq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"queueingStrategy": "Sometimes", "namespaceSelector": {}, "extra": 1},
    }
    errors, _ = validate(cq, "Strict")
    assert ("spec.queueingStrategy", "FieldValueNotSupported") in _paths(errors)
    assert _paths(errors)[-1] == ("spec.extra", "UnknownField")
    assert 'supported values: "StrictFIFO", "BestEffortFIFO"' in errors[0].message


def test_duplicate_fields_from_the_body() -> None:
    body = json.dumps(_job())[:-2] + ', "parallelism": 1, "parallelism": 2}}'
    obj = loads_strict(body)
    assert obj["spec"]["parallelism"] == 2  # the last one wins, as in Go
    assert _paths(validate(obj, "Strict")[0]) == [("spec.parallelism", "DuplicateField")]
    assert validate(obj, "Warn") == ([], ['duplicate field "spec.parallelism"'])
    assert validate(obj, "Ignore") == ([], [])


def test_prune_drops_what_validation_calls_unknown() -> None:
    job = _job(bogus=1)
    job["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    job["metadata"]["labels"] = {"keep": "me"}
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {"namespaceSelector": {}, "extra": {"deep": 1}},
    }
    assert prune(job) == ["spec.template.spec.containers[0].imagee", "spec.bogus"]
    assert validate(job, "Strict") == ([], [])
    assert job["metadata"]["labels"] == {"keep": "me"}
    assert prune(cq) == ["spec.extra"] and cq["spec"] == {"namespaceSelector": {}}
    assert prune({"kind": "Nothing"}) == [] and prune([1]) == []


def test_unknown_kind_and_bad_mode() -> None:
    errors, _ = validate({"apiVersion": "batch/v1", "kind": "Jobb", "metadata": {}}, "Strict")
    assert _paths(errors) == [("kind", "FieldValueNotSupported")]
    assert _paths(validate({"kind": "Job"}, "Strict")[0]) == [("apiVersion", "FieldValueRequired")]
    with pytest.raises(ValueError, match="fieldValidation"):
        validate(_job(), "strict")


# Random mutations of valid manifests: whatever the input, validate answers with FieldErrors.
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_VALID = [d for p in ADAPTED for d in _docs(p)]


def _mutate(doc: Any, choices: list[int], value: Any, key: str) -> Any:
    """Walk down ``doc`` by ``choices`` and replace, add or drop what is there."""
    doc = copy.deepcopy(doc)
    node, parent, slot = doc, None, None
    for c in choices:
        if isinstance(node, dict) and node:
            slot = sorted(node)[c % len(node)]
        elif isinstance(node, list) and node:
            slot = c % len(node)
        else:
            break
        parent, node = node, node[slot]
    if parent is None:
        return value if choices and choices[0] % 5 == 0 else {**doc, key: value}
    if choices[-1] % 3 == 0 and isinstance(parent, dict):
        parent[key] = value
    elif choices[-1] % 3 == 1 and isinstance(parent, dict):
        del parent[slot]
    else:
        parent[slot] = value
    return doc


@needs_examples
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(min_value=0),
    choices=st.lists(st.integers(min_value=0), min_size=1, max_size=10),
    value=_VALUES,
    key=st.text(max_size=6),
    mode=st.sampled_from(["Strict", "Warn", "Ignore"]),
)
def test_random_mutations_never_raise(
    index: int, choices: list[int], value: Any, key: str, mode: str
) -> None:
    doc = _mutate(_VALID[index % len(_VALID)], choices, value, key)
    errors, warnings = validate(doc, mode)
    assert all(isinstance(e, FieldError) and e.message for e in errors)
    assert all(isinstance(w, str) for w in warnings)
    if mode != "Strict":
        assert not any(e.strict for e in errors)
    assert sum(e.reason == "DecodeError" for e in errors) <= 1
    if isinstance(doc, dict):
        pruned = prune(doc)
        assert all(isinstance(p, str) for p in pruned)
        assert not any(e.reason == "UnknownField" for e in validate(doc, "Strict")[0])


@needs_examples
def test_a_malformed_body_is_a_value_error_with_its_position() -> None:
    """Malformed input never reaches validate: the parser refuses it, saying where."""
    body = (EXAMPLES / "derived" / "malformed-body.json").read_bytes()
    with pytest.raises(ValueError, match=r"line 1 column \d+"):
        loads_strict(body)
