"""Where GPU time went, live: the efficiency model over a sliding window.

It reads the engine's decision log as the controller runs (then the controller drops the
entries, so memory stays flat) and books each finished piece of GPU time when it ends:
compute, gang wait (pods held while the rest of the gang waited), eviction (signal to kill),
lost work (since the last checkpoint, when a run is requeued) and cleanup (COMPLETING). A
window also counts the pieces still open as if they ended at its end: without them, a cluster
whose first runs are still going would read only their gang waits, an eta_sched of 0 %.
The definitions are the simulator's (docs/metrics.md); the launch share is not measured live.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from phalanx.domain.jobspec import MILLI
from phalanx.domain.time import Duration, Instant
from phalanx.engine.decisions import (
    Decision,
    Ended,
    Exited,
    Held,
    LaunchLost,
    Preempted,
    Requeued,
    Resized,
    Started,
    Unheld,
)
from phalanx.sched.job import Job

__all__ = ["Ledger", "Share"]


@dataclass
class Share:
    """GPU x milliseconds by kind."""

    compute: float = 0.0
    gang_wait: float = 0.0
    evict: float = 0.0
    lost: float = 0.0
    cleanup: float = 0.0

    @property
    def eta_sched(self) -> float:
        denominator = self.compute + self.gang_wait + self.evict + self.lost + self.cleanup
        return self.compute / denominator if denominator > 0 else 1.0

    @property
    def theta_overhead(self) -> float:
        total = self.compute + self.gang_wait + self.evict + self.lost + self.cleanup
        return (self.gang_wait + self.evict) / total if total > 0 else 0.0


class Ledger:
    def __init__(self, keep: Duration = 3_600_000) -> None:
        self._keep = keep
        self._entries: deque[tuple[Instant, str, float]] = deque()
        self._start: dict[int, tuple[Instant, float]] = {}
        self._evict_from: dict[int, Instant] = {}
        self._suspended: set[int] = set()
        """Preempted with a suspension: asked to checkpoint at the signal (Tiresias)."""
        self._exited: dict[int, tuple[Instant, float, float, bool]] = {}
        """job -> (exit instant, GPUs, compute GPU-ms of the run, whether it exited on its own
        after a preemption signal with its checkpoint saved) until its end or requeue."""
        self._holds: dict[int, list[tuple[Instant, float]]] = {}

    def consume(self, decisions: Iterable[Decision], jobs: Mapping[int, Job]) -> None:
        for d in decisions:
            match d:
                case Started(at=at, job_id=job_id, nodes=nodes):
                    # From the request and the decision, not the job's allocation now: the
                    # log may be read after the job has moved on (requeued, ended, replayed).
                    spec = jobs[job_id].spec
                    gpus = (
                        spec.gpu_milli / MILLI
                        if spec.gpu_milli
                        else float(len(nodes) * spec.gpus_per_node)
                    )
                    self._start[job_id] = (at, gpus)
                    for since, held in self._holds.pop(job_id, []):
                        self._book(at, "gang_wait", held * (at - since))
                case Resized(at=at, job_id=job_id, nodes=nodes):
                    # An elastic run changed size: its time so far at the old size is
                    # compute (shrinking loses no work); the run goes on at the new size.
                    begun = self._start.get(job_id)
                    if begun is not None:
                        self._book(at, "compute", begun[1] * (at - begun[0]))
                        per_node = jobs[job_id].spec.gpus_per_node
                        self._start[job_id] = (at, float(len(nodes) * per_node))
                case Held(at=at, job_id=job_id, gpus=gpus):
                    self._holds.setdefault(job_id, []).append((at, gpus))
                case Unheld(at=at, job_id=job_id):
                    for since, held in self._holds.pop(job_id, []):
                        self._book(at, "gang_wait", held * (at - since))
                case Preempted(at=at, job_id=job_id, suspend=suspend):
                    self._evict_from[job_id] = at
                    if suspend:
                        self._suspended.add(job_id)
                case Exited(at=at, job_id=job_id, signal=signal):
                    begun = self._start.pop(job_id, None)
                    if begun is None:
                        continue
                    start, gpus = begun
                    evict_from = self._evict_from.pop(job_id, None)
                    evict = gpus * (at - evict_from) if evict_from is not None else 0.0
                    self._book(at, "evict", evict)
                    # A job that checkpoints on SIGTERM (by its spec, or asked to by a
                    # suspension) and exited by itself (not killed: no signal) within its
                    # grace saved its work up to the signal.
                    asked = job_id in self._suspended
                    self._suspended.discard(job_id)
                    saved = (
                        evict_from is not None
                        and (asked or jobs[job_id].spec.checkpoint_on_signal)
                        and signal == 0
                    )
                    self._exited[job_id] = (at, gpus, gpus * (at - start) - evict, saved)
                case Ended(at=at, job_id=job_id) | Requeued(at=at, job_id=job_id):
                    done = self._exited.pop(job_id, None)
                    if done is None:
                        continue
                    exit_at, gpus, compute, saved = done
                    if type(d) is Requeued and not saved:
                        interval = jobs[job_id].spec.checkpoint_interval
                        lost = compute % (gpus * interval) if interval and gpus else compute
                        self._book(at, "lost", lost)
                        compute -= lost
                    self._book(at, "compute", compute)
                    self._book(at, "cleanup", gpus * (at - exit_at))
                case LaunchLost(job_id=job_id):
                    self._start.pop(job_id, None)

    def _book(self, at: Instant, kind: str, gpu_ms: float) -> None:
        if gpu_ms > 0:
            self._entries.append((at, kind, gpu_ms))

    def window(self, now: Instant, length: Duration) -> Share:
        while self._entries and self._entries[0][0] < now - self._keep:
            self._entries.popleft()
        share = Share()
        for at, kind, gpu_ms in reversed(self._entries):
            if at < now - length:
                break
            setattr(share, kind, getattr(share, kind) + gpu_ms)
        self._open(share, now)
        return share

    def _open(self, share: Share, now: Instant) -> None:
        """Add the pieces not ended yet, each as if it ended at ``now``. Whether a running
        job's work will be lost is known only at its requeue: until then it is compute."""
        for job_id, (start, gpus) in self._start.items():
            evict_from = self._evict_from.get(job_id)
            if evict_from is None:
                share.compute += gpus * max(now - start, 0)
            else:
                share.compute += gpus * max(evict_from - start, 0)
                share.evict += gpus * max(now - evict_from, 0)
        for exit_at, gpus, compute, _saved in self._exited.values():
            share.compute += max(compute, 0.0)
            share.cleanup += gpus * max(now - exit_at, 0)
        for holds in self._holds.values():
            for since, held in holds:
                share.gang_wait += held * max(now - since, 0)
