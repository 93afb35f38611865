"""Snapshots: the controller's state saved with the journal position it reflects, so a
restart (or a standby taking over) replays only the inputs after it.

A snapshot is the driver's ``Checkpoint`` (the engine, the queue of accepted inputs and
timers) and the launches of the runs the fleet knows, pickled together. Restored, then fed
the journal's tail, it gives the same state and decisions as a replay of the whole journal
from the snapshot's own starting point -- the state a controller that never stopped has.

Before each snapshot the controller forgets jobs that ended more than ``MIN_JOB_AGE`` ago
(Slurm's ``MinJobAge``, 300 s by default), once their accounting record is stored
(``phalanx.live.accounting``): the saved state, and the controller's memory, then grow with
the jobs in flight, not with the whole history. Forgetting is an input (``Forget``),
journaled, so a restarted controller and a standby following the journal forget the same
jobs at the same point.

Saving one first drops what can change nothing (``Driver.compact``: timers of runs that are
over, the rows of jobs long gone a plugin kept), in the running controller too, so that both
hold the same. Frozen dataclasses (specs, shapes, allocations, events) are pickled as their
field values (``_Pickler``), and a restore pauses the garbage collector, which would otherwise
scan the objects being made again and again: restoring is then mostly building the jobs.

Only this program's own snapshots are read back (pickle runs what it loads): the store is
the controller's, as trusted as its journal. A snapshot of another version is ignored
(``FORMAT``): the journal is replayed in full instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import io
import logging
import os
import pickle
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import phalanx.engine.engine as engine_module
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.engine import Event, Forget, Launch
from phalanx.live.accounting import AccountingTable, AcctRow
from phalanx.live.fleet import Fleet
from phalanx.live.journal import JournalError, StoreJournal
from phalanx.runtime.driver import Checkpoint, Driver
from phalanx.sched.job import Job

__all__ = [
    "MIN_JOB_AGE",
    "SNAPSHOT_EVERY",
    "SNAPSHOT_SECONDS",
    "Cadence",
    "Saved",
    "Snapshots",
    "collection_paused",
    "dump",
    "load",
]

log = logging.getLogger("phalanx.controller")

FORMAT: tuple[int, bool] = (6, not str(engine_module.__file__).endswith(".py"))
"""Bumped whenever what a snapshot holds changes shape (5: the engine's records, ``Shape`` and
three events are no longer frozen dataclasses; 6: ``Statuses.not_priority`` holds jobs, not
ids); with whether the scheduling core is compiled
(``tools/native.py``): its compiled classes pickle their state otherwise (a dict of attributes,
where Python's slots give a pair), so a snapshot of the other kind is ignored."""

SNAPSHOT_EVERY = 5_000
"""Inputs journaled between two snapshots (at most): a restart replays at most this many
(about half a second's work for the engine); saving one stops the controller for the
compaction and a fork (milliseconds), the rest is a niced child's."""
SNAPSHOT_SECONDS = 60.0
"""Seconds between two snapshots while inputs arrive (at most)."""
MIN_JOB_AGE: Duration = 300 * SECOND
"""How long an ended job stays in the controller's memory (Slurm's MinJobAge default)."""


@dataclass
class Saved:
    position: int
    """The journal position the state reflects: every input up to it, none after."""
    checkpoint: Checkpoint
    launches: list[Launch]
    """The launch of each run the fleet knew (its agents say, after a restart, which
    still run)."""


def _close_sockets() -> None:
    """In a forked child: let go of the parent's sockets (its database sessions, the
    leader's lock among them; its listening sockets), so that were the parent killed, the
    child does not keep its lock held, or its port taking connections, meanwhile. Files stay
    open: SQLite keeps its own table of them per process."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        with contextlib.suppress(OSError):
            if fd > 2 and stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)


def dump(saved: Saved) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump((FORMAT, saved))
    return out.getvalue()


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """No garbage collection inside (restored as it was after): while a restore builds the
    state, almost every object made lives on, and each collection would only scan the
    growing state again (a third of a restore's time). The collector catches up after."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def load(body: bytes) -> Saved | None:
    """The snapshot in ``body``, or None if it is of another format (or unreadable)."""
    try:
        with collection_paused():
            version, saved = pickle.loads(body)
    except Exception:  # a snapshot of another version's classes: replay in full instead
        return None
    if version != FORMAT or not isinstance(saved, Saved):
        return None
    return saved


_Setter = Callable[[object, object], None]
_FIELDS: dict[type, tuple[tuple[str, ...], tuple[_Setter, ...]] | None] = {}
"""Per class: its fields' names and slot setters, in order, if it is a frozen dataclass with
slots pickled by the ``__setstate__`` dataclasses give it (None if not)."""


def _fields(cls: type) -> tuple[tuple[str, ...], tuple[_Setter, ...]] | None:
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    found = None
    setstate = getattr(cls, "__setstate__", None)
    if getattr(setstate, "__name__", "") == "_dataclass_setstate":
        names = tuple(f.name for f in dataclasses.fields(cls))
        slots = {n: k.__dict__[n] for k in reversed(cls.__mro__) for n in k.__dict__}
        found = names, tuple(slots[name].__set__ for name in names)
    _FIELDS[cls] = found
    return found


def _frozen(cls: type, values: tuple[object, ...]) -> object:
    """A frozen dataclass with slots, from its field values in order (``_Pickler``)."""
    found = _fields(cls)
    assert found is not None
    obj: object = object.__new__(cls)
    # Slot setters write past the class's frozen ``__setattr__``, as its ``__init__`` does;
    # no ``__post_init__`` runs: the values are those it left.
    for setter, value in zip(found[1], values, strict=True):
        setter(obj, value)
    return obj


class _Pickler(pickle.Pickler):
    """``pickle``'s, but a frozen dataclass with slots is saved as its class and field values:
    the ``__setstate__`` dataclasses give such a class looks its fields up again for every
    object, and loads them 2 to 3 times slower."""

    def reducer_override(self, obj: Any) -> Any:
        found = _fields(type(obj))
        if found is None:
            return NotImplemented
        return _frozen, (type(obj), tuple(map(obj.__getattribute__, found[0])))


@dataclass(frozen=True)
class Cadence:
    every: int = SNAPSHOT_EVERY
    """Inputs between two snapshots (at most)."""
    seconds: float = SNAPSHOT_SECONDS
    """Seconds between two snapshots while inputs arrive (at most)."""
    min_job_age: Duration = MIN_JOB_AGE
    """How long an ended job stays in memory."""


class Snapshots:
    """When to save a snapshot, saving it, and restoring the last one, for one controller's
    driver and fleet (the journal is the driver's: snapshots only if it keeps them)."""

    def __init__(
        self,
        loop: Driver,
        fleet: Fleet,
        accounting: AccountingTable,
        record: Callable[[Job], str] | None,
        *,
        cadence: Cadence | None = None,
        reopen: Callable[[], StoreJournal] | None = None,
    ) -> None:
        """``record`` makes an ended job's accounting record (JSON); without it, no job is
        ever forgotten. ``reopen`` opens the journal's store anew: with it, a snapshot is
        pickled and saved by a forked child process (the state copied on write, as Redis's
        BGSAVE), so the controller does not stop for it; without it, in line."""
        self.loop = loop
        self.fleet = fleet
        self.accounting = accounting
        self.record = record
        self.cadence = cadence or Cadence()
        self.position = 0
        """The journal position of the last snapshot saved or restored (0: none)."""
        self._accepted = 0
        self._when = time.monotonic()
        self.reopen = reopen
        self._child: tuple[int, int] | None = None
        """(pid, position) of the child saving a snapshot now."""

    @property
    def journal(self) -> StoreJournal | None:
        journal = self.loop.journal
        return journal if isinstance(journal, StoreJournal) else None

    def restore(self) -> Iterator[Event] | None:
        """Put the last snapshot into the driver (and its runs into the fleet, which must
        be replaying) and return the journal's tail after it; None if there is none (the
        whole journal is to be replayed)."""
        journal = self.journal
        found = journal.load_snapshot() if journal is not None else None
        if journal is None or found is None:
            return None
        saved = load(found[1])
        if saved is None:
            log.warning("the snapshot is of another version: replaying the whole journal")
            return None
        self.loop.restore(saved.checkpoint)
        for launch in saved.launches:
            self.fleet.launch(launch, self.loop.last_at)
        self.position = saved.position
        return journal.read(saved.position)

    def recover(self, now: Instant) -> int:
        """``restore``, then replay the journal's tail after the snapshot (the whole journal
        if none) up to ``now``; return the inputs read. The collector waits during the load
        and the tail (``collection_paused``), not during a whole journal, whose cyclic
        garbage would pile up meanwhile."""
        with collection_paused():
            tail = self.restore()
        with collection_paused() if tail is not None else contextlib.nullcontext():
            return self.loop.replay(now, tail)

    def due(self) -> bool:
        """Whether enough inputs (or time, with inputs) went by since the last snapshot."""
        if self._child is not None:
            self.reap()  # no zombie left while inputs pause
        inputs = self.loop.accepted - self._accepted
        if inputs >= self.cadence.every:
            return True
        return inputs > 0 and time.monotonic() - self._when >= self.cadence.seconds

    def save(self, *, background: bool = True) -> list[Job] | None:
        """Forget the jobs past ``min_job_age`` (accounting stored first), then save the
        state (every accepted input handled: ``Driver.settle`` first) with the journal's
        position -- in a child process if ``background`` and ``reopen`` allow (``position``
        moves when it is done), else before returning. Return the jobs forgotten, or None
        (nothing forgotten or saved) if the store cannot take it, keeps no snapshots, or
        a child is still saving the last one."""
        journal = self.journal
        if journal is None:
            return None
        if self._child is not None and not self.reap(wait=not background):
            return None  # one at a time; the next step asks again
        background = background and self.reopen is not None
        try:
            forgotten = self._forget_old_jobs()
            self.loop.compact()
            position = journal.position()
            saved = Saved(
                position,
                self.loop.checkpoint(),
                [run.launch for run in self.fleet.runs.values()],
            )
            if background:
                self._fork(saved)
            else:
                journal.save_snapshot(position, dump(saved))
                self.position = position
        except JournalError as exc:
            log.warning("no snapshot: %s", exc)
            return None
        finally:
            self._accepted = self.loop.accepted
            self._when = time.monotonic()
        return forgotten

    def reap(self, *, wait: bool = False) -> bool:
        """Whether no child is saving a snapshot any more (waiting for it if ``wait``);
        the position moves to its snapshot's if it saved it."""
        if self._child is None:
            return True
        pid, position = self._child
        done, status = os.waitpid(pid, 0 if wait else os.WNOHANG)
        if done == 0:
            return False
        self._child = None
        if os.waitstatus_to_exitcode(status) == 0:
            self.position = max(self.position, position)
        else:
            log.warning(
                "the snapshot at position %d was not saved (the journal is whole)", position
            )
        return True

    def _fork(self, saved: Saved) -> None:
        reopen = self.reopen
        assert reopen is not None
        pid = os.fork()
        if pid == 0:  # the child: a copy of the state as it is now
            code = 1
            try:
                _close_sockets()
                # Behind the controller for the CPU: on a small machine they share cores.
                os.nice(10)
                body = dump(saved)
                target = reopen()
                target.save_snapshot(saved.position, body)
                target.close()
                code = 0
            finally:
                # No finalizers, no atexit: the parent's connections stay the parent's.
                os._exit(code)
        self._child = (pid, saved.position)

    def account(self, jobs: list[Job]) -> None:
        """Store the accounting records of ``jobs``, which have just ended, so that they
        can be read without a controller; a store that cannot take them is logged, and
        they are stored again before they are forgotten."""
        if self.record is None or not jobs:
            return
        try:
            self.accounting.archive(self._rows(jobs))
        except JournalError as exc:
            log.warning("accounting not stored: %s", exc)

    def _rows(self, jobs: list[Job]) -> list[AcctRow]:
        record = self.record
        assert record is not None
        return [
            AcctRow(
                j.id, j.array_job_id, j.array_task_id, j.spec.user, j.submit, j.end or 0,
                record(j),
            )
            for j in jobs
        ]  # fmt: skip

    def _forget_old_jobs(self) -> list[Job]:
        if self.record is None:
            return []
        horizon = self.loop.clock.now() - self.cadence.min_job_age
        jobs = self.loop.engine.jobs
        old = [j for j in jobs.values() if j.state.is_final and (j.end or 0) <= horizon]
        if old:
            # Again, though most were stored as they ended: none is forgotten unstored.
            self.accounting.archive(self._rows(old))
            # Journaled: a replay, and a standby following the journal, forget them at
            # this same point.
            self.loop.accept([Forget(self.loop.clock.now(), horizon)])
            self.loop.settle()
        return old
