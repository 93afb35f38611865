"""OpenAPI documents and server-side field validation for the Kubernetes-compatible API.

Schemas are upstream's, vendored with provenance (``data/README.md``): Kubernetes 1.32's own
OpenAPI v3 documents for the built-in kinds, the CRDs' ``openAPIV3Schema`` for the custom ones.
Importing this package reads nothing; the first call reads what it needs, once.

- :func:`validate` -- ``fieldValidation`` Strict/Warn/Ignore: (errors, warnings);
  :func:`prune` drops unknown fields from an accepted object; :func:`loads_strict` parses JSON
  keeping duplicate keys visible.
- :func:`openapi_v3_index`, :func:`openapi_v3`, :func:`openapi_v2` -- the served documents.
- :func:`kinds` -- the group/version/kinds with a schema; :func:`available` -- whether the
  documents are built at all.
- :func:`patch_meta` -- strategic-merge-patch strategy and merge key of a field.
"""

from phalanx.kube.openapi.catalog import KindInfo, OpenAPIDataMissing, available, kinds
from phalanx.kube.openapi.documents import (
    openapi_v2,
    openapi_v3,
    openapi_v3_hash,
    openapi_v3_index,
)
from phalanx.kube.openapi.fielderror import (
    FieldError,
    bad_request_message,
    invalid_message,
    strict_decoding_message,
)
from phalanx.kube.openapi.patchmeta import patch_meta
from phalanx.kube.openapi.validator import MODES, loads_strict, prune, validate

__all__ = [
    "MODES",
    "FieldError",
    "KindInfo",
    "OpenAPIDataMissing",
    "available",
    "bad_request_message",
    "invalid_message",
    "kinds",
    "loads_strict",
    "openapi_v2",
    "openapi_v3",
    "openapi_v3_hash",
    "openapi_v3_index",
    "patch_meta",
    "prune",
    "strict_decoding_message",
    "validate",
]
