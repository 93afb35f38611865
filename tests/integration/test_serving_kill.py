"""kill -9 under load, through the service router (``phalanx up``, real kubectl, real
processes): a Deployment's replica, then a node's agent. Each time the Service must be back to
its replica count of ready endpoints within 10 s, the client must see no failure beyond the
requests in flight at the kill, and the router must send nothing to an endpoint while its
EndpointSlice calls it not ready (the router's per-endpoint counters, sampled all along).

Replicas share the host's network here: they bind one port with ``SO_REUSEPORT`` and the
endpoints are told apart by their pod (``targetRef.uid``), which is what the router counts by.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.testing.serving import (
    MODEL_SERVER,
    Load,
    ServingStack,
    deployment_yaml,
    free_port,
)

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is needed")

RECOVERY_S = 10.0


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``check`` until true; the monotonic time it was first seen true."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic()


class Sampler:
    """The router's view of one Service, every 50 ms, on a thread: (monotonic time, body)."""

    def __init__(self, stack: ServingStack, service: str) -> None:
        self.stack = stack
        self.service = service
        self.samples: list[tuple[float, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            body = self.stack.service(self.service)
            if body:
                self.samples.append((time.monotonic(), body))
            self._stop.wait(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def sent_while_not_ready(self) -> dict[str, int]:
        """pod uid -> requests the router sent to that endpoint between two samples that both
        show it not ready (ready = False in its EndpointSlice): must be 0."""
        out: dict[str, int] = {}
        last: dict[str, dict[str, Any]] = {}
        for _, body in self.samples:
            for e in body.get("endpoints", []):
                before = last.get(e["pod_uid"])
                if before is not None and not before["ready"] and not e["ready"]:
                    grew = int(e["requests_sent"]) - int(before["requests_sent"])
                    out[e["pod_uid"]] = out.get(e["pod_uid"], 0) + grew
                last[e["pod_uid"]] = e
        return out

    def not_ready_seen(self, uid: str, after: float) -> bool:
        """Whether a sample taken after ``after`` shows ``uid``'s endpoint not ready."""
        return any(
            e["pod_uid"] == uid and not e["ready"]
            for at, body in list(self.samples)
            if at > after
            for e in body.get("endpoints", [])
        )


def processes(logs: Path) -> dict[int, str]:
    """PID -> pod name of every server process started so far (``MODEL_SERVER``'s files)."""
    return {int(p.name[4:]): p.read_text() for p in logs.glob("pod-*") if p.name[4:].isdigit()}


def pod_uid(stack: ServingStack, name: str) -> str:
    return stack.kubectl("get", "pod", name, "-o", "jsonpath={.metadata.uid}").strip()


def pod_nodes(stack: ServingStack, app: str) -> dict[str, str]:
    """pod name -> node, of the app's pods that have not ended."""
    pods = json.loads(stack.kubectl("get", "pods", "-l", f"app={app}", "-o", "json"))["items"]
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in pods
        if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        and not p["metadata"].get("deletionTimestamp")
    }


@contextlib.contextmanager
def serving(
    root: Path, replicas: int, agents: int, gpus: int = 0, up_args: tuple[str, ...] = ()
) -> Iterator[tuple[ServingStack, Path, Load]]:
    """A stack with Deployment + Service ``web`` of ``replicas`` ready, and a load generator
    (4 clients) running through the router; everything stopped after, stray servers too."""
    root.chmod(0o755)
    logs = root / "logs"
    logs.mkdir()
    script = root / "server.py"
    script.write_text(MODEL_SERVER)
    stack = ServingStack(root, agents, gpus=gpus, up_args=up_args)
    load: Load | None = None
    try:
        stack.apply(
            deployment_yaml(
                "web",
                script,
                free_port(),
                replicas=replicas,
                work_ms=20,
                burn_ms=1,
                logs=logs,
                gpus=2 if gpus else 0,
            )
        )
        url = f"http://{stack.cluster_ip('web')}/"
        wait_for(lambda: stack.ready_endpoints("web") == replicas, 60, f"{replicas} endpoints")
        wait_for(lambda: len(processes(logs)) == replicas, 30, "the servers' pid files")
        load = Load(url, timeout=20)
        load.set(4)
        wait_for(lambda: load is not None and load.done >= 50, 30, "the load to flow")
        yield stack, logs, load
    finally:
        if load is not None:
            load.stop()
        stack.down()
        for pid in processes(logs):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_kill_9_of_a_replica_under_load(tmp_path: Path) -> None:
    replicas = 3
    with serving(tmp_path, replicas, agents=1) as (stack, logs, load):
        sampler = Sampler(stack, "web")
        time.sleep(1)
        before = processes(logs)
        victim = min(before)
        pod = before[victim]
        uid = pod_uid(stack, pod)
        in_flight = load.in_flight
        errors_before = load.errors
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()

        def recovered() -> bool:
            # the victim's pod runs a new process (restarted in place) or was replaced, and
            # the router has every replica ready again
            now = processes(logs)
            fresh = [p for p in now if p not in before]
            return bool(fresh) and stack.ready_endpoints("web") == replicas

        back = wait_for(recovered, 30, "the replica back")
        time.sleep(2)  # load on the recovered Service
        failed = load.errors - errors_before
        print(
            f"\nkill -9 of replica pid {victim}: Service back to {replicas} ready endpoints "
            f"{back - killed:.2f}s after the kill; client failures {failed} "
            f"(in flight at the kill {in_flight}); requests answered {load.done}"
        )
        assert back - killed <= RECOVERY_S
        assert failed <= in_flight

        # The same container again, within kubelet's back-off reset: it waits 10 s in
        # CrashLoopBackOff, its pod not ready; the router must send it nothing meanwhile.
        [again] = [p for p, name in processes(logs).items() if name == pod and p not in before]
        seen = processes(logs)
        in_flight = load.in_flight
        errors_before = load.errors
        os.kill(again, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: sampler.not_ready_seen(uid, killed), 15, "the endpoint not ready")
        marked = time.monotonic()
        back = wait_for(
            lambda: (
                any(p not in seen for p in processes(logs))
                and stack.ready_endpoints("web") == replicas
            ),
            40,
            "the replica back after its back-off",
        )
        time.sleep(1)
        sampler.stop()
        failed = load.errors - errors_before
        sent = sampler.sent_while_not_ready()
        print(
            f"second kill -9 (CrashLoopBackOff): endpoint not ready at the router "
            f"{marked - killed:.2f}s after the kill, ready again {back - killed:.2f}s after; "
            f"requests sent to it while not ready {sum(sent.values())}; client failures "
            f"{failed} (in flight at the kill {in_flight})"
        )
        assert set(sent.values()) <= {0}, sent
        assert failed <= in_flight


def test_kill_9_of_an_agent_under_load(tmp_path: Path) -> None:
    replicas = 3
    up_args = ("--dead-after", "3")
    with serving(tmp_path, replicas, agents=3, gpus=4, up_args=up_args) as (stack, logs, load):
        sampler = Sampler(stack, "web")
        nodes = pod_nodes(stack, "web")
        on = {n: [u for u, m in nodes.items() if m == n] for n in set(nodes.values())}
        node = max(sorted(on), key=lambda n: len(on[n]))
        lost = set(on[node])
        [agent] = stack.agents()[node]
        in_flight = load.in_flight
        errors_before = load.errors
        # The machine dies: its agent and the replicas it ran go at once.
        os.kill(agent, signal.SIGKILL)
        for pid, name in processes(logs).items():
            if name in lost:
                os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()

        def declared_dead() -> bool:
            return str(stack.nodes()[node]["state"]) == "down"

        dead = wait_for(declared_dead, 30, f"node {node} declared down")

        def recovered() -> bool:
            now = pod_nodes(stack, "web")
            return (
                len(now) == replicas
                and not lost & set(now)
                and node not in now.values()
                and stack.ready_endpoints("web") == replicas
            )

        back = wait_for(recovered, 40, "the replicas recreated elsewhere")
        time.sleep(2)
        sampler.stop()
        failed = load.errors - errors_before
        print(
            f"\nkill -9 of the agent of {node} ({len(lost)} of {replicas} replicas on it): "
            f"node declared dead {dead - killed:.2f}s after the kill; Service back to "
            f"{replicas} ready endpoints {back - killed:.2f}s after the kill, "
            f"{back - dead:.2f}s after the node was declared dead; client failures {failed} "
            f"(in flight at the kill {in_flight})"
        )
        assert back - dead <= RECOVERY_S
        assert failed <= in_flight
        assert set(sampler.sent_while_not_ready().values()) <= {0}
