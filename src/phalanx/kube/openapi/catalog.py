"""The vendored OpenAPI documents on disk, read lazily and once.

The data directory is ``$PHALANX_KUBE_OPENAPI_DATA`` when set, else ``data/`` next to this
module (built by :mod:`phalanx.kube.openapi.vendor`, provenance in its README.md). Nothing is
read at import: the first call that needs a document reads ``index.json`` and that document.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_DATA = "PHALANX_KUBE_OPENAPI_DATA"


class OpenAPIDataMissing(RuntimeError):
    """The data directory has no ``index.json``: the documents were not built or installed."""


@dataclass(frozen=True)
class KindInfo:
    """A kind with a schema: where it lives (``group_version`` is the /openapi/v3 path, such as
    ``apis/batch/v1``), the name of its schema in that document, and whether it comes from a
    CRD (``origin == "crd"``: unknown fields are pruned, no typed Go decoding); ``plural`` is
    its resource in URLs (``jobs``) and ``namespaced`` its scope, both read off its paths."""

    group: str
    version: str
    kind: str
    schema: str
    group_version: str
    origin: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def data_dir() -> Path:
    env = os.environ.get(ENV_DATA)
    return Path(env) if env else Path(__file__).with_name("data")


def available() -> bool:
    """Whether the documents are built (``index.json`` is there); without them a server
    validates nothing and serves an empty ``/openapi/v3`` index."""
    return (data_dir() / "index.json").is_file()


@functools.cache
def _index() -> dict[str, Any]:
    path = data_dir() / "index.json"
    try:
        index: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise OpenAPIDataMissing(
            f"{path} is missing: build it with `python -m phalanx.kube.openapi.vendor` "
            f"or point ${ENV_DATA} at a built copy"
        ) from None
    return index


def group_versions() -> dict[str, dict[str, Any]]:
    """/openapi/v3 path -> {file, hash (upper-case hex SHA-512 of the document), bytes, origin}."""
    gvs: dict[str, dict[str, Any]] = _index()["groupVersions"]
    return gvs


@functools.cache
def document_bytes(group_version: str) -> bytes | None:
    """The JSON of one group-version's v3 document, exactly as served, or None if not served."""
    entry = group_versions().get(group_version)
    if entry is None:
        return None
    return gzip.decompress((data_dir() / entry["file"]).read_bytes())


@functools.cache
def document(group_version: str) -> dict[str, Any] | None:
    raw = document_bytes(group_version)
    if raw is None:
        return None
    doc: dict[str, Any] = json.loads(raw)
    return doc


@functools.cache
def kinds() -> tuple[KindInfo, ...]:
    return tuple(
        KindInfo(
            k["group"],
            k["version"],
            k["kind"],
            k["schema"],
            k["groupVersion"],
            k["origin"],
            k["plural"],
            k["namespaced"],
        )
        for k in _index()["kinds"]
    )


@functools.cache
def _by_gvk() -> dict[tuple[str, str, str], KindInfo]:
    return {(k.group, k.version, k.kind): k for k in kinds()}


def kind_info(group: str, version: str, kind: str) -> KindInfo | None:
    return _by_gvk().get((group, version, kind))


def schemas_of(info: KindInfo) -> dict[str, Any]:
    doc = document(info.group_version)
    assert doc is not None, info  # index.json names only documents it lists
    schemas: dict[str, Any] = doc["components"]["schemas"]
    return schemas
