"""Autoscaling on loopback, end to end: ``phalanx up`` with this machine's agents and the
service router, real kubectl, real processes (``phalanx.testing.serving``).

``hpa`` (default): a Deployment of small HTTP model servers (each request burns
``--burn-ms`` of CPU and waits ``--work-ms`` more), a Service, and a HorizontalPodAutoscaler
on the router's ``requests_in_flight`` of the Service (an Object metric, ``AverageValue``
``--per-pod``). A closed-loop load generator with a bounded number of clients runs at 1x
(``--clients``), steps to 10x, then back to 1x. Printed: per phase (1x, 10x, back to 1x),
p50/p99 latency through the router and the replicas over time; seconds from the step to the
scale-out decision, to the first new replica ready and to all the replicas 10x needs ready,
and from the drop back to 1x to the scale-in decision; then PASS/FAIL lines against the
targets (scale-out decided <= 30 s after the step, as Kubernetes' HPA reacts in 15-30 s;
scale-in not before the stabilization window and within it plus two sync periods; no failed
request). It exits 0 either way. The scale-down stabilization window is the HPA manifest's
``behavior.scaleDown.stabilizationWindowSeconds`` (``--window``: 30 s here so that a run
takes about 3 minutes; Kubernetes' default is 300 s).

``isvc``: an InferenceService with ``minReplicas: 0`` left idle until Knative's autoscaler
scales it to zero (a stable window of 60 s, then the 30 s grace), then one request: printed,
the seconds to scale to zero and the first request's latency (held by the router while the
first replica starts); PASS when it is answered (200) and only once a replica is ready.

Replicas share the host's network: the server binds its port with SO_REUSEPORT, so the
kernel spreads the router's connections over however many replicas run.

    python bench/autoscale_step.py hpa [--window 30]
    python bench/autoscale_step.py isvc
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from phalanx.testing.serving import (
    MODEL_SERVER,
    Load,
    ServingStack,
    deployment_yaml,
    free_port,
    percentile,
)

SCALE_OUT_TARGET_S = 30.0


def hpa(per_pod: int, window: int) -> str:
    return json.dumps(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 20,
                "metrics": [
                    {
                        "type": "Object",
                        "object": {
                            "describedObject": {
                                "apiVersion": "v1",
                                "kind": "Service",
                                "name": "web",
                            },
                            "metric": {"name": "requests_in_flight"},
                            "target": {"type": "AverageValue", "averageValue": str(per_pod)},
                        },
                    }
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": window}},
            },
        }
    )


SYNC_S = 15.0
"""kube-controller-manager's --horizontal-pod-autoscaler-sync-period (phalanx up's default)."""


@dataclass
class Timeline:
    """The Deployment's (spec.replicas, readyReplicas) every second, on a thread."""

    stack: ServingStack
    name: str
    points: list[tuple[float, int, int]] = field(default_factory=list)
    stopped: bool = False

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stopped:
            want, ready = self.stack.replicas(self.name)
            self.points.append((time.monotonic(), want, ready))
            time.sleep(1)

    def first(self, after: float, test: object) -> float | None:
        """The first sample time at or after ``after`` where ``test(spec, ready)``."""
        assert callable(test)
        for at, want, ready in list(self.points):
            if at >= after and test(want, ready):
                return at
        return None

    def changes(self, origin: float) -> str:
        out, last = [], None
        for at, want, ready in list(self.points):
            if (want, ready) != last:
                out.append(f"{at - origin:+.0f}s {want}/{ready}")
                last = (want, ready)
        return ", ".join(out)


def phase(name: str, load: Load, start: float, end: float) -> None:
    got = load.between(start, end)
    ok = [s.latency * 1000 for s in got if s.ok]
    failed = len(got) - len(ok)
    span = max(end - start, 1e-9)
    print(
        f"  {name:<22} {end - start:6.1f}s {len(got) / span:7.1f} req/s  "
        f"p50 {percentile(ok, 50):8.1f} ms  p99 {percentile(ok, 99):8.1f} ms  failed {failed}",
        flush=True,
    )


def verdict(ok: bool, what: str) -> None:
    print(f"{'PASS' if ok else 'FAIL'}  {what}", flush=True)


def seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def run_hpa(stack: ServingStack, args: argparse.Namespace) -> None:
    script = stack.root / "server.py"
    script.write_text(MODEL_SERVER)
    slots = args.per_pod
    manifests = deployment_yaml(
        "web", script, free_port(), work_ms=args.work_ms, burn_ms=args.burn_ms, slots=slots
    )
    stack.apply(manifests)
    stack.apply(hpa(args.per_pod, args.window))
    load = Load(f"http://{stack.cluster_ip('web')}/", timeout=60)
    while stack.replicas("web")[1] < 1:
        time.sleep(0.5)
    target = math.ceil(10 * args.clients / args.per_pod)
    print(
        f"1x = {args.clients} clients, 10x = {10 * args.clients}; each request "
        f"{args.burn_ms} ms CPU + {args.work_ms} ms wait, {slots} at a time per replica; "
        f"HPA on requests_in_flight at {args.per_pod} per pod: 10x needs {target} replicas; "
        f"scale-down window {args.window} s, sync every {SYNC_S:.0f} s",
        flush=True,
    )
    timeline = Timeline(stack, "web")
    timeline.start()
    began = time.monotonic()
    load.set(args.clients)
    time.sleep(args.settle)
    before = stack.replicas("web")[0]
    step = time.monotonic()
    load.set(10 * args.clients)
    print(f"t=0: 1x -> 10x ({before} replica(s))", flush=True)
    while time.monotonic() - step < 120:
        if timeline.first(step, lambda w, r: r >= target) is not None:
            break
        time.sleep(1)
    time.sleep(args.hold)
    drop = time.monotonic()
    load.set(args.clients)
    print(f"t={drop - step:.0f}s: 10x -> 1x", flush=True)
    deadline = drop + args.window + 4 * SYNC_S + 30
    while time.monotonic() < deadline:
        if timeline.first(drop, lambda w, r: w <= before) is not None:
            break
        time.sleep(1)
    time.sleep(args.tail)
    end = time.monotonic()
    load.stop()
    timeline.stopped = True

    decided = timeline.first(step, lambda w, r: w > before)
    first_ready = timeline.first(step, lambda w, r: r > before)
    all_ready = timeline.first(step, lambda w, r: r >= target)
    scaled_in = timeline.first(drop, lambda w, r: w <= before)
    since_step = {
        k: None if v is None else v - step
        for k, v in {"decided": decided, "first": first_ready, "all": all_ready}.items()
    }
    after_drop = None if scaled_in is None else scaled_in - drop
    print("latency through the router, by phase (requests sent in it):")
    phase("1x", load, began, step)
    phase("10x (all of it)", load, step, drop)
    if all_ready is not None:
        phase(f"10x with {target} ready", load, all_ready, drop)
    phase("back to 1x", load, drop, scaled_in or end)
    if scaled_in is not None:
        phase("1x after scale-in", load, scaled_in, end)
    print(f"replicas over time (spec/ready, from the step): {timeline.changes(step)}")
    print(
        f"step -> scale-out decision {seconds(since_step['decided'])}, first new replica "
        f"ready {seconds(since_step['first'])}, {target} replicas ready "
        f"{seconds(since_step['all'])}; drop -> scale-in decision {seconds(after_drop)} "
        f"(window {args.window} s)"
    )
    verdict(
        since_step["decided"] is not None and since_step["decided"] <= SCALE_OUT_TARGET_S,
        f"scale-out decided within {SCALE_OUT_TARGET_S:.0f} s of the 1x -> 10x step "
        f"({seconds(since_step['decided'])})",
    )
    verdict(
        since_step["all"] is not None,
        f"the {target} replicas 10x needs ready ({seconds(since_step['all'])} after the step)",
    )
    verdict(
        after_drop is not None and args.window - SYNC_S <= after_drop <= args.window + 3 * SYNC_S,
        f"scale-in after the {args.window} s stabilization window, within three syncs of it "
        f"({seconds(after_drop)} after the drop)",
    )
    verdict(load.errors == 0, f"no failed request ({load.errors} of {len(load.samples)})")


def run_isvc(stack: ServingStack, args: argparse.Namespace) -> None:
    script = stack.root / "server.py"
    script.write_text(MODEL_SERVER)
    port = free_port()
    argv = [str(script), str(port), str(args.work_ms), str(args.burn_ms), "0"]
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "echo"},
        "spec": {
            "predictor": {
                "minReplicas": 0,
                "containers": [
                    {
                        "name": "kserve-container",
                        "image": "python:3.11",
                        "command": [sys.executable, *argv],
                        "ports": [{"containerPort": port}],
                    }
                ],
            }
        },
    }
    stack.apply(json.dumps(isvc))
    start = time.monotonic()
    while stack.replicas("echo-predictor") != (0, 0):
        if time.monotonic() - start > 300:
            raise SystemExit("not scaled to zero in 300 s")
        time.sleep(1)
    zero = time.monotonic() - start
    print(f"scaled to zero {zero:.1f}s after creation (idle)", flush=True)
    time.sleep(5)
    url = f"http://{stack.cluster_ip('echo-predictor')}/"
    sent = time.monotonic()
    with urllib.request.urlopen(url, timeout=120) as r:
        r.read()
        status = r.status
    took = time.monotonic() - sent
    ready = stack.replicas("echo-predictor")[1]
    print(f"first request after idling answered in {took:.2f}s (status {status})")
    print(stack.kubectl("get", "isvc"))
    verdict(
        status == 200 and ready >= 1,
        f"the first request after scale to zero answered once a replica was ready ({took:.2f} s)",
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("hpa", "isvc"), nargs="?", default="hpa")
    p.add_argument("--agents", type=int, default=1)
    p.add_argument("--clients", type=int, default=2, help="1x: concurrent clients")
    p.add_argument("--per-pod", type=int, default=2, help="requests in flight per replica")
    p.add_argument("--work-ms", type=int, default=200, help="each request's wait")
    p.add_argument("--burn-ms", type=int, default=5, help="each request's CPU time")
    p.add_argument("--window", type=int, default=30, help="scale-down stabilization (s)")
    p.add_argument("--settle", type=float, default=20.0, help="seconds at 1x before the step")
    p.add_argument("--hold", type=float, default=20.0, help="seconds at 10x once reached")
    p.add_argument("--tail", type=float, default=10.0, help="seconds at 1x after scale-in")
    args = p.parse_args()
    print("#", " ".join([os.path.relpath(sys.executable), *sys.argv]), flush=True)
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    root = Path(tempfile.mkdtemp(prefix="phalanx-autoscale-"))
    root.chmod(0o755)
    stack = ServingStack(root, args.agents)
    try:
        (run_hpa if args.what == "hpa" else run_isvc)(stack, args)
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
