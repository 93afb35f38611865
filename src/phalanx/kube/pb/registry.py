"""Protobuf message classes built from our declarations (meta.py, core.py, ...) on first use.

    DECLARED                        every declared message by full name ("core.Pod")
    message_class(full_name)        the protobuf class of a declared message
    kind_class(api_version, kind)   the class of a kind, or None when we declare none
    undeclared_field(message)       where a parsed message holds a field number we do not declare

Importing this module imports the declarations only; `google.protobuf` is imported when the
first class is built (descriptor_pb2 files filled in code, one per package, added to a private
DescriptorPool, classes from message_factory), so the `protobuf` runtime does the wire format.
Each package becomes a proto2 file, as upstream's generated.proto files are: singular fields are
`optional` (presence is kept, which Go's pointers need) and repeated scalars are not packed.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

from phalanx.kube.pb import (
    apps,
    authentication,
    autoscaling,
    autoscaling_v2,
    batch,
    core,
    meta,
    networking,
    pod,
    policy,
    rbac,
    scheduling,
)
from phalanx.kube.pb.declare import BOOL, BYTES, DBL, I32, I64, SCALARS, STR, Field, Message

__all__ = ["DECLARED", "kind_class", "message_class", "undeclared_field"]

_GROUPS: tuple[ModuleType, ...] = (
    core, apps, batch, rbac, scheduling, policy, networking, autoscaling, autoscaling_v2,
    authentication,
)
DECLARED: dict[str, Message] = {
    m.name: m for module in (meta, pod, *_GROUPS) for m in module.MESSAGES
}
_BY_API_VERSION: dict[str, ModuleType] = {module.API_VERSION: module for module in _GROUPS}


def message_class(full_name: str) -> Any:
    """The protobuf message class of a declared message ("core.Pod"); KeyError if undeclared."""
    return _classes()[full_name]


def kind_class(api_version: str, kind: str) -> Any | None:
    """The class of `kind` in `api_version`; meta/v1's kinds (Status, DeleteOptions) are
    registered in every group version `v1`. None when we declare no such kind."""
    module = _BY_API_VERSION.get(api_version)
    if module is not None and kind in module.KINDS:
        return message_class(f"{module.MESSAGES[0].package}.{kind}")
    if api_version.rpartition("/")[2] == "v1" and kind in meta.KINDS:
        return message_class(f"meta.{kind}")
    return None


def undeclared_field(message: Any, path: str = "") -> str | None:
    """Where `message` (parsed from the wire) holds a field we do not declare, or None.

    The answer names the JSON path, our message name and the field number, e.g.
    `spec.template.spec: core.PodSpec has field 18, which is not declared here`.
    """
    from google.protobuf.unknown_fields import UnknownFieldSet

    unknown = UnknownFieldSet(message)
    if len(unknown):
        first = unknown[0]
        return (f"{path or '(the object)'}: {message.DESCRIPTOR.full_name} has field "
                f"{first.field_number} (wire type {first.wire_type}), which is not declared here")
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        where = f"{path}.{field.name}" if path else field.name
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is None:
                continue
            items = [(f"{where}[{k!r}]", v) for k, v in value.items()]
        elif field.is_repeated:
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        else:
            items = [(where, value)]
        for sub_path, sub in items:
            found = undeclared_field(sub, sub_path)
            if found is not None:
                return found
    return None


@cache
def _classes() -> dict[str, Any]:
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    packages: dict[str, list[Message]] = {}
    for m in DECLARED.values():
        packages.setdefault(m.package, []).append(m)
    added: set[str] = set()

    def add(package: str) -> None:
        if package in added:
            return
        added.add(package)
        file, dependencies = _file(package, packages[package])
        for dependency in sorted(dependencies):
            add(dependency)
        pool.Add(file)

    for package in packages:
        add(package)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
            for name in DECLARED}


def _file(package: str, messages: list[Message]) -> tuple[Any, set[str]]:
    """A FileDescriptorProto for one package, and the packages it refers to."""
    from google.protobuf import descriptor_pb2

    file = descriptor_pb2.FileDescriptorProto(
        name=f"phalanx/kube/{package}.proto", package=package, syntax="proto2")
    dependencies: set[str] = set()
    for m in messages:
        described = file.message_type.add(name=m.name.partition(".")[2])
        for f in m.fields:
            field = described.field.add(name=f.name, number=f.number, json_name=f.name)
            if f.map:
                entry = described.nested_type.add(name=f.name[:1].upper() + f.name[1:] + "Entry")
                entry.options.map_entry = True
                key = entry.field.add(name="key", number=1, json_name="key")
                _typed(key, Field(1, "key", STR), dependencies)
                value = entry.field.add(name="value", number=2, json_name="value")
                _typed(value, Field(2, "value", f.type), dependencies)
                field.label = field.LABEL_REPEATED
                field.type = field.TYPE_MESSAGE
                field.type_name = f".{m.name}.{entry.name}"
            else:
                _typed(field, f, dependencies)
                if f.repeated:
                    field.label = field.LABEL_REPEATED
    dependencies.discard(package)
    file.dependency.extend(f"phalanx/kube/{p}.proto" for p in sorted(dependencies))
    return file, dependencies


def _typed(field: Any, declared: Field, dependencies: set[str]) -> None:
    field.label = field.LABEL_OPTIONAL
    if declared.type in SCALARS:
        field.type = {
            STR: field.TYPE_STRING, I32: field.TYPE_INT32, I64: field.TYPE_INT64,
            BOOL: field.TYPE_BOOL, BYTES: field.TYPE_BYTES, DBL: field.TYPE_DOUBLE,
        }[declared.type]
        return
    if declared.type not in DECLARED:
        raise KeyError(f"{declared.name}: message {declared.type!r} is not declared")
    field.type = field.TYPE_MESSAGE
    field.type_name = "." + declared.type
    dependencies.add(declared.type.partition(".")[0])
