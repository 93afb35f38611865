"""Nodes in and out of service: down (their agent gone), drained or downed by an administrator.

A node takes jobs only while it is up and carries no administrator's note. Slurm's states as
``sinfo`` shows them follow: a drained node with jobs is DRAINING, without DRAINED; an
administrator's DOWN stays down until resumed, whatever its agent says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mypy_extensions import mypyc_attr

from phalanx.domain.state import JobState
from phalanx.domain.time import Instant
from phalanx.engine.commands import Command, Kill
from phalanx.engine.decisions import DecisionLog, NodeFailure, NodeWentDown, NodeWentUp
from phalanx.engine.endings import Endings
from phalanx.engine.events import NodeUpdate
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy

__all__ = ["UPDATE_STATES", "NodeNote", "NodeStates", "Nodes"]

UPDATE_STATES = ("drain", "down", "resume")
"""What ``NodeUpdate.state`` may say (``undrain`` is ``resume`` to the engine)."""


@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass(frozen=True, slots=True)
class NodeNote:
    """Why an administrator (or a health check) took a node out of service."""

    state: str
    """``drain`` or ``down``."""
    reason: str
    user: str
    at: Instant

    def __reduce__(self) -> tuple[type[NodeNote], tuple[object, ...]]:
        # Pickled as a call of the class with its fields: compiled (tools/native.py), the
        # default unpickling would set them through the frozen class's ``__setattr__``.
        return NodeNote, (self.state, self.reason, self.user, self.at)


@mypyc_attr(allow_interpreted_subclasses=True)
class NodeStates:
    """Per node: whether its agent is up, and the administrator's note on it, if any."""

    def __init__(self, nodes: int) -> None:
        self._down = [False] * nodes
        self.notes: dict[int, NodeNote] = {}

    def serving(self, node: int) -> bool:
        """Whether the node may take new jobs."""
        return not self._down[node] and node not in self.notes

    def set_down(self, node: int, down: bool) -> None:
        self._down[node] = down

    def is_down(self, node: int) -> bool:
        """Down: its agent is gone, or an administrator set it DOWN."""
        note = self.notes.get(node)
        return self._down[node] or (note is not None and note.state == "down")

    def note(self, node: int, note: NodeNote | None) -> bool:
        """Set (or, with None, clear) the node's note; return whether it had one before."""
        had = node in self.notes
        if note is None:
            self.notes.pop(node, None)
        else:
            self.notes[node] = note
        return had


@mypyc_attr(allow_interpreted_subclasses=True)
class Nodes(NodeStates):
    """The engine's side of node events: jobs on a failed node end, a node out of service
    takes no new jobs (and its reservations go), one back in service asks for a pass."""

    def __init__(
        self,
        state: Occupancy,
        jobs: dict[int, Job],
        ending: Endings,
        decisions: DecisionLog,
        emit: Callable[[Command], None],
        clock: Callable[[], Instant],
        serving_changed: Callable[[int, bool], None],
    ) -> None:
        super().__init__(state.n)
        self._state = state
        self._jobs = jobs
        self._ending = ending
        self._decisions = decisions
        self._emit = emit
        self._clock = clock
        self._serving_changed = serving_changed

    def went_down(self, node: int) -> None:
        """Its agent is gone: its jobs fail."""
        self.set_down(node, True)
        self._serve(node)
        self._fail_jobs_on(node)

    def came_up(self, node: int) -> None:
        self.set_down(node, False)
        self._serve(node)

    def update(self, event: NodeUpdate) -> None:
        node = event.node
        if event.state == "resume":
            self.note(node, None)
            self._serve(node)
            return
        self.note(node, NodeNote(event.state, event.reason, event.user, event.at))
        self._serve(node)
        if event.state == "down" or event.kill:
            self._fail_jobs_on(node)

    def _serve(self, node: int) -> None:
        """Put the node in or out of service as its state now says."""
        serving = self.serving(node)
        if bool(self._state.up[node]) == serving:
            return
        self._state.set_up(node, serving)
        now = self._clock()
        self._decisions.add(NodeWentUp(now, node) if serving else NodeWentDown(now, node))
        self._serving_changed(node, serving)

    def _fail_jobs_on(self, node: int) -> None:
        """The node's running jobs end as on a node failure (requeued where they may be)."""
        now = self._clock()
        for jid, run in list(self._state.running.items()):
            job = self._jobs[jid]
            if (
                node in run.alloc.nodes
                and job.state is JobState.RUNNING
                and jid not in self._ending.failing
            ):
                self._ending.failing.add(jid)
                self._decisions.add(NodeFailure(now, jid, job.run, node))
                self._emit(Kill(jid, job.run))
