"""Server-side apply's field ownership between appliers: who set which field, the 409 when an
apply would change a field another applier owns, and the fields an applier let go of.

Each ``Apply`` entry of ``metadata.managedFields`` keeps, in ``fieldsV1`` (``{"f:spec":
{"f:replicas": {}}}``), the fields its manager's last applied configuration set. In a list
whose items have a key (a built-in kind's containers, env and volumes by ``name``, a
container's ports by ``containerPort`` and ``protocol``, a Service's by ``port`` and
``protocol``...: the lists strategic merge merges by key), each item is owned apart, as
kube-apiserver's structured merge keeps it: ``"k:{\\"name\\":\\"a\\"}": {".": {}, "f:name":
{}, "f:image": {}}``, ``.`` being the item itself. Other lists are one field, owned whole.

An apply that gives a field another ``Apply`` manager owns a different value than the object
has fails with 409 Conflict, worded as kube-apiserver words it (``Apply failed with 1
conflict: conflict with "alice": .spec.replicas``, an item's field as
``.spec.containers[name="a"].image``; causes of type ``FieldManagerConflict``); with
``force=true`` (``kubectl apply --server-side --force-conflicts``) it goes through and the
fields leave their former owners. Giving the same value is no conflict: both then own it.
A field (or list item) an applier owned and no longer applies is removed from the object,
unless another applier owns it too (``let_go``).

What is simpler than kube-apiserver: only appliers own fields (an update through PUT or a
non-apply patch takes none away, conflicts with no one, and keeps nothing from removal); a
custom resource's lists are one field each (no schema says their keys here)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from phalanx.kube.errors import KubeError
from phalanx.kube.patch import MERGE_KEYS

__all__ = ["ApplyConflict", "check_apply", "field_set", "let_go"]

Path = tuple[str, ...]
"""Segments: a field's name, an item's ``k:{...}``, or ``.`` (the item itself)."""
_SKIP_TOP = ("apiVersion", "kind", "status")
_META = ("labels", "annotations")
_ITEM = "."
_PROTOCOL = "protocol"


class ApplyConflict(KubeError):
    """409: the fields another applier owns (module docstring)."""

    code = 409
    reason = "Conflict"


def _keys(name: str, items: list[Any]) -> tuple[str, ...] | None:
    """The fields that identify an item of list ``name``, None for a list owned whole."""
    if not items or not all(isinstance(i, Mapping) for i in items):
        return None
    if name == "ports":
        first = "port" if all("port" in i and "containerPort" not in i for i in items) else None
        keys: tuple[str, ...] = (first or "containerPort", _PROTOCOL)
    elif name in MERGE_KEYS:
        keys = (MERGE_KEYS[name],)
    else:
        return None
    return keys if all(keys[0] in i for i in items) else None


def _item_key(item: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    """``k:{"name":"a"}``; a port's protocol, when not given, is TCP (its default)."""
    values = {k: item.get(k, "TCP" if k == _PROTOCOL else None) for k in keys}
    return "k:" + json.dumps(values, sort_keys=True, separators=(",", ":"))


def field_set(applied: Mapping[str, Any], *, keyed: bool = True) -> dict[str, Any]:
    """The ``fieldsV1`` of an applied configuration: every field it gives a value to, the
    items of keyed lists apart (``keyed``: a built-in kind's)."""
    out: dict[str, Any] = {}
    for key, value in applied.items():
        if key in _SKIP_TOP:
            continue
        if key == "metadata":
            if isinstance(value, Mapping):
                meta = {k: v for k, v in value.items() if k in _META}
                if meta:
                    out["f:metadata"] = _tree(meta, keyed)
            continue
        out[f"f:{key}"] = _value(key, value, keyed)
    return out


def _value(name: str, value: Any, keyed: bool) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return _tree(value, keyed) if value else {}
    keys = _keys(name, value) if keyed and isinstance(value, list) else None
    if keys is None:
        return {}
    return {_item_key(item, keys): {_ITEM: {}, **_tree(item, keyed)} for item in value}


def _tree(value: Mapping[str, Any], keyed: bool) -> dict[str, Any]:
    return {f"f:{k}": _value(k, v, keyed) for k, v in value.items()}


def _paths(tree: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    for key, sub in tree.items():
        if key == _ITEM:
            yield (*prefix, _ITEM)
            continue
        if key.startswith("f:"):
            path = (*prefix, key[2:])
        elif key.startswith("k:"):
            path = (*prefix, key)
        else:
            continue
        if sub:
            yield from _paths(sub, path)
        else:
            yield path


def _matches(item: Any, segment: str) -> bool:
    if not isinstance(item, Mapping):
        return False
    try:
        wanted = json.loads(segment[2:])
    except ValueError:
        return False
    return all(item.get(k, "TCP" if k == _PROTOCOL else None) == v for k, v in wanted.items())


def _at(obj: Any, path: Path) -> Any:
    for segment in path:
        if segment == _ITEM:
            continue
        if segment.startswith("k:"):
            if not isinstance(obj, list):
                return _MISSING
            obj = next((i for i in obj if _matches(i, segment)), _MISSING)
            if obj is _MISSING:
                return obj
            continue
        if not isinstance(obj, Mapping) or segment not in obj:
            return _MISSING
        obj = obj[segment]
    return obj


_MISSING = object()


def _segment_key(segment: str) -> str:
    return segment if segment == _ITEM or segment.startswith("k:") else f"f:{segment}"


def _drop(tree: dict[str, Any], path: Path) -> None:
    """``path`` out of ``tree`` (and the parents it leaves empty)."""
    key = _segment_key(path[0])
    if key not in tree:
        return
    if len(path) > 1:
        _drop(tree[key], path[1:])
        if tree[key]:
            return
    del tree[key]


def _text(path: Path) -> str:
    out = ""
    for segment in path:
        if segment == _ITEM:
            continue
        if segment.startswith("k:"):
            values = json.loads(segment[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in values.items()) + "]"
        else:
            out += f".{segment}"
    return out


def check_apply(
    manager: str,
    applied: Mapping[str, Any],
    current: Mapping[str, Any],
    entries: list[dict[str, Any]],
    *,
    force: bool,
    keyed: bool = True,
) -> None:
    """Raise ``ApplyConflict`` if ``manager``'s apply of ``applied`` to ``current`` (as
    served in the version applied) changes a field another ``Apply`` entry of ``entries``
    owns; with ``force``, take such fields from their owners (``entries`` changed in
    place). An item itself (``.``) is shared, never a conflict: its fields may be."""
    if not isinstance(applied, Mapping):
        return
    mine = [p for p in _paths(field_set(applied, keyed=keyed)) if p[-1] != _ITEM]
    found: list[tuple[str, Path]] = []
    for entry in entries:
        if entry.get("operation") != "Apply" or entry.get("manager") == manager:
            continue
        owned = set(_paths(entry.get("fieldsV1") or {}))
        for path in mine:
            if path in owned and _at(applied, path) != _at(current, path):
                found.append((str(entry.get("manager")), path))
    if not found:
        return
    if force:
        for entry in entries:
            for who, path in found:
                if entry.get("manager") == who and entry.get("operation") == "Apply":
                    _drop(entry.setdefault("fieldsV1", {}), path)
        return
    raise _conflict(found)


def let_go(
    manager: str,
    owned: Mapping[str, Any],
    entries: list[dict[str, Any]],
    obj: dict[str, Any],
) -> None:
    """Remove from ``obj`` what ``manager`` owned before (its ``Apply`` entry among
    ``entries``) and ``owned`` (its new field set) no longer holds, unless another applier
    owns it: a list item with every field in it, or a field. An item's key fields stay
    while the item does."""
    before = next(
        (
            e.get("fieldsV1") or {}
            for e in entries
            if e.get("manager") == manager and e.get("operation") == "Apply"
        ),
        None,
    )
    if not before:
        return
    others: set[Path] = set()
    for entry in entries:
        if entry.get("operation") == "Apply" and entry.get("manager") != manager:
            others.update(_paths(entry.get("fieldsV1") or {}))
    now = set(_paths(owned))
    # a path that something still held lies under stays (an entry written when the list
    # was owned whole, the items now owned apart)
    held = {k[:n] for k in now | others for n in range(1, len(k) + 1)}
    gone = set(_paths(before)) - held
    removed: list[Path] = []
    for item in sorted((p[:-1] for p in gone if p[-1] == _ITEM), key=len, reverse=True):
        if item not in held:
            _remove(obj, item)
            removed.append(item)
    for path in sorted(gone, key=len, reverse=True):
        if path[-1] == _ITEM or any(path[: len(i)] == i for i in removed):
            continue
        parent = path[:-1]
        if parent and parent[-1].startswith("k:") and f'"{path[-1]}"' in parent[-1]:
            continue  # a key field of an item that stays
        _remove(obj, path)


def _remove(obj: Any, path: Path) -> None:
    """The field or list item at ``path`` out of ``obj``, if it is there."""
    holder = _at(obj, path[:-1])
    last = path[-1]
    if last.startswith("k:") and isinstance(holder, list):
        holder[:] = [i for i in holder if not _matches(i, last)]
    elif isinstance(holder, dict):
        holder.pop(last, None)


def _conflict(found: list[tuple[str, Path]]) -> ApplyConflict:
    if len(found) == 1:
        who, path = found[0]
        message = f'Apply failed with 1 conflict: conflict with "{who}": {_text(path)}'
    else:
        lines: list[str] = []
        for who in sorted({w for w, _ in found}):
            lines.append(f'conflicts with "{who}":')
            lines.extend(f"- {_text(p)}" for w, p in found if w == who)
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    causes = [
        {"type": "FieldManagerConflict", "message": f'conflict with "{w}"', "field": _text(p)}
        for w, p in found
    ]
    return ApplyConflict(message, details={"causes": causes})
