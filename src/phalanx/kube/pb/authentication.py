"""authentication.k8s.io/v1's TokenRequest (`kubectl create token`). See declare.py."""

from __future__ import annotations

from phalanx.kube.pb.declare import I64, STR, F, L, message
from phalanx.kube.pb.meta import OBJECT_META, TIME

API_VERSION = "authentication.k8s.io/v1"
KINDS = frozenset({"TokenRequest"})

MESSAGES = (
    message("authentication.TokenRequest", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "authentication.TokenRequestSpec"),
            F(3, "status", "authentication.TokenRequestStatus", "o")),
    message("authentication.TokenRequestSpec", L(1, "audiences", STR),
            F(4, "expirationSeconds", I64, "p"),
            F(3, "boundObjectRef", "authentication.BoundObjectReference", "p")),
    message("authentication.BoundObjectReference", F(1, "kind", STR, "o"),
            F(2, "apiVersion", STR, "o"), F(3, "name", STR, "o"), F(4, "uid", STR, "o")),
    message("authentication.TokenRequestStatus", F(1, "token", STR),
            F(2, "expirationTimestamp", TIME)),
)
