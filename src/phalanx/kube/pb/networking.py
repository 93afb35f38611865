"""networking.k8s.io/v1's Ingress (`kubectl create ingress`). See declare.py for the notation.
IngressBackend's `resource` (a TypedLocalObjectReference) is not declared."""

from __future__ import annotations

from phalanx.kube.pb.declare import I32, STR, F, L, message
from phalanx.kube.pb.meta import OBJECT_META

API_VERSION = "networking.k8s.io/v1"
KINDS = frozenset({"Ingress"})

_BACKEND = "networking.IngressBackend"

MESSAGES = (
    message("networking.Ingress", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "networking.IngressSpec", "o"),
            F(3, "status", "networking.IngressStatus", "o")),
    message("networking.IngressSpec", F(4, "ingressClassName", STR, "op"),
            F(1, "defaultBackend", _BACKEND, "op"), L(2, "tls", "networking.IngressTLS", "o"),
            L(3, "rules", "networking.IngressRule", "o")),
    message("networking.IngressTLS", L(1, "hosts", STR, "o"), F(2, "secretName", STR, "o")),
    message("networking.IngressRule", F(1, "host", STR, "o"),
            F(2, "ingressRuleValue", "networking.IngressRuleValue", "i")),
    message("networking.IngressRuleValue", F(1, "http", "networking.HTTPIngressRuleValue", "op")),
    message("networking.HTTPIngressRuleValue", L(1, "paths", "networking.HTTPIngressPath")),
    message("networking.HTTPIngressPath", F(1, "path", STR, "o"), F(3, "pathType", STR, "p"),
            F(2, "backend", _BACKEND)),
    message(_BACKEND, F(4, "service", "networking.IngressServiceBackend", "op")),
    message("networking.IngressServiceBackend", F(1, "name", STR),
            F(2, "port", "networking.ServiceBackendPort", "o")),
    message("networking.ServiceBackendPort", F(1, "name", STR, "o"), F(2, "number", I32, "o")),
    message("networking.IngressStatus",
            F(1, "loadBalancer", "networking.IngressLoadBalancerStatus", "o")),
    message("networking.IngressLoadBalancerStatus",
            L(1, "ingress", "networking.IngressLoadBalancerIngress", "o")),
    message("networking.IngressLoadBalancerIngress", F(1, "ip", STR, "o"),
            F(2, "hostname", STR, "o"), L(4, "ports", "networking.IngressPortStatus", "o")),
    message("networking.IngressPortStatus", F(1, "port", I32), F(2, "protocol", STR),
            F(3, "error", STR, "op")),
)
