"""Build the OpenAPI data files of ``phalanx.kube.openapi`` from upstream sources.

Run by hand, never at run time::

    python -m phalanx.kube.openapi.vendor --mirrors /work/.mirror \\
        --out src/phalanx/kube/openapi/data

``--mirrors`` holds bare git copies of the upstream repositories (``owner+name/repo``). Nothing
is invented: the built-in group-versions are Kubernetes' own ``api/openapi-spec/v3`` documents
(release-1.32) trimmed to the kinds Phalanx serves and the schemas they reference; the custom
kinds are their CRDs' ``openAPIV3Schema``, wrapped the way kube-apiserver's CRD OpenAPI builder
wraps them (schema named by reversed group, ``metadata`` as ObjectMeta, the paths of the CRD's
REST endpoints with the same operations and query parameters as a built-in kind). Every source
is pinned to a commit, recorded in ``data/README.md`` and ``data/index.json``.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Json = Any

# kubernetes/kubernetes api/openapi-spec/v3 at release-1.32, as kubectl-validate copied it.
_BUILTIN_REPO = "kubernetes-sigs+kubectl-validate"
_BUILTIN_REF = "231e3efa7409321bb60dc20ef766be3fc59a9759"
_BUILTIN_DIR = "pkg/openapiclient/builtins/1.32"

# group-version path -> the kinds of it Phalanx serves.
BUILTIN_KINDS: dict[str, tuple[str, ...]] = {
    "api/v1": ("Namespace", "Pod", "Event", "Service", "ConfigMap"),
    "apis/batch/v1": ("Job",),
    "apis/apps/v1": ("Deployment", "ReplicaSet"),
    "apis/autoscaling/v2": ("HorizontalPodAutoscaler",),
    "apis/scheduling.k8s.io/v1": ("PriorityClass",),
    "apis/rbac.authorization.k8s.io/v1": (
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
    ),
}

# Meta types every document carries (kube-apiserver's documents carry them too).
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_ALWAYS = tuple(
    _META + n
    for n in ("ObjectMeta", "ListMeta", "Status", "DeleteOptions", "Patch", "APIResourceList")
)


@dataclass(frozen=True)
class CrdSource:
    """One CRD file: repository mirror, commit or tag, path, and the versions to serve."""

    repo: str
    ref: str
    path: str
    versions: tuple[str, ...]


CRDS: tuple[CrdSource, ...] = (
    CrdSource(
        "kubeflow+training-operator",
        "v1.9.0",
        "manifests/base/crds/kubeflow.org_pytorchjobs.yaml",
        ("v1",),
    ),
    CrdSource(
        "volcano-sh+volcano",
        "ed72c7c815a9fd547a787134676f73d42e9d049c",
        "config/crd/volcano/bases/batch.volcano.sh_jobs.yaml",
        ("v1alpha1",),
    ),
    CrdSource(
        "volcano-sh+volcano",
        "ed72c7c815a9fd547a787134676f73d42e9d049c",
        "config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml",
        ("v1beta1",),
    ),
    CrdSource(
        "kubernetes-sigs+jobset",
        "08dfbdfd682714a9ab929633eca8dc95315187e7",
        "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
        ("v1alpha2",),
    ),
    *(
        CrdSource(
            "kubernetes-sigs+kueue",
            "ff69552e79ad21652c36caa97038382e55625cf7",
            f"config/components/crd/bases/kueue.x-k8s.io_{plural}.yaml",
            ("v1beta1", "v1beta2"),
        )
        for plural in (
            "resourceflavors",
            "clusterqueues",
            "localqueues",
            "workloadpriorityclasses",
            "workloads",
            "cohorts",
        )
    ),
    # Cohort was v1alpha1 until Kueue v0.13; the last v0.12 release still serves it.
    CrdSource(
        "kubernetes-sigs+kueue",
        "v0.12.10",
        "config/components/crd/bases/kueue.x-k8s.io_cohorts.yaml",
        ("v1alpha1",),
    ),
)


def _git(mirrors: Path, repo: str, *args: str) -> str:
    out = subprocess.run(
        ["git", "--git-dir", str(mirrors / repo / "repo"), *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def _refs(node: Json, into: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            into.add(ref.rsplit("/", 1)[1])
        for v in node.values():
            _refs(v, into)
    elif isinstance(node, list):
        for v in node:
            _refs(v, into)


def _closure(schemas: dict[str, Json], roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(schemas[name], found)
        todo.extend(found - seen)
    return seen


def _gvk_of(op: Json) -> tuple[str, str, str] | None:
    g = op.get("x-kubernetes-group-version-kind") if isinstance(op, dict) else None
    return (g["group"], g["version"], g["kind"]) if g else None


def trim_builtin(doc: Json, kinds: tuple[str, ...]) -> Json:
    """Keep the paths whose operations act on ``kinds`` (and the group-version's root), and the
    schemas those paths and kinds reach. Nothing else of the document changes."""
    schemas = doc["components"]["schemas"]
    paths: dict[str, Json] = {}
    for p, item in doc["paths"].items():
        ops = [v for k, v in item.items() if k != "parameters"]
        gvks = [g for g in map(_gvk_of, ops) if g]
        if p.endswith("/") or any(g[2] in kinds for g in gvks):
            paths[p] = item
    roots: set[str] = set(_ALWAYS)
    _refs(paths, roots)
    for name, s in schemas.items():
        for g in s.get("x-kubernetes-group-version-kind", []):
            if g["kind"] in kinds or g["kind"] in {k + "List" for k in kinds}:
                roots.add(name)
    keep = _closure(schemas, roots)
    out = copy.deepcopy(doc)
    out["paths"] = paths
    out["components"]["schemas"] = {k: schemas[k] for k in sorted(keep)}
    return out


def _resource_of(doc: Json, kind: str) -> dict[str, Any]:
    """The plural resource name and scope of a kind, read off its create (``post``) path."""
    for p, item in sorted(doc["paths"].items()):
        op = item.get("post")
        if op and _gvk_of(op) and _gvk_of(op)[2] == kind:  # type: ignore[index]
            return {"plural": p.rsplit("/", 1)[1], "namespaced": "{namespace}" in p}
    raise ValueError(f"no create path for {kind}")


def _reverse_group(group: str) -> str:
    return ".".join(reversed(group.split(".")))


def _rewrite(node: Json, subst: list[tuple[str, str]]) -> Json:
    if isinstance(node, dict):
        return {k: _rewrite(v, subst) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite(v, subst) for v in node]
    if isinstance(node, str):
        # One pass, longest match first: a replacement is never rewritten again (the new kind
        # "JobSet" holds the old "Job").
        table = dict(subst)
        pattern = "|".join(re.escape(a) for a in sorted(table, key=len, reverse=True))
        return re.sub(pattern, lambda m: table[m.group(0)], node)
    return node


def crd_paths(
    template: Json,
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    status: bool,
    schema: str,
) -> dict[str, Json]:
    """The REST paths of one CRD kind, made from batch/v1 Job's paths by substitution.

    kube-apiserver builds CRD paths from the same operation shapes (and the same query
    parameters: dryRun, fieldManager, fieldValidation, force) as built-in kinds; starting from a
    built-in kind's paths keeps them identical rather than retyped."""
    subst = [
        ("io.k8s.api.batch.v1.JobList", schema + "List"),
        ("io.k8s.api.batch.v1.Job", schema),
        ("/apis/batch/v1", f"/apis/{group}/{version}"),
        ("/jobs", "/" + plural),
        ("BatchV1", ""),
        ("batch_v1", f"{group}_{version}".replace(".", "_")),
        ("Job", kind),
    ]
    out: dict[str, Json] = {}
    for p, item in template.items():
        if "/watch/" in p or ("{name}/" in p and not p.endswith("/status")):
            continue
        if p.endswith("/status") and not status:
            continue
        new = _rewrite(item, subst)
        for op in new.values():
            if isinstance(op, dict) and "x-kubernetes-group-version-kind" in op:
                op["x-kubernetes-group-version-kind"] = {
                    "group": group,
                    "kind": kind,
                    "version": version,
                }
        np = _rewrite(p, subst)
        if not namespaced:
            if "/namespaces/{namespace}" not in np:
                continue  # the all-namespaces list: a cluster kind's own list path says it
            np = np.replace("/namespaces/{namespace}", "")
            for part in [new, *[v for v in new.values() if isinstance(v, dict)]]:
                if "parameters" in part:
                    part["parameters"] = [
                        x for x in part["parameters"] if x.get("name") != "namespace"
                    ]
            new = _rewrite(new, [("Namespaced", "")])
        out[np] = new
    return out


def crd_schema(raw: Json, group: str, version: str, kind: str) -> Json:
    """The CRD's schema as kube-apiserver publishes it: ObjectMeta for ``metadata``, the GVK."""
    s = copy.deepcopy(raw)
    props = s.setdefault("properties", {})
    props["metadata"] = {
        "allOf": [{"$ref": "#/components/schemas/" + _META + "ObjectMeta"}],
        "description": props.get("metadata", {}).get("description", ""),
    }
    s["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return s


def crd_list_schema(group: str, version: str, kind: str, schema: str) -> Json:
    return {
        "description": f"{kind}List is a list of {kind}",
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {"items": {"$ref": "#/components/schemas/" + schema}, "type": "array"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": "#/components/schemas/" + _META + "ListMeta"}]},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": group, "kind": kind + "List", "version": version}
        ],
    }


def _write(out: Path, gv: str, doc: Json) -> tuple[str, str, int]:
    body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    name = gv.replace("/", "__") + ".json.gz"
    (out / name).write_bytes(gzip.compress(body, mtime=0))
    # kube-apiserver's index hash: the upper-case hex SHA-512 of the document it serves.
    return name, hashlib.sha512(body).hexdigest().upper(), len(body)


def build(mirrors: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Json] = {"groupVersions": {}, "sources": []}
    kinds: list[Json] = []
    batch = None
    for gv, names in BUILTIN_KINDS.items():
        raw = json.loads(
            _git(mirrors, _BUILTIN_REPO, "show", f"{_BUILTIN_REF}:{_BUILTIN_DIR}/{gv}.json")
        )
        if gv == "apis/batch/v1":
            batch = raw
        doc = trim_builtin(raw, names)
        file, digest, size = _write(out, gv, doc)
        index["groupVersions"][gv] = {
            "file": file,
            "hash": digest,
            "bytes": size,
            "origin": "builtin",
        }
        for name, s in doc["components"]["schemas"].items():
            for g in s.get("x-kubernetes-group-version-kind", []):
                if g["kind"] in names and g["version"] == gv.rsplit("/", 1)[1]:
                    kinds.append(
                        {
                            "group": g["group"],
                            "version": g["version"],
                            "kind": g["kind"],
                            "schema": name,
                            "groupVersion": gv,
                            "origin": "builtin",
                            **_resource_of(doc, g["kind"]),
                        }
                    )
    index["sources"].append(
        {
            "what": "built-in group-versions " + ", ".join(BUILTIN_KINDS),
            "repo": "kubernetes/kubernetes",
            "path": "api/openapi-spec/v3/*.json",
            "ref": "release-1.32 (Kubernetes 1.32.0, December 2024)",
            "via": f"kubernetes-sigs/kubectl-validate {_BUILTIN_REF} {_BUILTIN_DIR}/",
        }
    )
    assert batch is not None
    job_paths = {p: v for p, v in batch["paths"].items() if "/jobs" in p}
    meta = {
        k: v
        for k, v in batch["components"]["schemas"].items()
        if k in _closure(batch["components"]["schemas"], set(_ALWAYS))
    }
    crd_docs: dict[str, Json] = {}
    for src in CRDS:
        commit = _git(mirrors, src.repo, "rev-parse", src.ref + "^{commit}").strip()
        crd = yaml.safe_load(_git(mirrors, src.repo, "show", f"{commit}:{src.path}"))
        spec = crd["spec"]
        group, kind, plural = spec["group"], spec["names"]["kind"], spec["names"]["plural"]
        namespaced = spec["scope"] == "Namespaced"
        index["sources"].append(
            {
                "what": f"{group} {kind} {'/'.join(src.versions)}",
                "repo": src.repo.replace("+", "/"),
                "path": src.path,
                "ref": f"{commit} ({src.ref})",
            }
        )
        for v in spec["versions"]:
            version = v["name"]
            if version not in src.versions:
                continue
            gv = f"apis/{group}/{version}"
            doc = crd_docs.setdefault(
                gv,
                {
                    "components": {"schemas": copy.deepcopy(meta)},
                    "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                    "openapi": "3.0.0",
                    "paths": {
                        f"/apis/{group}/{version}/": copy.deepcopy(
                            batch["paths"]["/apis/batch/v1/"]
                        )
                    },
                },
            )
            doc["paths"][f"/apis/{group}/{version}/"] = _rewrite(
                doc["paths"][f"/apis/{group}/{version}/"],
                [
                    ("/apis/batch/v1/", f"/apis/{group}/{version}/"),
                    ("BatchV1", ""),
                    ("batch_v1", f"{group}_{version}".replace(".", "_")),
                ],
            )
            schema = f"{_reverse_group(group)}.{version}.{kind}"
            doc["components"]["schemas"][schema] = crd_schema(
                v["schema"]["openAPIV3Schema"], group, version, kind
            )
            doc["components"]["schemas"][schema + "List"] = crd_list_schema(
                group, version, kind, schema
            )
            doc["paths"].update(
                crd_paths(
                    job_paths,
                    group,
                    version,
                    kind,
                    plural,
                    namespaced,
                    "status" in v.get("subresources", {}),
                    schema,
                )
            )
            kinds.append(
                {
                    "group": group,
                    "version": version,
                    "kind": kind,
                    "schema": schema,
                    "groupVersion": gv,
                    "origin": "crd",
                    "plural": plural,
                    "namespaced": namespaced,
                }
            )
    for gv, doc in sorted(crd_docs.items()):
        file, digest, size = _write(out, gv, doc)
        index["groupVersions"][gv] = {"file": file, "hash": digest, "bytes": size, "origin": "crd"}
    index["kinds"] = sorted(kinds, key=lambda k: (k["group"], k["version"], k["kind"]))
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    _readme(out, index)


def _readme(out: Path, index: Json) -> None:
    lines = [
        "# OpenAPI documents served by phalanx.kube.openapi",
        "",
        "Generated by `python -m phalanx.kube.openapi.vendor` (see its docstring); do not edit.",
        "One gzip'd OpenAPI v3 document per group-version; `index.json` lists them with the",
        "SHA-512 of each uncompressed document (the `?hash=` of `/openapi/v3`) and the kinds.",
        "",
        "| what | repository | path | commit |",
        "|---|---|---|---|",
    ]
    for s in index["sources"]:
        via = f" (copied in {s['via']})" if "via" in s else ""
        lines.append(f"| {s['what']} | {s['repo']} | `{s['path']}` | {s['ref']}{via} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    build(args.mirrors, args.out)


if __name__ == "__main__":
    main()
