"""Group commit of the object store: the rule that keeps the Kubernetes API honest and fast.

The rule: a write is acknowledged (a create's 201, a watch event, any answer that shows it)
only once it is in the controller's database, fsynced. The store applies a write to memory at
once and queues it (``ObjectStore.defer_commits``); ``GroupCommit.run`` takes everything
queued, commits it in one transaction on a worker thread (so the event loop keeps taking
requests during the fsync) and then wakes every answer that waited for it. Many concurrent
requests thus share one fsync; one client that sends requests one at a time still pays one
fsync per write, as it must. A batch stays open while the loop's next turns add writes
(``WINDOW_TURNS``), so that what a write sets off at once (a Job's pod and its Running
status) shares its fsync.

An answer computed from memory waits with ``settle`` (everything written so far) or
``until(rv)``. When the database refuses a batch, the waiting answers fail (503) and the
batch waits again, retried every ``RETRY_S``: nothing refused is ever acknowledged.
"""

from __future__ import annotations

import asyncio
import logging

from phalanx.kube.errors import Unavailable
from phalanx.kube.store import ObjectStore

__all__ = ["RETRY_S", "WINDOW_TURNS", "GroupCommit"]

log = logging.getLogger("phalanx.kube")

RETRY_S = 0.5
"""How long a refused batch waits before it is tried again."""
WINDOW_TURNS = 16
"""How many turns of the event loop a batch may stay open after its first write, as long as
each turn adds writes. A write's consequences follow it on the next turns (a Job's pod,
created by the workload runner's drain, then marked Running by the drain that one schedules
when the engine starts it at once): a batch taken at the first write would leave them for
the next fsync, one more on the path from a create to a Running pod. A turn that adds
nothing closes the batch, so a lone write waits for no timer."""


class GroupCommit:
    """Commits ``store``'s queued writes in batches; ``run()`` on the event loop that owns
    the store (the one that serves it); ``stop()`` ends it after a last commit."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._cue = asyncio.Event()
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._stopping = False
        self._done = False
        self.batches = 0
        self.writes = 0
        store.defer_commits()
        store.on_pending = self._cue.set

    async def settle(self) -> None:
        """Wait until every write made so far is durable (``Unavailable`` if the database
        refuses it)."""
        await self.until(self.store.resource_version)

    async def until(self, rv: int) -> None:
        """Wait until the writes up to ``rv`` are durable."""
        if rv <= self.store.durable_version:
            return
        if self._done:
            raise Unavailable("the Kubernetes API is stopping")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((rv, future))
        self._cue.set()
        await future

    async def run(self) -> None:
        try:
            await self._commits()
        finally:
            self._done = True
            self._wake()
            self._fail(Unavailable("the Kubernetes API is stopping"))

    async def _commits(self) -> None:
        loop = asyncio.get_running_loop()
        store = self.store
        while True:
            if not self._stopping:
                await self._cue.wait()
                await self._window()
            self._cue.clear()
            rv, writes = store.take_pending()
            if rv <= store.durable_version and not writes:
                self._wake()
                if self._stopping:
                    return
                continue
            try:
                # A worker thread: the fsync does not hold the loop (the GIL is released in
                # it), and the writes meanwhile queue up for the next batch.
                await loop.run_in_executor(None, store.table.commit, rv, writes)
            except Exception as exc:
                store.uncommitted(writes)
                log.error("kube objects: %s (retrying in %.1f s)", exc, RETRY_S)
                self._fail(exc)
                if self._stopping:
                    return
                await asyncio.sleep(RETRY_S)
                self._cue.set()
                continue
            self.batches += 1
            self.writes += len(writes)
            store.committed(rv)
            self._wake()

    async def _window(self) -> None:
        """Let the loop run (``WINDOW_TURNS`` at most) while each turn writes more."""
        store = self.store
        for _ in range(WINDOW_TURNS):
            rv = store.resource_version
            await asyncio.sleep(0)  # one turn: the callbacks ready now run first
            if store.resource_version == rv:
                return

    def _wake(self) -> None:
        durable = self.store.durable_version
        waiting = []
        for rv, future in self._waiters:
            if rv <= durable:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((rv, future))
        self._waiters = waiting

    def _fail(self, exc: Exception) -> None:
        waiters, self._waiters = self._waiters, []
        error = exc if isinstance(exc, Unavailable) else Unavailable(f"not stored: {exc}")
        for _, future in waiters:
            if not future.done():
                future.set_exception(error)

    def stop(self) -> None:
        """End ``run`` once what waits now is committed (or refused)."""
        self._stopping = True
        self._cue.set()
