"""Errors are Status objects worded as kube-apiserver words them."""

from phalanx.kube.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    field_error,
)


def test_not_found_names_the_qualified_resource() -> None:
    s = NotFound(("batch", "jobs"), "pi").status()
    assert s["message"] == 'jobs.batch "pi" not found'
    assert (s["kind"], s["apiVersion"], s["status"], s["reason"], s["code"]) == (
        "Status",
        "v1",
        "Failure",
        "NotFound",
        404,
    )
    assert s["details"] == {"name": "pi", "group": "batch", "kind": "jobs"}


def test_core_group_has_no_suffix_and_no_empty_group() -> None:
    s = AlreadyExists(("", "namespaces"), "x").status()
    assert s["message"] == 'namespaces "x" already exists'
    assert s["code"] == 409 and s["details"] == {"name": "x", "kind": "namespaces"}


def test_conflict_wording() -> None:
    m = Conflict(("", "pods"), "p").message
    assert m.startswith('Operation cannot be fulfilled on pods "p": the object has been modified')


def test_invalid_one_and_many_causes() -> None:
    one = Invalid(
        "batch",
        "Job",
        "pi",
        [
            field_error(
                "spec.parallelism", "FieldValueInvalid", "must be greater than or equal to 0", -1
            )
        ],
    )
    assert one.message == (
        'Job.batch "pi" is invalid: spec.parallelism: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    assert one.code == 422
    many = Invalid(
        "",
        "Pod",
        "p",
        [field_error("a", "FieldValueRequired"), field_error("b", "FieldValueRequired")],
    )
    assert many.message == 'Pod "p" is invalid: [a: Required value, b: Required value]'
    causes = many.status()["details"]["causes"]
    assert causes[0] == {"reason": "FieldValueRequired", "message": "Required value", "field": "a"}


def test_forbidden_gone_method() -> None:
    f = Forbidden(("batch", "jobs"), "", 'User "ann" cannot list resource "jobs"')
    assert f.message == 'jobs.batch is forbidden: User "ann" cannot list resource "jobs"'
    assert f.code == 403
    g = Gone("too old resource version: 1 (5)").status()
    assert (g["reason"], g["code"]) == ("Expired", 410)
    m = MethodNotAllowed(("", "events"), "watch").message
    assert m == 'watch is not supported on resources of kind "events"'
