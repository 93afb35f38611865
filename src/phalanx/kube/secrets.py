"""``v1`` Secret as kube-apiserver keeps it: ``stringData`` is written into ``data``
(base64, ``stringData`` winning a key both give) and dropped, ``type`` defaults to
``Opaque``, every ``data`` value must be base64 and every key a valid config key
(``[-._a-zA-Z0-9]+``, as ``IsConfigMapKey`` checks). And what pods read of Secrets and
ConfigMaps (``valueFrom.secretKeyRef``, ``configMapKeyRef``): ``decoded``."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any

from phalanx.kube.errors import BadRequest, Invalid, field_error
from phalanx.kube.kinds import Kind

__all__ = ["decoded", "is_secret", "normalize"]

_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def is_secret(kind: Kind) -> bool:
    return kind.group == "" and kind.kind == "Secret"


def normalize(obj: dict[str, Any]) -> None:
    """The Secret ``obj`` as stored (module docstring), in place; ``BadRequest`` for a value
    that is not base64 (a decoding error, as the API server's), ``Invalid`` for a bad key."""
    data = obj.get("data") or {}
    strings = obj.pop("stringData", None) or {}
    if not isinstance(data, dict) or not isinstance(strings, dict):
        raise BadRequest("Secret data and stringData must be objects")
    name = str((obj.get("metadata") or {}).get("name", ""))
    for key, value in data.items():
        try:
            base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(
                f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data'
                f" in data.{key}"
            ) from None
    merged = dict(data)
    for key, value in strings.items():
        merged[key] = base64.b64encode(str(value).encode()).decode("ascii")
    bad = [k for k in merged if not _KEY.match(k) or k in (".", "..")]
    if bad:
        causes = [
            field_error(
                f"data[{k}]",
                "FieldValueInvalid",
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                k,
            )
            for k in bad
        ]
        raise Invalid("", "Secret", name, causes)
    if merged or "data" in obj:
        obj["data"] = merged
    obj.setdefault("type", "Opaque")


def decoded(
    secrets: Iterable[Mapping[str, Any]], config_maps: Iterable[Mapping[str, Any]]
) -> tuple[dict[tuple[str, str], dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """(namespace, name) -> key -> value of each Secret (decoded; a value that is not text
    is left out) and ConfigMap."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for secret in secrets:
        values: dict[str, str] = {}
        for key, value in (secret.get("data") or {}).items():
            try:
                values[key] = base64.b64decode(str(value)).decode()
            except (binascii.Error, ValueError):
                continue
        out[_key(secret)] = values
    maps = {_key(cm): {k: str(v) for k, v in (cm.get("data") or {}).items()} for cm in config_maps}
    return out, maps


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "default")), str(meta.get("name", ""))
