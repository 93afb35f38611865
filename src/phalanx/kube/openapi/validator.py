"""Server-side field validation: an object walked against its kind's OpenAPI schema.

What is checked, and why it is an error or a warning, follows kube-apiserver:

- unknown fields (absent from ``properties``, no ``additionalProperties``, no
  ``x-kubernetes-preserve-unknown-fields``) and duplicate fields are strict decoding errors:
  errors in ``Strict``, warnings in ``Warn``, nothing in ``Ignore``;
- wrong JSON types, missing ``required`` fields, CRD value constraints (``enum``, ``minimum``,
  ``maximum``, ``maxLength``, ``pattern``), invalid names and a few built-in value rules are
  validation errors in every mode.

The walk never raises on any input: a value of the wrong shape is a FieldError.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from phalanx.kube.openapi import catalog, fielderror, names
from phalanx.kube.openapi.fielderror import FieldError
from phalanx.kube.openapi.walker import Resolved, Walk, type_name

MODES = ("Strict", "Warn", "Ignore")


# Built-in value rules kube-apiserver's validation applies that the schema does not carry:
# (group, kind) -> fields that ValidateNonnegativeField checks.
_NONNEGATIVE: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("batch", "Job"): (("spec", "parallelism"), ("spec", "completions"), ("spec", "backoffLimit")),
    ("apps", "Deployment"): (("spec", "replicas"),),
    ("apps", "ReplicaSet"): (("spec", "replicas"),),
}


class StrictDict(dict[str, Any]):
    """A JSON object that remembers which of its keys appeared more than once."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # (a plain dict where no key repeats: the common case, and cheaper)
    if len(out) != len(pairs):
        out = StrictDict(pairs)
        seen: set[str] = set()
        duplicates: list[str] = []
        for key, _ in pairs:
            if key in seen:
                duplicates.append(key)
            seen.add(key)
        out.duplicates = tuple(duplicates)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)
"""One decoder for every body: ``json.loads`` with a hook would build one (and its scanner)
per call."""


def loads_strict(body: bytes | str) -> Any:
    """``json.loads`` that keeps duplicate keys visible to :func:`validate` (the last one wins,
    as in Go). Raises ``ValueError`` on malformed JSON, as ``json.loads`` does."""
    if isinstance(body, bytes | bytearray):
        # as json.loads reads bytes: UTF-8, -16 or -32, told by the first bytes
        body = body.decode(json.detect_encoding(body), "surrogatepass")
    elif body.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", body, 0)
    return _DECODER.decode(body)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _metadata(obj: dict[str, Any], group: str, kind: str) -> Iterator[FieldError]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    rule = names.name_rule(group, kind)
    name, generate = meta.get("name"), meta.get("generateName")
    if isinstance(generate, str) and generate:
        # A prefix is checked as if a suffix followed: maskTrailingDash turns a last "-" to "a".
        for msg in rule(generate[:-1] + "a" if generate.endswith("-") else generate):
            yield fielderror.field_error("metadata.generateName", fielderror.INVALID, generate, msg)
    if not name:
        if not generate:
            yield fielderror.field_error(
                "metadata.name", fielderror.REQUIRED, detail="name or generateName is required"
            )
    elif isinstance(name, str):
        for msg in rule(name):
            yield fielderror.field_error("metadata.name", fielderror.INVALID, name, msg)
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        for msg in names.dns1123_label(namespace):
            yield fielderror.field_error("metadata.namespace", fielderror.INVALID, namespace, msg)


def _split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def prune(obj: Any) -> list[str]:
    """Drop the unknown fields of ``obj`` in place, as kube-apiserver does when it accepts an
    object (``Warn``, ``Ignore``): Go's decoder skips them, a CRD's structural schema prunes
    them. Returns their paths. Does nothing to an object with no schema."""
    if not isinstance(obj, dict):
        return []
    walk = _walk(obj)
    if walk is None:
        return []
    for parent, key in walk.unknown:
        parent.pop(key, None)
    return [e.path for e in walk.strict if e.reason == fielderror.UNKNOWN]


@functools.cache
def _resolved(group_version: str) -> dict[int, Resolved]:
    """The resolve cache shared by every walk over one document's schemas (which live as
    long as the process: the catalog keeps them)."""
    return {}


@functools.cache
def _root(schema: str) -> dict[str, Any]:
    """The root of a walk, kept so that the shared resolve cache may hold it."""
    return {"$ref": "#/components/schemas/" + schema}


def _walk(obj: dict[str, Any]) -> Walk | None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    info = catalog.kind_info(*_split_api_version(api_version), kind)
    if info is None:
        return None
    walk = Walk(catalog.schemas_of(info), info.origin == "crd", _resolved(info.group_version))
    walk.walk(obj, _root(info.schema), (), info.kind)
    return walk


def validate(obj: Any, mode: str) -> tuple[list[FieldError], list[str]]:
    """Check ``obj`` (a parsed request body) against its kind's schema.

    ``mode`` is the ``fieldValidation`` query parameter: ``Strict``, ``Warn`` or ``Ignore``
    (``ValueError`` otherwise). Returns (errors, warnings): errors in the order found, strict
    decoding errors (:data:`fielderror.STRICT_REASONS`) last; warnings are the texts of the
    ``Warning`` headers kube-apiserver sends in ``Warn`` mode (``unknown field "spec.foo"``).
    An ``apiVersion``/``kind`` with no schema is one error on ``kind``."""
    if mode not in MODES:
        raise ValueError(f"fieldValidation must be one of {', '.join(MODES)}, not {mode!r}")
    if not isinstance(obj, dict):
        return [
            fielderror.field_error(
                "", fielderror.TYPE_INVALID, type_name(obj), "the body must be a JSON object"
            )
        ], []
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not api_version:
        return [fielderror.field_error("apiVersion", fielderror.REQUIRED)], []
    if not isinstance(kind, str) or not kind:
        return [fielderror.field_error("kind", fielderror.REQUIRED)], []
    group, _ = _split_api_version(api_version)
    walk = _walk(obj)
    if walk is None:
        return [
            fielderror.FieldError(
                "kind",
                fielderror.NOT_SUPPORTED,
                f'no kind "{kind}" is registered for version "{api_version}"',
            )
        ], []
    errors = walk.errors
    decode = [e for e in errors if e.reason == fielderror.DECODE]
    if decode:
        return decode, []  # the object could not be decoded: nothing else is looked at
    errors.extend(_metadata(obj, group, kind))
    for field in _NONNEGATIVE.get((group, kind), ()):
        value = _get(obj, field)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            errors.append(
                fielderror.field_error(
                    ".".join(field), fielderror.INVALID, value, "must be greater than or equal to 0"
                )
            )
    if mode == "Strict":
        return errors + walk.strict, []
    if mode == "Warn":
        return errors, [e.message for e in walk.strict]
    return errors, []
