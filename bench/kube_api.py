"""The Kubernetes API's speed on a running controller: Job creations per second from one
client (the ``kubernetes`` Python client's REST layer, one HTTPS connection kept alive), and
``kubectl get pods -A`` over many pods.

Usage: ``python bench/kube_api.py --kubeconfig FILE [--jobs 2000] [--pods 10000]``
(``phalanx up`` then ``phalanx kubeconfig > FILE``). It creates objects in a namespace of its
own (``bench-<pid>``) and deletes it at the end.

Targets (issue 12): >= 1,000 Job creations/s; ``kubectl get pods -A`` with 10,000 pods <= 1 s.
The last line: ``creations N/s; kubectl get pods -A (P pods) S s``.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import ssl
import subprocess
import tempfile
import time

import httpx
import yaml


def _client(kubeconfig: str) -> httpx.Client:
    with open(kubeconfig) as f:
        cfg = yaml.safe_load(f)
    cluster = cfg["clusters"][0]["cluster"]
    token = cfg["users"][0]["user"]["token"]
    with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as ca:
        ca.write(base64.b64decode(cluster["certificate-authority-data"]))
    context = ssl.create_default_context(cafile=ca.name)
    os.unlink(ca.name)
    return httpx.Client(
        base_url=cluster["server"],
        verify=context,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    http = _client(args.kubeconfig)
    ns = f"bench-{os.getpid()}"
    http.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).raise_for_status()
    try:
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"generateName": "bench-"},
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}
                }
            },
        }
        start = time.perf_counter()
        for _ in range(args.jobs):
            http.post(f"/apis/batch/v1/namespaces/{ns}/jobs", json=job).raise_for_status()
        rate = args.jobs / (time.perf_counter() - start)
        print(f"created {args.jobs} Jobs at {rate:,.0f}/s")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": "p-"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        for _ in range(args.pods):
            http.post(f"/api/v1/namespaces/{ns}/pods", json=pod).raise_for_status()
        kubectl = shutil.which("kubectl")
        took = float("nan")
        if kubectl:
            env = dict(os.environ, KUBECONFIG=args.kubeconfig)
            subprocess.run([kubectl, "get", "ns"], env=env, capture_output=True, check=True)
            start = time.perf_counter()
            out = subprocess.run(
                [kubectl, "get", "pods", "-A"], env=env, capture_output=True, check=True, text=True
            )
            took = time.perf_counter() - start
            assert len(out.stdout.splitlines()) >= args.pods
        print(f"creations {rate:,.0f}/s; kubectl get pods -A ({args.pods} pods) {took:.2f} s")
    finally:
        http.delete(f"/api/v1/namespaces/{ns}")


if __name__ == "__main__":
    main()
