"""core/v1's messages: Namespace, ConfigMap, Secret, Service, ServiceAccount, ResourceQuota,
Pod with the PodSpec and Container fields generators and simple manifests use, and Event.
See declare.py for the notation."""

from __future__ import annotations

from phalanx.kube.pb.declare import BOOL, BYTES, I32, STR, F, L, M, message
from phalanx.kube.pb.meta import INT_OR_STRING, MICRO_TIME, OBJECT_META, QUANTITY, TIME

API_VERSION = "v1"
KINDS = frozenset({"Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount",
                   "ResourceQuota", "Pod", "Event"})

_REF = "core.LocalObjectReference"

MESSAGES = (
    message("core.Namespace", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "core.NamespaceSpec", "o"), F(3, "status", "core.NamespaceStatus", "o")),
    message("core.NamespaceSpec", L(1, "finalizers", STR, "o")),
    message("core.NamespaceStatus", F(1, "phase", STR, "o"),
            L(2, "conditions", "core.NamespaceCondition", "o")),
    message("core.NamespaceCondition", F(1, "type", STR), F(2, "status", STR),
            F(4, "lastTransitionTime", TIME, "o"), F(5, "reason", STR, "o"),
            F(6, "message", STR, "o")),
    message("core.ConfigMap", F(1, "metadata", OBJECT_META, "o"), F(4, "immutable", BOOL, "op"),
            M(2, "data", STR, "o"), M(3, "binaryData", BYTES, "o")),
    message("core.Secret", F(1, "metadata", OBJECT_META, "o"), F(5, "immutable", BOOL, "op"),
            M(2, "data", BYTES, "o"), M(4, "stringData", STR, "o"), F(3, "type", STR, "o")),
    message("core.ServiceAccount", F(1, "metadata", OBJECT_META, "o"),
            L(2, "secrets", "core.ObjectReference", "o"), L(3, "imagePullSecrets", _REF, "o"),
            F(4, "automountServiceAccountToken", BOOL, "op")),
    message("core.ObjectReference", F(1, "kind", STR, "o"), F(2, "namespace", STR, "o"),
            F(3, "name", STR, "o"), F(4, "uid", STR, "o"), F(5, "apiVersion", STR, "o"),
            F(6, "resourceVersion", STR, "o"), F(7, "fieldPath", STR, "o")),
    message(_REF, F(1, "name", STR, "o")),
    # Service
    message("core.Service", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "core.ServiceSpec", "o"), F(3, "status", "core.ServiceStatus", "o")),
    message(
        "core.ServiceSpec",
        L(1, "ports", "core.ServicePort", "o"), M(2, "selector", STR, "o"),
        F(3, "clusterIP", STR, "o"), L(18, "clusterIPs", STR, "o"), F(4, "type", STR, "o"),
        L(5, "externalIPs", STR, "o"), F(7, "sessionAffinity", STR, "o"),
        F(8, "loadBalancerIP", STR, "o"), L(9, "loadBalancerSourceRanges", STR, "o"),
        F(10, "externalName", STR, "o"), F(11, "externalTrafficPolicy", STR, "o"),
        F(12, "healthCheckNodePort", I32, "o"), F(13, "publishNotReadyAddresses", BOOL, "o"),
        F(14, "sessionAffinityConfig", "core.SessionAffinityConfig", "op"),
        L(19, "ipFamilies", STR, "o"), F(17, "ipFamilyPolicy", STR, "op"),
        F(20, "allocateLoadBalancerNodePorts", BOOL, "op"),
        F(21, "loadBalancerClass", STR, "op"), F(22, "internalTrafficPolicy", STR, "op"),
        F(23, "trafficDistribution", STR, "op"),
    ),
    message("core.ServicePort", F(1, "name", STR, "o"), F(2, "protocol", STR, "o"),
            F(6, "appProtocol", STR, "op"), F(3, "port", I32),
            F(4, "targetPort", INT_OR_STRING, "o"), F(5, "nodePort", I32, "o")),
    message("core.SessionAffinityConfig", F(1, "clientIP", "core.ClientIPConfig", "op")),
    message("core.ClientIPConfig", F(1, "timeoutSeconds", I32, "op")),
    message("core.ServiceStatus", F(1, "loadBalancer", "core.LoadBalancerStatus", "o"),
            L(2, "conditions", "meta.Condition", "o")),
    message("core.LoadBalancerStatus", L(1, "ingress", "core.LoadBalancerIngress", "o")),
    message("core.LoadBalancerIngress", F(1, "ip", STR, "o"), F(2, "hostname", STR, "o"),
            F(3, "ipMode", STR, "op"), L(4, "ports", "core.PortStatus", "o")),
    message("core.PortStatus", F(1, "port", I32), F(2, "protocol", STR),
            F(3, "error", STR, "op")),
    # ResourceQuota
    message("core.ResourceQuota", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "core.ResourceQuotaSpec", "o"),
            F(3, "status", "core.ResourceQuotaStatus", "o")),
    message("core.ResourceQuotaSpec", M(1, "hard", QUANTITY, "o"), L(2, "scopes", STR, "o"),
            F(3, "scopeSelector", "core.ScopeSelector", "op")),
    message("core.ScopeSelector",
            L(1, "matchExpressions", "core.ScopedResourceSelectorRequirement", "o")),
    message("core.ScopedResourceSelectorRequirement", F(1, "scopeName", STR),
            F(2, "operator", STR), L(3, "values", STR, "o")),
    message("core.ResourceQuotaStatus", M(1, "hard", QUANTITY, "o"),
            M(2, "used", QUANTITY, "o")),
    # Event (the core/v1 kind kubectl and controllers write)
    message(
        "core.Event",
        F(1, "metadata", OBJECT_META), F(2, "involvedObject", "core.ObjectReference"),
        F(3, "reason", STR, "o"), F(4, "message", STR, "o"),
        F(5, "source", "core.EventSource", "o"), F(6, "firstTimestamp", TIME, "o"),
        F(7, "lastTimestamp", TIME, "o"), F(8, "count", I32, "o"), F(9, "type", STR, "o"),
        F(10, "eventTime", MICRO_TIME, "o"), F(11, "series", "core.EventSeries", "op"),
        F(12, "action", STR, "o"), F(13, "related", "core.ObjectReference", "op"),
        F(14, "reportingComponent", STR), F(15, "reportingInstance", STR),
    ),
    message("core.EventSource", F(1, "component", STR, "o"), F(2, "host", STR, "o")),
    message("core.EventSeries", F(1, "count", I32, "o"),
            F(2, "lastObservedTime", MICRO_TIME, "o")),
)
