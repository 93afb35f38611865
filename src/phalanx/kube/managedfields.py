"""Server-side apply's field ownership between appliers: who set which field, and the 409
when an apply would change a field another applier owns.

Each ``Apply`` entry of ``metadata.managedFields`` keeps, in ``fieldsV1`` (``{"f:spec":
{"f:replicas": {}}}``), the fields its manager's last applied configuration set. An apply
that gives a field another ``Apply`` manager owns a different value than the object has
fails with 409 Conflict, worded as kube-apiserver words it (``Apply failed with 1 conflict:
conflict with "alice": .spec.replicas``; causes of type ``FieldManagerConflict``); with
``force=true`` (``kubectl apply --server-side --force-conflicts``) it goes through and the
fields leave their former owners. Giving the same value is no conflict: both then own it.

What is simpler than kube-apiserver's structured merge: a list is one field (no per-item
``k:``/``v:`` ownership), and only appliers own fields (an update through PUT or a
non-apply patch takes none away and conflicts with no one)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from phalanx.kube.errors import KubeError

__all__ = ["ApplyConflict", "check_apply", "field_set"]

Path = tuple[str, ...]
_SKIP_TOP = ("apiVersion", "kind", "status")
_META = ("labels", "annotations")


class ApplyConflict(KubeError):
    """409: the fields another applier owns (module docstring)."""

    code = 409
    reason = "Conflict"


def field_set(applied: Mapping[str, Any]) -> dict[str, Any]:
    """The ``fieldsV1`` of an applied configuration: every field it gives a value to."""
    out: dict[str, Any] = {}
    for key, value in applied.items():
        if key in _SKIP_TOP:
            continue
        if key == "metadata":
            if isinstance(value, Mapping):
                meta = {k: v for k, v in value.items() if k in _META}
                if meta:
                    out["f:metadata"] = _tree(meta)
            continue
        out[f"f:{key}"] = _tree(value) if isinstance(value, Mapping) else {}
    return out


def _tree(value: Mapping[str, Any]) -> dict[str, Any]:
    return {f"f:{k}": _tree(v) if isinstance(v, Mapping) and v else {} for k, v in value.items()}


def _paths(tree: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    for key, sub in tree.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        if sub:
            yield from _paths(sub, path)
        else:
            yield path


def _at(obj: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


_MISSING = object()


def _drop(tree: dict[str, Any], path: Path) -> None:
    """``path`` out of ``tree`` (and the parents it leaves empty)."""
    key = f"f:{path[0]}"
    if key not in tree:
        return
    if len(path) > 1:
        _drop(tree[key], path[1:])
        if tree[key]:
            return
    del tree[key]


def _text(path: Path) -> str:
    return "".join(f".{p}" for p in path)


def check_apply(
    manager: str,
    applied: Mapping[str, Any],
    current: Mapping[str, Any],
    entries: list[dict[str, Any]],
    *,
    force: bool,
) -> None:
    """Raise ``ApplyConflict`` if ``manager``'s apply of ``applied`` to ``current`` (as
    served in the version applied) changes a field another ``Apply`` entry of ``entries``
    owns; with ``force``, take such fields from their owners (``entries`` changed in
    place)."""
    if not isinstance(applied, Mapping):
        return
    mine = list(_paths(field_set(applied)))
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
