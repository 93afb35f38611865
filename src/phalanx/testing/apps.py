"""Test helpers for ``apps/v1``: a Deployment, its ReplicaSets and their pods in memory, each
ReplicaSet a ``Bench`` of its pods and their engine jobs, stepped as the runner steps them."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND, Instant
from phalanx.testing.workloads import Bench
from phalanx.workloads import deployment, replicaset
from phalanx.workloads.plan import Context, Plan
from phalanx.workloads.pods import is_active
from phalanx.workloads.timestamps import rfc3339

__all__ = ["AppsBench", "make_deployment"]

Obj = dict[str, Any]


def make_deployment(name: str = "web", replicas: int = 3, image: str = "v1", **spec: Any) -> Obj:
    """A Deployment of ``replicas`` pods running ``sleep``, labelled ``app: NAME``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image, "command": ["sleep", "1d"]}]},
            },
            **spec,
        },
    }


class AppsBench:
    """A Deployment and its ReplicaSets (``benches``: name -> ``Bench`` holding the
    ReplicaSet as its object); ``step(now)`` reconciles the Deployment then each ReplicaSet,
    carrying the plans out as the runner does (a ReplicaSet's generation bumped when its spec
    changes)."""

    def __init__(self, obj: Obj, ctx: Context | None = None) -> None:
        self.obj = copy.deepcopy(obj)
        self.ctx = ctx or Context()
        self.benches: dict[str, Bench] = {}
        self.events: list[Obj] = []
        self.plans: list[Plan] = []
        self.wake_at: Instant | None = None
        """The earliest wake the last step's plans asked for (a pod held in back-off)."""
        self._uids = itertools.count(1)
        self._names = itertools.count()
        self.names: Callable[[], str] = lambda: f"p{next(self._names):04d}"

    # -- the world -----------------------------------------------------------------------

    def change(self, **spec: Any) -> None:
        """Change the Deployment's spec as a user would (its generation moves)."""
        self.obj["spec"].update(copy.deepcopy(spec))
        self.obj["metadata"]["generation"] = int(self.obj["metadata"].get("generation", 1)) + 1

    def set_image(self, image: str) -> None:
        template = copy.deepcopy(self.obj["spec"]["template"])
        template["spec"]["containers"][0]["image"] = image
        self.change(template=template)

    def pods(self) -> dict[str, Obj]:
        return {n: p for b in self.benches.values() for n, p in b.pods.items()}

    def start_pending(self, now: Instant, limit: int | None = None) -> int:
        """Start up to ``limit`` pending engine jobs (all by default); how many started."""
        started = 0
        for bench in self.benches.values():
            for job_id, job in sorted(bench.jobs.items()):
                if job.state is JobState.PENDING and (limit is None or started < limit):
                    bench.move(job_id, JobState.RUNNING, now)
                    started += 1
        return started

    def counts(self) -> tuple[int, int]:
        """(pods active, pods ready) over all ReplicaSets."""
        pods = [p for p in self.pods().values() if is_active(p)]
        ready = [p for p in pods if p["status"]["phase"] == "Running"]
        return len(pods), len(ready)

    # -- stepping ------------------------------------------------------------------------

    def step(self, now: Instant) -> Plan:
        plan = deployment.reconcile(self.obj, [b.obj for b in self.benches.values()], now, self.ctx)
        self.plans.append(plan)
        for rs in plan.create:
            rs = copy.deepcopy(rs)
            meta = rs["metadata"]
            meta.update(uid=f"rs-{next(self._uids)}", generation=1, creationTimestamp=rfc3339(now))
            bench = Bench(rs)
            bench.names = self.names
            self.benches[meta["name"]] = bench
        for rs in plan.update:
            bench = self.benches[rs["metadata"]["name"]]
            if rs.get("spec") != bench.obj.get("spec"):
                rs["metadata"]["generation"] = int(bench.obj["metadata"]["generation"]) + 1
            bench.obj = {**copy.deepcopy(rs), "status": bench.obj.get("status", {})}
        for name in plan.delete:
            self.benches.pop(name)
        if plan.status is not None:
            self.obj["status"] = copy.deepcopy(plan.status)
        if plan.annotate:
            self.obj["metadata"].setdefault("annotations", {}).update(plan.annotate)
        self.events.extend(plan.events)
        self.wake_at = plan.wake_at
        for bench in self.benches.values():
            woke = self.step_replicaset(bench, now).wake_at
            if woke is not None:
                self.wake_at = woke if self.wake_at is None else min(self.wake_at, woke)
        return plan

    def step_replicaset(self, bench: Bench, now: Instant) -> Plan:
        plan = replicaset.reconcile(
            bench.obj, list(bench.pods.values()), bench.engine(), now, self.ctx, bench.names
        )
        before = set(bench.pods)
        bench.apply(plan)
        for name in set(bench.pods) - before:
            bench.pods[name]["metadata"]["creationTimestamp"] = rfc3339(now)
        self.events.extend(plan.events)
        return plan

    def settle(self, now: Instant, steps: int = 20) -> Instant:
        """Step (starting every pending job) until nothing changes; the time it ends at."""
        calm = 0
        for _ in range(steps):
            started = self.start_pending(now)
            plan = self.step(now)
            now += SECOND
            quiet = not (plan.create or plan.update or plan.delete) and plan.status is None
            # a pod held in back-off (a wake asked for) is not calm: it is replaced later
            waiting = self.wake_at is not None and self.wake_at >= now
            calm = calm + 1 if quiet and not started and not waiting else 0
            if calm >= 2:
                break
        return now
