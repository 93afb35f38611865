"""What travels on the Kubernetes API's wire: request bodies (JSON, YAML, Kubernetes protobuf
once ``phalanx.kube.protobuf`` exists), the media types a client accepts (``as=Table``), and
JSON responses (``Status`` for errors)."""

from __future__ import annotations

import datetime
import importlib
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from starlette.responses import Response

from phalanx.kube.errors import BadRequest, KubeError, UnsupportedMediaType
from phalanx.kube.openapi import loads_strict
from phalanx.kube.patch import APPLY, PATCH_TYPES

__all__ = [
    "JSON",
    "PROTOBUF",
    "YAML",
    "decode_body",
    "dumps",
    "error_response",
    "json_response",
    "media",
    "wants_table",
    "warning_header",
]

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
ACCEPTED = (JSON, YAML, PROTOBUF)


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def media(content_type: str | None) -> str:
    """The bare media type of a Content-Type header, lower case."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def _protobuf(body: bytes) -> Any:
    try:
        # phalanx.kube.protobuf comes from another branch; until it lands, 415.
        protobuf = importlib.import_module("phalanx.kube.protobuf")
    except ImportError:
        raise UnsupportedMediaType(PROTOBUF, [JSON, YAML]) from None
    try:
        return protobuf.decode(body)
    except protobuf.ProtobufError as exc:
        # A body kube-apiserver could not decode either: 400 with what is wrong.
        raise BadRequest(f"protobuf decode error: {exc}") from None


def decode_body(content_type: str | None, body: bytes) -> Any:
    """The request body as JSON values; ``BadRequest`` for a body that does not parse,
    ``UnsupportedMediaType`` for a format not understood."""
    kind = media(content_type)
    if kind == PROTOBUF:
        return _protobuf(body)
    if not body.strip():
        raise BadRequest("the request body is empty")
    if kind in ("", JSON, "text/json") or (kind in PATCH_TYPES and kind != APPLY):
        try:
            # Keeps duplicate keys visible to field validation (the last one wins, as in Go).
            return _valid_text(loads_strict(body), body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"json parse error: {exc}") from None
        except RecursionError:  # [[[...]]] 100,000 deep: the decoder's recursion, a 500
            raise BadRequest("json parse error: nested too deeply") from None
    if kind in (YAML, "application/x-yaml", "text/yaml", APPLY):
        import yaml

        try:
            return _valid_text(_jsonable(yaml.safe_load(body)), body)
        except yaml.YAMLError as exc:
            raise BadRequest(f"yaml parse error: {exc}".replace("\n", " ")) from None
        except RecursionError:
            raise BadRequest("yaml parse error: nested too deeply") from None
    raise UnsupportedMediaType(kind, ACCEPTED)


_SURROGATE_ESCAPE = re.compile(rb"\\[uU]0{0,4}[dD][89a-fA-F]")


def _valid_text(value: Any, body: bytes) -> Any:
    """``value`` with every lone surrogate (an escape such as ``\\ud800`` that pairs with
    nothing) made U+FFFD, as Go's decoders do: such a string has no UTF-8 form, so it could
    be neither stored nor sent back. Only a body that escapes a surrogate is walked."""
    if not _SURROGATE_ESCAPE.search(body):
        return value
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_valid_text(k, body): _valid_text(v, body) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_text(v, body) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    """YAML's values as JSON's, as kube-apiserver's YAML decoder (sigs.k8s.io/yaml) turns
    them: a key that is not a string is written as one (``1`` -> "1", ``null`` -> "null",
    ``true`` -> "true"); a timestamp or a date is its text (RFC 3339)."""
    if isinstance(value, dict):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:  # YAML's timestamps without a zone are UTC
            value = value.replace(tzinfo=datetime.UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):  # !!binary
        import base64

        return base64.b64encode(value).decode()
    return value


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(_jsonable(key))


def wants_table(accept: str | None) -> bool:
    """Whether the client asked for ``meta.k8s.io Table`` (kubectl get's human output)."""
    if not accept:
        return False
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return True
    return False


def _warn_text(text: str) -> str | None:
    # k8s.io/apimachinery's NewWarningHeader refuses a text that is not UTF-8 or holds a
    # control character (C0, DEL, C1), and the apiserver's recorder then drops the warning;
    # else only `"` and `\` are escaped (makeQuotedString), the rest goes as it is.
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        return None
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def warning_header(texts: Iterable[str]) -> str | None:
    """The ``Warning`` header kube-apiserver sends for ``texts``: ``299 - "<text>"`` each,
    comma-separated (one header, as RFC 9110 allows for a list), or None if none is left.
    Go writes a header's bytes as they are (UTF-8); Starlette encodes a header as latin-1, so
    the value returned is the str whose latin-1 encoding is those UTF-8 bytes."""
    quoted = [q for q in map(_warn_text, texts) if q is not None]
    if not quoted:
        return None
    return ", ".join(f"299 - {q}" for q in quoted).encode().decode("latin-1")


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(value), status_code=status, media_type=JSON, headers=headers)


def error_response(exc: KubeError) -> Response:
    return json_response(exc.status(), exc.code)
