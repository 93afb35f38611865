"""``meta.k8s.io/v1 Table`` responses for ``kubectl get``: the columns of ``phalanx.kube.printers``
for each object, with the object itself or its metadata per row, as kube-apiserver answers
``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from phalanx.kube.kinds import Kind
from phalanx.kube.printers import Column, age, columns, human_duration

__all__ = ["age", "human_duration", "table", "table_json"]

_DESCRIPTIONS = {
    "Name": "Name must be unique within a namespace. It is required when creating resources,"
    " although some resources may allow a client to request the generation of an appropriate"
    " name automatically.",
    "Age": "CreationTimestamp is a timestamp representing the server time when this object was"
    " created.",
}


def table(
    kind: Kind,
    objects: Sequence[dict[str, Any]],
    now: float,
    *,
    include: str = "Metadata",
    resource_version: str = "",
    continue_: str = "",
    headers: bool = True,
) -> dict[str, Any]:
    """The Table of ``objects``; ``include`` is ``includeObject``: None, Metadata (a
    PartialObjectMetadata per row, kubectl's default) or Object."""
    cols = columns(kind)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [cell(obj, now) for _, _, _, cell in cols]}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    out: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {
                "name": name,
                "type": type_,
                "format": "name" if name == "Name" else "",
                "description": _DESCRIPTIONS.get(name, name),
                "priority": priority,
            }
            for name, type_, priority, _ in cols
        ]
        if headers
        else [],
        "rows": rows,
    }
    if continue_:
        out["metadata"]["continue"] = continue_
    return out


Memo = Callable[[dict[str, Any], Any, Callable[[dict[str, Any]], Any]], Any]
"""``ObjectStore.memo``: (object, slot, compute) -> compute(object), kept per version."""
_SHIFT_S = 10_000_000.0
"""A cell whose value is the same this much later does not depend on the time."""


def _no_memo(obj: dict[str, Any], slot: Any, compute: Callable[[dict[str, Any]], Any]) -> Any:
    return compute(obj)


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_encode_str = json.encoder.encode_basestring


def _dumps(value: Any) -> bytes:
    """``wire.dumps``, quicker for the cells' usual strings and integers."""
    if type(value) is str:
        return str(_encode_str(value)).encode()
    if type(value) is int:
        return str(value).encode()
    return str(_encode(value)).encode()


def _row_parts(
    cols: Sequence[Column], include: str, now: float
) -> Callable[[dict[str, Any]], tuple[list[bytes | int], bytes]]:
    """What of an object's row does not depend on the time: each cell's JSON (or its column
    index, for a cell that moves with the time, such as Age), and the row's ``object``."""

    def compute(obj: dict[str, Any]) -> tuple[list[bytes | int], bytes]:
        cells: list[bytes | int] = []
        for i, (_, _, _, cell) in enumerate(cols):
            value = cell(obj, now)
            cells.append(_dumps(value) if value == cell(obj, now + _SHIFT_S) else i)
        if include == "Object":
            extra = b',"object":' + _dumps(obj)
        elif include != "None":
            partial = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
            extra = b',"object":' + _dumps(partial)
        else:
            extra = b""
        return cells, extra

    return compute


def table_json(
    kind: Kind,
    objects: Sequence[dict[str, Any]],
    now: float,
    *,
    include: str = "Metadata",
    resource_version: str = "",
    continue_: str = "",
    memo: Memo = _no_memo,
) -> bytes:
    """``table(...)`` as JSON bytes (the same bytes ``dumps`` gives), where what of each row
    does not depend on the time is kept per object version by ``memo``: a list of 10,000 pods
    encodes only their Age cells again."""
    cols = columns(kind)
    shell = table(
        kind, [], now, include=include, resource_version=resource_version, continue_=continue_
    )
    head = _dumps(shell)
    marker = b'"rows":[]'
    at = head.index(marker) + len(marker) - 1
    compute = _row_parts(cols, include, now)
    slot = ("table-row", kind.group, kind.kind, include)
    rows = []
    for obj in objects:
        cells, extra = memo(obj, slot, compute)
        encoded = [
            part if isinstance(part, bytes) else _dumps(cols[part][3](obj, now)) for part in cells
        ]
        rows.append(b'{"cells":[' + b",".join(encoded) + b"]" + extra + b"}")
    return head[:at] + b",".join(rows) + head[at:]
