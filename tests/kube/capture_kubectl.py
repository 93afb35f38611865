"""Records the request bodies real kubectl sends, as fixtures for test_protobuf.py.

    PYTHONPATH=src python tests/kube/capture_kubectl.py [NAME ...]

Runs each command of COMMANDS with /usr/bin/kubectl against a tiny HTTP server that answers
discovery (/api, /apis, /api/v1, /apis/G/V) and remembers what was created, and writes, per
command, tests/kube/fixtures/kubectl/NAME.json: the command, every request that carried a body
(method, path, Content-Type, the body: base64 for protobuf, text otherwise), and, for generator
commands, what `--dry-run=client -o json` prints for the same command (the JSON form the protobuf
body must decode to).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from phalanx.kube.protobuf import PROTOBUF, decode, encode

FIXTURES = Path(__file__).parent / "fixtures" / "kubectl"

# (group, version, resource, kind, namespaced, subresources)
RESOURCES = [
    ("", "v1", "namespaces", "Namespace", False, []),
    ("", "v1", "pods", "Pod", True, []),
    ("", "v1", "nodes", "Node", False, []),
    ("", "v1", "services", "Service", True, []),
    ("", "v1", "configmaps", "ConfigMap", True, []),
    ("", "v1", "secrets", "Secret", True, []),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, ["token"]),
    ("", "v1", "resourcequotas", "ResourceQuota", True, []),
    ("apps", "v1", "deployments", "Deployment", True, ["scale"]),
    ("batch", "v1", "jobs", "Job", True, []),
    ("batch", "v1", "cronjobs", "CronJob", True, []),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, []),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True, []),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, []),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, []),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, []),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", True, []),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, []),
    ("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, []),
    ("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, []),
]
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]

# name -> (kubectl arguments, whether `--dry-run=client -o json` prints the object it sends)
COMMANDS: dict[str, tuple[list[str], bool]] = {
    "create-namespace": (["create", "namespace", "x"], True),
    "create-job": (["create", "job", "j", "--image=busybox", "--", "echo", "hi"], True),
    "create-cronjob": (
        ["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
        True,
    ),
    "create-deployment": (
        ["create", "deployment", "d", "--image=nginx", "--replicas=2", "--port=80"], True
    ),
    "create-configmap": (
        ["create", "configmap", "cm", "--from-literal=a=b", "--from-literal=c=d"], True
    ),
    "create-secret-generic": (["create", "secret", "generic", "s", "--from-literal=k=v"], True),
    "create-secret-docker-registry": (
        ["create", "secret", "docker-registry", "reg", "--docker-server=r.example",
         "--docker-username=u", "--docker-password=p"],
        True,
    ),
    "create-priorityclass": (
        ["create", "priorityclass", "high", "--value=1000", "--description=urgent work",
         "--preemption-policy=Never"],
        True,
    ),
    "create-role": (["create", "role", "r", "--verb=get,list", "--resource=pods"], True),
    "create-rolebinding": (
        ["create", "rolebinding", "rb", "--role=r", "--user=alice", "--group=team"], True
    ),
    "create-clusterrole": (
        ["create", "clusterrole", "cr", "--verb=get", "--resource=nodes",
         "--non-resource-url=/healthz"],
        True,
    ),
    "create-clusterrolebinding": (
        ["create", "clusterrolebinding", "crb", "--clusterrole=cr",
         "--serviceaccount=default:sa"],
        True,
    ),
    "create-service-clusterip": (
        ["create", "service", "clusterip", "svc", "--tcp=80:8080"], True
    ),
    "create-service-nodeport": (
        ["create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080"], True
    ),
    "create-service-externalname": (
        ["create", "service", "externalname", "ext", "--external-name=db.example.com"], True
    ),
    "create-serviceaccount": (["create", "serviceaccount", "sa"], True),
    "create-quota": (["create", "quota", "q", "--hard=cpu=1,memory=1Gi,pods=2"], True),
    "create-poddisruptionbudget": (
        ["create", "poddisruptionbudget", "pdb", "--selector=app=x", "--min-available=50%"], True
    ),
    "create-ingress": (
        ["create", "ingress", "ing", "--rule=foo.example/bar*=svc:8080"], True
    ),
    "create-token": (["create", "token", "sa", "--duration=1h"], False),
    "run": (
        ["run", "p", "--image=busybox", "--restart=Never", "--labels=app=x",
         "--env=A=1", "--", "sleep", "1"],
        True,
    ),
    "expose": (["expose", "deployment", "d", "--port=80", "--target-port=8080"], True),
    "autoscale": (
        ["autoscale", "deployment", "d", "--min=1", "--max=3", "--cpu-percent=50"], True
    ),
    "label": (["label", "namespace", "x", "team=a"], False),
    "annotate": (["annotate", "namespace", "x", "note=hi"], False),
    "scale": (["scale", "deployment", "d", "--replicas=3"], False),
    "delete": (["delete", "namespace", "x"], False),
    "create-f": (["create", "-f", "{manifest}"], False),
    "apply": (["apply", "-f", "{manifest}"], False),
}
MANIFEST = {
    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": {"a": "b"}},
}


class Store:
    """What the server saw and holds; `respond`, if set, turns a created object into the one
    the server answers with (encoded as the request was: protobuf or JSON)."""

    def __init__(self, respond: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.replies: list[bytes] = []
        self.respond = respond
        self.lock = threading.Lock()


def _discovery(path: str, port: int) -> Any:
    groups: dict[str, list[str]] = {}
    for group, version, *_ in RESOURCES:
        if group and version not in groups.setdefault(group, []):
            groups[group].append(version)
    if path == "/version":
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.4", "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}]}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
             "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
            for g, vs in groups.items()]}
    for group, version in [("", "v1")] + [(g, v) for g, vs in groups.items() for v in vs]:
        gv = f"{group}/{version}" if group else version
        if path == ("/api/v1" if not group else f"/apis/{gv}"):
            resources = []
            for g, v, name, kind, namespaced, subs in RESOURCES:
                if (g, v) != (group, version):
                    continue
                resources.append({"name": name, "singularName": kind.lower(), "kind": kind,
                                  "namespaced": namespaced, "verbs": VERBS})
                resources += [{"name": f"{name}/{s}", "singularName": "", "namespaced": namespaced,
                               "kind": "TokenRequest" if s == "token" else "Scale",
                               "verbs": ["create", "get", "patch", "update"]} for s in subs]
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                    "resources": resources}
    return None


def _handler(store: Store, port_box: list[int]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _reply(self, code: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, code: int, obj: Any) -> None:
            self._reply(code, json.dumps(obj).encode())

        def _body(self) -> bytes:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if body:
                content_type = self.headers.get("Content-Type", "")
                with store.lock:
                    store.requests.append({
                        "method": self.command, "path": self.path, "contentType": content_type,
                        "body": base64.b64encode(body).decode() if content_type == PROTOBUF
                        else body.decode(),
                    })
            return body

        def _not_found(self) -> None:
            self._json(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                             "reason": "NotFound", "code": 404, "message": "not found"})

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            found = _discovery(path, port_box[0])
            if found is not None:
                self._json(200, found)
            elif path in store.objects:
                self._json(200, store.objects[path])
            elif path.endswith("/scale") and path[: -len("/scale")] in store.objects:
                obj = store.objects[path[: -len("/scale")]]
                self._json(200, {"kind": "Scale", "apiVersion": "autoscaling/v1",
                                 "metadata": obj["metadata"],
                                 "spec": {"replicas": obj["spec"].get("replicas", 1)}})
            elif path.startswith("/api"):
                self._not_found()
            else:
                self._not_found()

        def do_POST(self) -> None:
            body = self._body()
            content_type = self.headers.get("Content-Type", "")
            obj = decode(body) if content_type == PROTOBUF else json.loads(body)
            path = self.path.split("?")[0]
            if path.endswith("/token"):
                self._json(201, {**obj, "status": {"token": "t",
                                                   "expirationTimestamp": "2026-12-01T19:00:00Z"}})
                return
            store.objects[f"{path}/{obj['metadata']['name']}"] = obj
            if store.respond is not None:
                answer = store.respond(obj)
                body = encode(answer) if content_type == PROTOBUF else json.dumps(answer).encode()
                store.replies.append(body)
            self._reply(201, body, content_type)

        def do_PATCH(self) -> None:
            self._body()
            path = self.path.split("?")[0]
            obj = store.objects.get(path.removesuffix("/scale"))
            if obj is None:
                self._not_found()
            elif path.endswith("/scale"):
                self._json(200, {"kind": "Scale", "apiVersion": "autoscaling/v1",
                                 "metadata": obj["metadata"], "spec": {"replicas": 3}})
            else:
                self._json(200, obj)

        def do_PUT(self) -> None:
            self.do_PATCH()

        def do_DELETE(self) -> None:
            self._body()
            obj = store.objects.pop(self.path.split("?")[0], None)
            if obj is None:
                self._not_found()
            else:
                self._json(200, obj)

    return Handler


@contextmanager
def kubectl_against(store: Store, tmp: Path) -> Iterator[list[str]]:
    """Serves `store` on a free port; yields the kubectl command line that talks to it."""
    port_box = [0]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(store, port_box))
    port_box[0] = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp / "config"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port_box[0]}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u",
                                               "namespace": "default"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))
    try:
        yield ["/usr/bin/kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp}/cache"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(names: list[str]) -> None:
    store = Store()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, kubectl_against(store, Path(tmp)) as base:
        manifest = Path(tmp) / "manifest.json"
        manifest.write_text(json.dumps(MANIFEST))
        for name, (args, dry_run) in COMMANDS.items():
            if names and name not in names:
                continue
            command = ["kubectl", *args]
            args = [a.replace("{manifest}", str(manifest)) for a in args]
            split = args.index("--") if "--" in args else len(args)
            expected = None
            if dry_run:
                printed = subprocess.run(
                    [*base, *args[:split], "--dry-run=client", "-o", "json", *args[split:]],
                    capture_output=True, text=True)
                if printed.returncode != 0:
                    sys.exit(f"{name}: the dry run failed: {printed.stderr}")
                expected = json.loads(printed.stdout)
            store.requests.clear()
            # Client-side validation would fetch OpenAPI, which this server does not serve.
            validate = ["--validate=false"] if args[0] in ("create", "apply") and \
                args[1] != "token" else []
            ran = subprocess.run([*base, *validate, *args], capture_output=True, text=True)
            record = {"command": command, "exit": ran.returncode,
                      "stdout": ran.stdout, "stderr": ran.stderr,
                      "requests": list(store.requests), "dryRunJson": expected}
            if "{manifest}" in command:
                record["manifest"] = MANIFEST
            (FIXTURES / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
            kinds = [f"{r['method']} {r['path']} {r['contentType']}" for r in store.requests]
            print(f"{name}: exit {ran.returncode} {ran.stderr.strip()[:120]} {kinds}")


if __name__ == "__main__":
    main(sys.argv[1:])
