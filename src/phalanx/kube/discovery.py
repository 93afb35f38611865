"""Discovery as kube-apiserver serves it: ``/version``, ``/api``, ``/apis``, ``/api/v1``,
``/apis/GROUP/VERSION`` (legacy lists), and the aggregated form
(``apidiscovery.k8s.io/v2 APIGroupDiscoveryList``) kubectl 1.32 asks for first."""

from __future__ import annotations

import platform
from typing import Any

from phalanx.kube import kinds
from phalanx.kube.kinds import Kind

__all__ = [
    "AGGREGATED",
    "aggregated",
    "api_group_list",
    "api_versions",
    "resource_list",
    "version",
]

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""The media type of aggregated discovery (v2, GA since Kubernetes 1.30)."""

_STATUS_VERBS = ["get", "patch", "update"]
_SCALE = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def version() -> dict[str, Any]:
    """``/version``: which Kubernetes this API behaves as (1.32, kubectl's own minor)."""
    import phalanx

    return {
        "major": "1",
        "minor": "32",
        "gitVersion": f"v1.32.0-phalanx.{getattr(phalanx, '__version__', '0')}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": f"linux/{platform.machine()}",
    }


def api_versions() -> dict[str, Any]:
    """``/api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def _group(group: str, versions: list[str]) -> dict[str, Any]:
    # The preferred version comes first (kinds lists each kind's preferred version first).
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list() -> dict[str, Any]:
    """``/apis``."""
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, vs) for g, vs in kinds.groups() if g],
    }


def _served(group: str, version_: str) -> list[Kind]:
    return [k for k in kinds.KINDS if k.group == group and version_ in k.versions]


def resource_list(group: str, version_: str) -> dict[str, Any] | None:
    """``/api/v1`` or ``/apis/GROUP/VERSION``: an APIResourceList (None: not served)."""
    served = _served(group, version_)
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for k in served:
        entry: dict[str, Any] = {
            "name": k.plural,
            "singularName": k.singular,
            "namespaced": k.namespaced,
            "kind": k.kind,
            "verbs": list(k.verbs),
        }
        if k.short_names:
            entry["shortNames"] = list(k.short_names)
        if k.categories:
            entry["categories"] = list(k.categories)
        resources.append(entry)
        for sub in k.subresources:
            resources.append(
                {
                    "name": f"{k.plural}/{sub}",
                    "singularName": "",
                    "namespaced": k.namespaced,
                    "kind": "Scale" if sub == "scale" else k.kind,
                    "verbs": _STATUS_VERBS,
                    **({"group": "autoscaling", "version": "v1"} if sub == "scale" else {}),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version_}" if group else version_,
        "resources": resources,
    }


def _discovered(k: Kind, version_: str) -> dict[str, Any]:
    kind_ref = {"group": k.group, "version": version_, "kind": k.kind}
    entry: dict[str, Any] = {
        "resource": k.plural,
        "responseKind": kind_ref,
        "scope": "Namespaced" if k.namespaced else "Cluster",
        "singularResource": k.singular,
        "verbs": list(k.verbs),
    }
    if k.short_names:
        entry["shortNames"] = list(k.short_names)
    if k.categories:
        entry["categories"] = list(k.categories)
    if k.subresources:
        entry["subresources"] = [
            {
                "subresource": s,
                "responseKind": _SCALE if s == "scale" else kind_ref,
                "verbs": _STATUS_VERBS,
            }
            for s in k.subresources
        ]
    return entry


def aggregated(core: bool) -> dict[str, Any]:
    """The APIGroupDiscoveryList of ``/api`` (``core``) or of ``/apis``."""
    items = []
    for group, versions in kinds.groups():
        if (group == "") != core:
            continue
        items.append(
            {
                "metadata": {"name": group} if group else {},
                "versions": [
                    {
                        "version": v,
                        "resources": [_discovered(k, v) for k in _served(group, v)],
                        "freshness": "Current",
                    }
                    for v in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
