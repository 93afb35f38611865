"""The workload runner: the reconcilers of ``phalanx.workloads`` carried out against the
object store and the live controller.

Event-driven: the store's commits (a Job, PyTorchJob, Volcano Job, JobSet, Deployment,
ReplicaSet or pod added, changed or deleted) and the controller's decisions
(``Controller.watch``: a job started, ended, ...) mark workloads dirty; ``drain`` (deferred
onto the loop, never run inside a store callback) reconciles each once and carries its
``Plan`` out: pods created, pods updated (spec, then status), engine jobs submitted under
their idempotency keys (a drain's all in one journal write: ``phalanx.kube.podsubmit``) and
the pods annotated with their job ids, cancels, pod deletions, the
workload's status, Events, and the workload's deletion after its TTL. ``tick`` (every second
or so) looks again at workloads with pending pods, whose engine reason or expected start may
change without a decision, and at those that asked to be woken.

A JobSet's and a Deployment's plans act on their children (Jobs, ReplicaSets), which are
reconciled in turn; a child's change marks its parent.

A pod no controller owns (a bare pod) is a workload of its own (``phalanx.workloads.barepod``):
one engine job whose node's agent restarts it in place and probes it. The agents' container
reports (``containers``: ``phalanx.live.containers``) go into every running pod's status;
``pod_container(namespace, name)`` answers a pod's latest one (ready, restarts, state, CPU
millicores) for other controllers (autoscaling, the router).

Kubernetes workloads are ordinary engine jobs (account = namespace), so ``squeue``/``sacct``
show them. The requesting user is the workload's ``phalanx.io/user`` annotation, which the
API server sets from the bearer token on create and keeps on updates (clients can neither
set nor change it: ``phalanx.kube.resources``), else the runner's ``default_user`` (objects
written to the store directly).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import Instant
from phalanx.errors import PhalanxError
from phalanx.kube import parents, podsubmit
from phalanx.kube.containerstatus import container_view
from phalanx.kube.contexts import context_of
from phalanx.kube.errors import KubeError
from phalanx.kube.kueue_workloads import KueueWorkloads
from phalanx.kube.podgate import PodGate
from phalanx.kube.resources import ANNOTATION_USER
from phalanx.kube.workload_ports import (
    DEPLOYMENTS,
    JOBS,
    JOBSETS,
    PODS,
    PYTORCHJOBS,
    REPLICASETS,
    VCJOBS,
    Containers,
    Engine,
    Key,
    Obj,
    Store,
    engine_job,
    key_of,
    known_user,
    log_path,
    owner_of,
    random_name,
    status_only,
)
from phalanx.workloads import barepod, pytorchjob, replicaset, vcjob, volcano
from phalanx.workloads import job as batch_job
from phalanx.workloads import training as pytorch_labels
from phalanx.workloads.plan import (
    ANNOTATION_JOB_ID,
    ANNOTATION_KEY,
    ANNOTATION_RANK,
    ContainerView,
    Context,
    Plan,
)
from phalanx.workloads.pods import engine_id
from phalanx.workloads.podspec import LOCALHOST
from phalanx.workloads.selectors import match_labels

__all__ = [
    "ANNOTATION_USER",
    "DEPLOYMENTS",
    "JOBS",
    "JOBSETS",
    "PODS",
    "PYTORCHJOBS",
    "REPLICASETS",
    "VCJOBS",
    "Engine",
    "Store",
    "WorkloadRunner",
    "engine_job",
    "log_path",
]

log = logging.getLogger("phalanx.kube.workloads")

TICK_LOOKS = 200
"""How many waiting workloads one ``tick`` looks at again, in turn: each is looked at within
ceil(waiting / TICK_LOOKS) ticks. Unbounded, 10,000 pending pods cost a reconcile each every
tick, more than a core; kube-scheduler, too, retries an unschedulable pod on a cluster event
or after a while (``podMaxInUnschedulablePodsDuration``), not continuously."""

DRAIN_BATCH = 64
"""How many workloads one drain reconciles at most (about 10-20 ms of work): a burst's
thousand Jobs are caught up in batches, between which the loop serves requests."""


class WorkloadRunner:
    """Carries the reconcilers out (module docstring). Runs on the controller's loop
    thread: ``defer(fn)`` runs ``fn`` soon on it; ``later(fn)`` runs ``fn`` once the loop
    has had time for other work (the controller's pass); None: workloads' statuses and
    events are written at the end of each drain."""

    def __init__(
        self,
        store: Store,
        engine: Engine,
        *,
        clock: Callable[[], Instant],
        defer: Callable[[Callable[[], None]], Any],
        log_dir: str,
        workdir: str = "/tmp",
        default_user: str = "root",
        address: Callable[[str], str] = lambda _node: LOCALHOST,
        names: Callable[[], str] = random_name,
        later: Callable[[Callable[[], None]], Any] | None = None,
        known_user: Callable[[str], bool] = known_user,
        containers: Containers | None = None,
        batch: int = DRAIN_BATCH,
    ) -> None:
        self.store = store
        self.engine = engine
        self.clock = clock
        self.defer = defer
        self.log_dir = log_dir
        self.workdir = workdir
        self.default_user = default_user
        self.address = address
        self.names = names
        self.known_user = known_user
        self.containers = containers
        self.dirty: dict[Key, None] = {}
        """The workloads to reconcile, in the order they were marked (an ordered set)."""
        self.batch = batch
        self.assigned: dict[tuple[str, str], tuple[str, int, int]] = {}
        """(namespace, pod) -> (submission key, engine job id, rank), kept here rather than
        written at once: the pod carries them in its annotations from its next write on (a
        write fewer before it runs; after a restart, the submission again, under its key,
        answers the same id)."""
        self.owners: dict[int, Key] = {}
        """Engine job id -> the workload whose pods it runs."""
        self.waiting: set[Key] = set()
        """Workloads with pending pods: looked at again by the ticks, ``TICK_LOOKS`` a tick."""
        self._turns: deque[Key] = deque()
        """The waiting workloads this round of ticks has yet to look at, in key order."""
        self.wakes: dict[Key, Instant] = {}
        self._scheduled = False
        self._writing: Key | None = None
        """The batch Job whose status ``flush`` is writing (its own change: not marked)."""
        self.later = later
        self.backlog: dict[Key, Obj] = {}
        """Workloads' statuses not written yet (the latest of each), and below, events: they
        wait for ``flush``, so that the writes a pod needs to start and run come first."""
        self.backlog_events: list[Obj] = []
        self._flushing = False
        self.reconciles = 0
        self._draining = False
        self._queued: list[podsubmit.Queued] = []
        """Submissions made during a drain, journaled together at its end."""
        self.caller = Caller(0, "root", admin=True)
        self.kueue = KueueWorkloads(store, engine, clock)
        """A queued owner's Workload and suspend flag, after each of its passes."""
        self.gate = PodGate(store)
        """The pods of queued owners, held back until their engine job starts."""

    # -- cues ----------------------------------------------------------------------------

    def start(self, watch: Callable[[Callable[[set[int]], None]], None] | None = None) -> None:
        """Subscribe to the store (and, with ``watch``, to the controller's decisions), and
        look at every workload there is."""
        self.store.subscribe(self.on_object)
        if watch is not None:
            watch(self.on_jobs)
        for resource in (JOBS, PYTORCHJOBS, VCJOBS, JOBSETS, REPLICASETS, DEPLOYMENTS):
            for obj in self.store.list(resource):
                key = key_of(obj)
                if key is not None:
                    self._mark(key)
        for pod in self.store.list(PODS):
            if barepod.is_bare(pod):
                self._mark(_pod_key(pod))

    def sweep(self) -> list[int]:
        """Cancel the engine jobs of queued owners' pods held by a controller before this
        one that no pod claims now (``PodGate.left``); called once this controller leads.
        Returns the ids cancelled."""
        claimed = {i for _, i, _ in self.assigned.values()}
        claimed.update(i for p in self.store.list(PODS) if (i := engine_id(p)) is not None)
        left = sorted(self.gate.left() - claimed)
        found = self.engine.jobs(ids=left) if left else []
        gone = [j.id for j in found if not j.state.is_final and j.start is None]
        for job_id in gone:
            self._cancel(job_id)
        return gone

    def pod_container(self, namespace: str, name: str) -> ContainerView | None:
        """The latest container status of pod ``namespace/name`` as its node's agent reported
        it (``ready``, ``restart_count``, ``state``, ``cpu_millicores``); None for a pod not
        running, or whose container neither restarts in place nor is probed."""
        pod = self.store.get(PODS, namespace, name)
        if pod is None or self.containers is None:
            return None
        pod = self._with_job(namespace, pod)
        job_id = engine_id(pod)
        rank = int(((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RANK, 0))
        report = None if job_id is None else self.containers(job_id, rank)
        return None if report is None else container_view(report)

    def on_object(self, kind: str, obj: Obj) -> None:
        key = key_of(obj)
        if key is not None:
            if kind == "DELETED":
                self._forget(key, obj)
            elif key != self._writing:
                self._mark(key)
            parent = owner_of(obj)  # a JobSet's child Job
            if parent is not None:
                self._mark(parent)
            return
        if obj.get("kind") != "Pod":
            return
        owner = owner_of(obj)
        bare = barepod.is_bare(obj)
        if kind == "DELETED" and not self.gate.moved(*_pod_key(obj)[1:]):
            meta = obj.get("metadata") or {}
            found = self.assigned.pop((str(meta.get("namespace")), str(meta.get("name"))), None)
            job_id = engine_id(obj) if found is None else found[1]
            if job_id is not None and (owner is not None or bare):
                self._cancel(job_id)
            if bare:
                self._forget(_pod_key(obj), obj)
                return
        if owner is not None:
            self._mark(owner)
        elif bare:
            self._mark(_pod_key(obj))

    def on_jobs(self, job_ids: set[int]) -> None:
        for job_id in job_ids:
            key = self.owners.get(job_id)
            if key is not None:
                self._mark(key)

    def tick(self) -> None:
        """Look again at the next ``TICK_LOOKS`` workloads with pending pods (a round
        covers each waiting one once) and at those due to wake."""
        now = self.clock()
        if not self._turns:
            self._turns.extend(sorted(self.waiting))
        for _ in range(min(TICK_LOOKS, len(self._turns))):
            key = self._turns.popleft()
            if key in self.waiting:  # (not one that has started or gone since the round began)
                self._mark(key)
        for key, at in list(self.wakes.items()):
            if at <= now:
                del self.wakes[key]
                self._mark(key)

    def _mark(self, key: Key) -> None:
        self.dirty[key] = None
        if not self._scheduled:
            self._scheduled = True
            self.defer(self.drain)

    def _forget(self, key: Key, obj: Obj) -> None:
        self.dirty.pop(key, None)
        self.gate.forget(key)
        self.kueue.refused.pop(key, None)
        self.waiting.discard(key)
        self.wakes.pop(key, None)
        for job_id, owner in list(self.owners.items()):
            if owner == key:
                del self.owners[job_id]
                self._cancel(job_id)

    # -- reconciling ---------------------------------------------------------------------

    def drain(self) -> None:
        """Reconcile the dirty workloads once each, at most ``batch`` of them, those marked
        longest ago (the rest, and those its own writes dirty again, wait for the next
        drain, which is deferred: the loop's other work runs between two batches)."""
        self._scheduled = False
        if len(self.dirty) <= self.batch:
            batch, self.dirty = list(self.dirty), {}
        else:
            batch = list(itertools.islice(self.dirty, self.batch))
            for key in batch:
                del self.dirty[key]
            self._scheduled = True
            self.defer(self.drain)
        self._draining = True  # the pods' submissions wait for its end: one journal write
        try:
            for key in sorted(batch):
                try:
                    self.reconcile(key)
                except (KubeError, PhalanxError) as e:
                    log.warning("reconciling %s/%s: %s", key[1], key[2], e)
        finally:
            self._draining = False
            self._submit_queued()
        if self.later is None:
            self.flush()
        elif (self.backlog or self.backlog_events) and not self._flushing:
            self._flushing = True
            self.later(self.flush)

    def flush(self) -> None:
        """Write the workloads' statuses and the events that wait."""
        self._flushing = False
        backlog, self.backlog = self.backlog, {}
        events, self.backlog_events = self.backlog_events, []
        for (resource, namespace, name), status in sorted(backlog.items()):
            current = self.store.peek(resource, namespace, name)  # only read
            if current is not None and current.get("status") != status:
                # A batch Job's own status, written here, is not news to its controller: the
                # pass that computed it saw it already (``reconcile`` reads the backlog), and
                # a Job's pass decides from its spec, pods and engine jobs. Without this, every
                # Job was reconciled twice, the second time to find nothing to do (and, for one
                # that cannot run, to record its FailedCreate twice).
                self._writing = (resource, namespace, name) if resource == JOBS else None
                try:
                    # (copy=False: what it returns is not kept, so no copy of that either)
                    self.quietly(
                        self.store.update_status, status_only(current, status), copy=False
                    )
                finally:
                    self._writing = None
        for one in events:
            # made here for the store alone: it takes them as they are
            self.quietly(self.store.create, one, copy=False)

    def reconcile(self, key: Key) -> Plan | None:
        resource, namespace, name = key
        if resource == JOBS:
            # A batch Job's reconciler (and Kueue's view) only read it: the store's own, in a
            # shallow dict whose status may be replaced below (other kinds get a deep copy).
            own = self.store.peek(resource, namespace, name)
            obj = None if own is None else dict(own)
        else:
            obj = self.store.get(resource, namespace, name)
        if obj is None:
            self.backlog.pop(key, None)
            return None
        if key in self.backlog:
            obj["status"] = self.backlog[key]  # as it will be written
        uid = (obj.get("metadata") or {}).get("uid")
        if resource == JOBSETS:
            return parents.jobset_pass(self, key, obj, str(uid))
        if resource == DEPLOYMENTS:
            return parents.deployment_pass(self, key, obj, str(uid))
        if resource == PODS:
            return self._reconcile_pod(key, obj)
        # the controllers' own labels narrow the list (only what matches is copied)
        labels: dict[str, str]
        if resource == REPLICASETS:
            labels = match_labels((obj.get("spec") or {}).get("selector"))
        elif resource == JOBS:
            labels = {batch_job.CONTROLLER_UID: str(uid)}
        elif resource == VCJOBS:
            labels = {volcano.JOB_NAME: name}
        else:
            labels = {
                pytorch_labels.JOB_NAME: name,
                pytorch_labels.OPERATOR: pytorch_labels.CONTROLLER,
            }
        pods = self.store.owned(PODS, namespace, str(uid), labels)
        gated = self.gate.gated(key, obj)
        if gated is not None:
            pods = self.gate.pods(key, pods)
        stored, pods = pods, [self._with_job(namespace, p) for p in pods]
        ids = {i for p in pods if (i := engine_id(p)) is not None}
        for job_id in ids:
            self.owners[job_id] = key
        cluster = self.engine.cluster
        jobs = {
            j.id: engine_job(j, cluster, self.address, self.containers)
            for j in (self.engine.jobs(finished=True, ids=sorted(ids)) if ids else ())
        }
        now = self.clock()
        ctx = self.context(obj)
        shown = self.kueue.view(key, obj)
        if gated:  # a queued JobSet's child: its pods queue as the JobSet does
            labels = {**(obj["metadata"].get("labels") or {}), **gated}
            shown = {**shown, "metadata": {**obj["metadata"], "labels": labels}}
        if resource == JOBS:
            plan = batch_job.reconcile(shown, pods, jobs, now, ctx, self.names)
        elif resource == VCJOBS:
            plan = vcjob.reconcile(shown, pods, jobs, now, ctx, self.names)
        elif resource == REPLICASETS:
            plan = replicaset.reconcile(shown, pods, jobs, now, ctx, self.names)
        else:
            plan = pytorchjob.reconcile(shown, pods, jobs, now, ctx)
        self.reconciles += 1
        if gated is not None:
            self.gate.hold(key, plan, stored, jobs, lambda p: self._with_job(namespace, p))
        self._carry_out(key, stored, plan)
        self.kueue.sync(key, obj, plan.status or obj.get("status"), jobs)
        parent = owner_of(obj)
        if gated is not None and parent is not None and parent[0] == JOBSETS:
            self._mark(parent)  # the JobSet's Workload follows its children's engine jobs
        return plan

    def _reconcile_pod(self, key: Key, stored: Obj) -> Plan:
        """A bare pod's pass (``phalanx.workloads.barepod``)."""
        pod = self._with_job(key[1], stored)
        job_id = engine_id(pod)
        job = None
        if job_id is not None:
            self.owners[job_id] = key
            found = self.engine.jobs(finished=True, ids=[job_id])
            if found:
                job = engine_job(found[0], self.engine.cluster, self.address, self.containers)
        plan = barepod.reconcile(pod, job, self.clock(), self.context(pod))
        self.reconciles += 1
        self._carry_out(key, [stored], plan)
        return plan

    def _with_job(self, namespace: str, pod: Obj) -> Obj:
        """``pod`` with its engine job's id and rank, where only this runner knows them."""
        meta = pod.get("metadata") or {}
        notes = meta.get("annotations") or {}
        found = self.assigned.get((namespace, str(meta.get("name"))))
        if found is None or ANNOTATION_JOB_ID in notes or notes.get(ANNOTATION_KEY) != found[0]:
            return pod
        _, job_id, rank = found
        annotations = {**notes, ANNOTATION_JOB_ID: str(job_id), ANNOTATION_RANK: str(rank)}
        return {**pod, "metadata": {**meta, "annotations": annotations}}

    def context(self, obj: Obj) -> Context:
        return context_of(
            self.store,
            self.engine,
            obj,
            log_dir=self.log_dir,
            workdir=self.workdir,
            default_user=self.default_user,
        )

    def _carry_out(self, key: Key, pods: Sequence[Obj], plan: Plan) -> None:
        """The plan, in the order that lets the engine start the pods soonest: pods created
        (with their status), submissions (in a drain, journaled at its end, all together),
        pods' new status, then their spec (a node bound), cancels, deletions, the
        workload's status, events."""
        resource, namespace, name = key
        for pod in plan.create:
            # The plan's pods are its own: the store takes them as they are (no copies),
            # with the uid its reconciler gave it (its environment may hold it, ``fieldRef``).
            wanted = pod.get("status")
            made = self.quietly(self.store.create, pod, keep_uid=True, copy=False)
            if made is not None and made.get("status") != wanted:
                fixed = {k: v for k, v in made.items() if k != "status"}
                if wanted is not None:
                    fixed["status"] = wanted
                self.quietly(self.store.update_status, fixed)
        for sub in plan.submit:
            self._submit(key, namespace, sub.key, sub.spec, sub.pods)
        before = {str(p["metadata"]["name"]): p for p in pods}
        for pod in plan.update:
            pod = self._with_job(namespace, pod)
            pod = {
                **pod,
                "metadata": {k: v for k, v in pod["metadata"].items() if k != "resourceVersion"},
            }
            # (its status copied here, copy=False: what it returns is not kept)
            self.quietly(self.store.update_status, status_only(pod, pod.get("status")), copy=False)
            old = before.get(str(pod["metadata"]["name"]))
            if (
                old is None
                or old.get("spec") != pod.get("spec")
                or (old["metadata"].get("annotations") != pod["metadata"].get("annotations"))
            ):
                self.quietly(self.store.update, pod)
        for job_id in plan.cancel:
            self._cancel(job_id)
        for pod_name in plan.delete:
            self.quietly(self.store.delete, PODS, namespace, pod_name)
            self.assigned.pop((namespace, pod_name), None)
        if plan.status is not None:
            self.backlog[key] = plan.status
        self.backlog_events.extend(plan.events)
        if plan.wake_at is not None:
            self.wakes[key] = plan.wake_at
        latest = {**before, **{str(p["metadata"]["name"]): p for p in [*plan.create, *plan.update]}}
        gone = set(plan.delete)
        if any(
            (p.get("status") or {}).get("phase") == "Pending"
            for n, p in latest.items()
            if n not in gone
        ):
            self.waiting.add(key)
        else:
            self.waiting.discard(key)
        if plan.delete_self:
            self.quietly(self.store.delete, resource, namespace, name)

    def _submit(
        self, key: Key, namespace: str, request: str, spec: JobSpec, pods: Sequence[str]
    ) -> None:
        try:
            podsubmit.check(spec, self.engine, self.known_user)
        except PhalanxError as e:
            self._refused(key, namespace, pods, e)
            return
        self._queued.append((key, namespace, request, spec, pods))
        if not self._draining:
            self._submit_queued()

    def _submit_queued(self) -> None:
        """Journal the queued submissions together (``phalanx.kube.podsubmit``)."""
        queued, self._queued = self._queued, []
        if not queued:
            return
        try:
            ids = self.engine.submit_each([(spec, request) for _, _, request, spec, _ in queued])
        except PhalanxError as e:
            for key, namespace, _, _, pods in queued:
                self._refused(key, namespace, pods, e)
            return
        for (key, namespace, request, _, pods), got in zip(queued, ids, strict=True):
            self.owners[got[0]] = key
            self.kueue.refused.pop(key, None)
            for rank, pod_name in enumerate(pods):
                self.assigned[(namespace, pod_name)] = (request, got[0], rank)

    def _refused(self, key: Key, namespace: str, pods: Sequence[str], e: PhalanxError) -> None:
        """A request that can never run here: its pods say so and stay Pending; a queued
        owner's held-back pods (``PodGate``), through its Workload, as Kueue's would."""
        why = (namespace, pods, str(e), self.clock(), self.quietly, self.gate.held.get(key, {}))
        events, held = podsubmit.unschedulable(self.store, *why)
        self.backlog_events.extend(events)
        if held:
            self.kueue.refused[key] = str(e)

    def _cancel(self, job_id: int) -> None:
        with contextlib.suppress(PhalanxError):  # gone already
            self.engine.cancel(job_id, self.caller)

    @staticmethod
    def quietly(call: Callable[..., Any], *args: Any, **options: Any) -> Any:
        """A write that may have been done before (a plan carried out twice), or whose object
        is gone: logged, not raised (None returned)."""
        try:
            return call(*args, **options)
        except KubeError as e:
            log.debug("%s: %s", getattr(call, "__name__", call), e)
            return None


def _pod_key(pod: Mapping[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return PODS, str(meta.get("namespace", "default")), str(meta.get("name"))
