"""The walk of one object against an OpenAPI schema: types, fields, constraints, names of
containers. It collects what it finds; :mod:`phalanx.kube.openapi.validator` decides what is an
error, a warning, or nothing, by mode."""

from __future__ import annotations

import re
from typing import Any

from phalanx.kube.openapi import fielderror, names
from phalanx.kube.openapi.fielderror import FieldError

_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_CONTAINER = "io.k8s.api.core.v1.Container"


_EMPTY: dict[str, Any] = {}
_CONSTRAINTS = frozenset(("enum", "minimum", "maximum", "maxLength", "pattern"))


class _Key(str):
    """A map key in a path (``metadata.labels[app]`` in validation errors)."""


Path = tuple[str | int, ...]


def _strict_path(path: Path) -> str:
    out = ""
    for seg in path:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else seg)
    return out


def _field_path(path: Path) -> str:
    out = ""
    for seg in path:
        if isinstance(seg, int | _Key):
            out += f"[{seg}]"
        else:
            out += f".{seg}" if out else seg
    return out


def _dotted(path: Path) -> str:
    """A path as encoding/json writes it: field names only, no indices or map keys."""
    return ".".join(str(seg) for seg in path if isinstance(seg, str) and not isinstance(seg, _Key))


def _go_json_kind(value: Any) -> str:
    """How encoding/json names a JSON value in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


Resolved = tuple[dict[str, Any], str, type | None, bool]
"""A schema with its ``$ref`` and ``allOf`` folded in; the last name it referenced; the one
Python type its values must have where that is the whole type check (None: see
``Walk._type_ok``); whether it has constraints (``enum``, ``pattern``, ...). Computed once
per schema: a walk asks this of every value it meets."""

_SIMPLE_TYPES: dict[str, type] = {"object": dict, "array": list, "string": str}


def _type_of(s: dict[str, Any], name: str) -> type | None:
    if name == _QUANTITY or s.get("x-kubernetes-int-or-string"):
        return None
    if s.get("format") == "int-or-string":
        return None
    want = s.get("type")
    if want is None and "properties" in s:
        want = "object"
    return _SIMPLE_TYPES.get(want) if isinstance(want, str) else None


class Walk:
    def __init__(
        self,
        schemas: dict[str, Any],
        crd: bool,
        resolved: dict[int, Resolved] | None = None,
    ) -> None:
        """``resolved`` is a cache of :meth:`resolve` by schema identity, which walks over the
        same ``schemas`` may share: every schema walked must then outlive the cache (the
        catalog's documents do)."""
        self.schemas = schemas
        self.crd = crd
        self.errors: list[FieldError] = []
        self.strict: list[FieldError] = []
        self.unknown: list[tuple[dict[str, Any], str]] = []
        """(object, key) of every unknown field, for pruning."""
        self._resolved: dict[int, Resolved] = {} if resolved is None else resolved

    def resolve(self, schema: Any) -> tuple[dict[str, Any], str]:
        """A schema with its ``$ref`` and ``allOf`` folded in, and the last referenced name."""
        found = self._resolve(schema)
        return found[0], found[1]

    def _resolve(self, schema: Any) -> Resolved:
        if not isinstance(schema, dict):
            return {}, "", None, False
        cached = self._resolved.get(id(schema))
        if cached is not None:
            return cached
        out: dict[str, Any] = {}
        name = ""
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[1]
            out.update(self.resolve(self.schemas.get(name, _EMPTY))[0])
        for part in schema.get("allOf", ()):
            sub, sub_name = self.resolve(part)
            name = sub_name or name
            for k, v in sub.items():
                if k == "properties":
                    out.setdefault("properties", {}).update(v)
                elif k == "required":
                    out["required"] = [*out.get("required", []), *v]
                else:
                    out.setdefault(k, v)
        for k, v in schema.items():
            if k not in ("$ref", "allOf"):
                out[k] = v
        done = (out, name, _type_of(out, name), bool(_CONSTRAINTS.intersection(out)))
        self._resolved[id(schema)] = done
        return done

    def error(self, err: FieldError) -> None:
        self.errors.append(err)

    def walk(self, value: Any, schema: Any, path: Path, owner: str) -> None:
        """Check ``value`` at ``path`` against ``schema``; ``owner`` is the Go struct that holds
        the field (for decoding errors' wording)."""
        s, name, simple, constrained = self._resolve(schema)
        if value is None or not s:
            return  # null is "unset" to Go's decoder; no schema: nothing declared to check
        # (``_type_ok``: the whole check, and the error's wording, where a type is not enough)
        if (simple is None or not isinstance(value, simple)) and not self._type_ok(
            value, s, name, path, owner
        ):
            return
        if isinstance(value, dict):
            self._object(value, s, path, name.rpartition(".")[2] if name else owner)
            if name == _CONTAINER and isinstance(value.get("name"), str):
                for msg in names.dns1123_label(value["name"]):
                    self.error(
                        fielderror.field_error(
                            _field_path((*path, "name")), fielderror.INVALID, value["name"], msg
                        )
                    )
        elif isinstance(value, list):
            items = s.get("items")
            for i, item in enumerate(value):
                self.walk(item, items, (*path, i), owner)
        if constrained:
            self._constraints(value, s, path)

    def _type_ok(self, value: Any, s: dict[str, Any], name: str, path: Path, owner: str) -> bool:
        want = s.get("type")
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if name == _QUANTITY:
            ok = is_int or isinstance(value, float | str)
            want = "string"
        elif s.get("x-kubernetes-int-or-string") or s.get("format") == "int-or-string":
            ok = is_int or isinstance(value, str)
            want = "integer-or-string"
        elif want == "object" or (want is None and "properties" in s):
            ok = isinstance(value, dict)
            want = "object"
        elif want == "array":
            ok = isinstance(value, list)
        elif want == "string":
            ok = isinstance(value, str)
        elif want == "integer":
            ok = is_int or (isinstance(value, float) and value.is_integer())
        elif want == "number":
            ok = is_int or isinstance(value, float)
        elif want == "boolean":
            ok = isinstance(value, bool)
        else:
            ok = True
        if ok:
            return True
        if not self.crd:
            # A built-in kind is decoded into Go structs: the first mismatch fails decoding.
            if not any(e.reason == fielderror.DECODE for e in self.errors):
                self.error(
                    fielderror.decode_error(
                        _strict_path(path),
                        _go_json_kind(value),
                        owner,
                        _dotted(path),
                        self._go_type(s, name),
                    )
                )
            return False
        where = _field_path(path)
        # kube-openapi's InvalidType: the bad value shown is the JSON type found, not the value
        # ("Invalid value: \"string\": spec.x in body must be of type integer: \"string\"").
        found = type_name(value)
        self.error(
            fielderror.field_error(
                where,
                fielderror.TYPE_INVALID,
                found,
                f"{where} in body must be of type {want}: {fielderror.go_value(found)}",
            )
        )
        return False

    def _go_type(self, s: dict[str, Any], name: str) -> str:
        """The Go type behind a schema, as encoding/json names it in its errors."""
        if name:
            pkg, _, short = name.rpartition(".")
            return f"{pkg.rpartition('.')[2]}.{short}"
        t = s.get("type")
        if t == "array":
            return "[]" + self._go_type(*self.resolve(s.get("items")))
        if t == "object" and isinstance(s.get("additionalProperties"), dict):
            return "map[string]" + self._go_type(*self.resolve(s["additionalProperties"]))
        fmt = s.get("format")
        simple = {"string": "string", "boolean": "bool", "number": "float64"}
        if t == "integer":
            return fmt if fmt in ("int32", "int64") else "int"
        return simple.get(str(t), "interface {}")

    def _object(self, value: dict[str, Any], s: dict[str, Any], path: Path, owner: str) -> None:
        props: dict[str, Any] | None = s.get("properties")
        extra = s.get("additionalProperties")
        preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        # A built-in object with no declared fields (RawExtension, FieldsV1) takes anything; a
        # CRD's is structural: what it does not declare is pruned.
        free = not self.crd and props is None and extra is None
        for dup in getattr(value, "duplicates", ()):
            self.strict.append(fielderror.duplicate_field(_strict_path((*path, dup))))
        for key, sub in value.items():
            if props is not None and key in props:
                self.walk(sub, props[key], (*path, key), owner)
            elif isinstance(extra, dict):
                self.walk(sub, extra, (*path, _Key(key)), owner)
            elif (
                extra is True
                or preserve
                or free
                or (embedded and key in ("apiVersion", "kind", "metadata"))
            ):
                continue
            else:
                self.strict.append(
                    fielderror.unknown_field(_strict_path((*path, key)), crd=self.crd)
                )
                self.unknown.append((value, key))
        for req in s.get("required", ()):
            if req in value:
                continue
            if self.crd and isinstance(props, dict) and "default" in (props.get(req) or {}):
                continue  # the CRD's default fills it before validation
            self.error(fielderror.field_error(_field_path((*path, req)), fielderror.REQUIRED))

    def _constraints(self, value: Any, s: dict[str, Any], path: Path) -> None:
        if not _CONSTRAINTS.intersection(s):
            return  # the common case: nothing to check, no path to spell out
        where = _field_path(path)
        enum = s.get("enum")
        if isinstance(enum, list) and value not in enum:
            supported = ", ".join(fielderror.go_value(e) for e in enum)
            self.error(
                fielderror.field_error(
                    where, fielderror.NOT_SUPPORTED, value, f"supported values: {supported}"
                )
            )
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = s.get("minimum"), s.get("maximum")
            if isinstance(low, int | float) and (
                value < low or (s.get("exclusiveMinimum") is True and value == low)
            ):
                rel = (
                    "greater than"
                    if s.get("exclusiveMinimum") is True
                    else "greater than or equal to"
                )
                self.error(
                    fielderror.field_error(
                        where, fielderror.INVALID, value, f"{where} in body should be {rel} {low}"
                    )
                )
            if isinstance(high, int | float) and (
                value > high or (s.get("exclusiveMaximum") is True and value == high)
            ):
                rel = "less than" if s.get("exclusiveMaximum") is True else "less than or equal to"
                self.error(
                    fielderror.field_error(
                        where, fielderror.INVALID, value, f"{where} in body should be {rel} {high}"
                    )
                )
        if isinstance(value, str):
            most = s.get("maxLength")
            if isinstance(most, int) and len(value) > most:
                self.error(
                    fielderror.field_error(
                        where, fielderror.TOO_LONG, value, f"may not be more than {most} bytes"
                    )
                )
            pattern = s.get("pattern")
            if isinstance(pattern, str) and not _matches(pattern, value):
                self.error(
                    fielderror.field_error(
                        where,
                        fielderror.INVALID,
                        value,
                        f"{where} in body should match '{pattern}'",
                    )
                )


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return True  # a Go-only construct: kube-apiserver's own check stands, not ours
