"""OpenAPI documents and server-side field validation for the Kubernetes-compatible API.

Built-in kinds' schemas are Kubernetes 1.32's, read at run time from the ``kubernetes-validate``
package; the custom kinds' (PyTorchJob, Volcano, JobSet, Kueue) are our own declarations in
:mod:`phalanx.kube.openapi.custom`. Importing this package reads nothing; the first call builds
what it needs, once, in memory.

- :func:`validate` -- ``fieldValidation`` Strict/Warn/Ignore: (errors, warnings);
  :func:`prune` drops unknown fields from an accepted object; :func:`loads_strict` parses JSON
  keeping duplicate keys visible.
- :func:`openapi_v3_index`, :func:`openapi_v3`, :func:`openapi_v2` -- the served documents.
- :func:`kinds` -- the group/version/kinds with a schema; :func:`available` -- whether the
  built-in schemas are installed.
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
