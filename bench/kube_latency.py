"""Kubernetes Job create -> pod Running latency on an idle cluster, through the API.

Starts ``phalanx up`` (one node: this machine, its agent, the Kubernetes API on a free port)
in a fresh state directory. Each sample, on the idle cluster: ``t0`` the client's clock; one
``POST /apis/batch/v1/namespaces/default/jobs`` of a Job of one pod (``sh -c 'sleep 30'``,
100m CPU) with the ``kubernetes`` PyPI client; a watch on the namespace's pods (opened before
the create, on its own connection) sees the pod's phase turn Running: ``t1``. Then the Job is
deleted (Background) and the pod's engine job cancelled, and the next sample waits until no
pod is left. Printed in ms over ``--samples`` (30): min / p50 / p95 / max of ``t1 - t0``.
Target (issue 12): p50 <= 50 ms. Exits 0 either way, printing PASS or FAIL.

    .venv/bin/python bench/kube_latency.py [--samples N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TARGET_P50_MS = 50.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--dir", default=None, help="where the state directory goes")
    args = parser.parse_args()
    from kubernetes import client, config, watch

    state = Path(tempfile.mkdtemp(prefix="phalanx-kube-bench-", dir=args.dir))
    env = {**os.environ, "PHALANX_STATE_DIR": str(state)}
    phalanx = [sys.executable, "-m", "phalanx"]
    stopping = threading.Event()
    subprocess.run(
        [*phalanx, "up", "--port", "0", "--kube-port", "0", "--detach"],
        env=env,
        check=True,
        capture_output=True,
    )
    try:
        kubeconfig = state / "kubeconfig"
        kubeconfig.write_text(
            subprocess.run(
                [*phalanx, "kubeconfig"], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        config.load_kube_config(str(kubeconfig))  # type: ignore[no-untyped-call]
        batch, core = client.BatchV1Api(), client.CoreV1Api()
        running: dict[str, float] = {}
        seen = threading.Event()

        def watch_pods() -> None:
            try:
                for event in watch.Watch().stream(  # type: ignore[no-untyped-call]
                    core.list_namespaced_pod, "default", _request_timeout=600
                ):
                    pod: Any = event["object"]
                    job = (pod.metadata.labels or {}).get("job-name")
                    if job and pod.status and pod.status.phase == "Running" and job not in running:
                        running[job] = time.perf_counter()
                        seen.set()
            except Exception:  # the cluster stopping ends the watch: done
                if not stopping.is_set():
                    raise

        threading.Thread(target=watch_pods, daemon=True).start()
        time.sleep(0.5)
        samples: list[float] = []
        created: list[float] = []
        for i in range(args.samples):
            name = f"lat-{i}"
            body: dict[str, Any] = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox",
                                    "command": ["sh", "-c", "sleep 30"],
                                    "resources": {"requests": {"cpu": "100m"}},
                                }
                            ],
                        }
                    }
                },
            }
            seen.clear()
            t0 = time.perf_counter()
            batch.create_namespaced_job("default", body)  # type: ignore[arg-type]
            created.append((time.perf_counter() - t0) * 1000)
            deadline = time.monotonic() + 30
            while name not in running and time.monotonic() < deadline:
                seen.wait(0.5)
                seen.clear()
            if name not in running:
                print(f"sample {i}: no Running pod after 30 s", file=sys.stderr)
                break
            samples.append((running[name] - t0) * 1000)
            batch.delete_namespaced_job(name, "default", propagation_policy="Background")
            while core.list_namespaced_pod("default").items:
                time.sleep(0.05)
            time.sleep(0.2)
        if not samples:
            print("FAIL: no samples")
            return 0
        p50 = _percentile(samples, 0.5)
        print(
            f"Job create -> pod Running (ms, {len(samples)} samples): "
            f"min {min(samples):.1f} / p50 {p50:.1f} / p95 {_percentile(samples, 0.95):.1f} "
            f"/ max {max(samples):.1f}"
        )
        print(f"  of which the create's round trip: p50 {_percentile(created, 0.5):.1f} ms")
        print(("PASS" if p50 <= TARGET_P50_MS else "FAIL") + f": p50 target {TARGET_P50_MS} ms")
    finally:
        stopping.set()
        subprocess.run([*phalanx, "down"], env=env, capture_output=True, check=False)
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
