"""The service port the routes call: what the live controller offers the API.

Its values are typed: domain values (``JobSpec``, ``Job``, ``Forecast``, ``StepSpec``,
``ShareRow``) and the agent protocol's models, which the controller shares with the agents;
never the API's own wire schemas, which the live layer does not import. The routes turn
them into wire bodies (``phalanx.api.convert``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Protocol

from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster
from phalanx.domain.fairshare import ShareRow
from phalanx.domain.forecast import Forecast
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.jobstep import StepRecord, StepSpec
from phalanx.domain.rusage import RunUsage
from phalanx.domain.time import Instant
from phalanx.engine.nodes import NodeNote
from phalanx.protocol.agent import (
    AgentCommand,
    AgentFault,
    AgentHello,
    AgentReports,
    NodeFacts,
)
from phalanx.sched.job import Job

__all__ = ["Figures", "Service", "StepView"]


class Figures(Protocol):
    @property
    def durations(self) -> list[float]: ...

    @property
    def submitted(self) -> int: ...

    @property
    def passes(self) -> int: ...


class StepView(Protocol):
    @property
    def job_id(self) -> int: ...

    @property
    def step(self) -> int: ...

    @property
    def tasks(self) -> int: ...

    @property
    def nodes(self) -> Mapping[str, AgentCommand]:
        """Node name -> the launch of the step's tasks there."""
        ...

    @property
    def state(self) -> str: ...

    @property
    def exit_code(self) -> int: ...

    @property
    def signal(self) -> int: ...

    @property
    def failure(self) -> str: ...

    @property
    def waiting(self) -> Set[str]:
        """The nodes whose tasks have not all ended yet."""
        ...

    @property
    def usage(self) -> RunUsage | None:
        """What the tasks used, over the nodes that told so far."""
        ...

    def record(self, run_ended: Instant | None = None) -> StepRecord:
        """The step as accounting shows it (``run_ended``: as its run's end leaves it)."""
        ...


class Service(Protocol):
    """What the routes call; the live ``Controller`` implements it. Called from the event
    loop's thread only. Refusals are ``PhalanxError``s (``NotFound``, ``NotAllowed``,
    ``Conflict``, ``SpecError``, ``StateStoreError``), which the routes answer as 4xx/507."""

    @property
    def cluster(self) -> Cluster: ...

    @property
    def id(self) -> str: ...

    @property
    def stats(self) -> Figures: ...

    @property
    def agent_lease_s(self) -> float:
        """How long an agent keeps its tasks without reaching the controller."""
        ...

    def check(self, spec: JobSpec) -> None:
        """Raise ``SpecError`` for a request that can never run here."""
        ...

    def submit(self, specs: Sequence[JobSpec], key: str = "") -> list[list[int]]:
        """Queue ``specs`` (each passed ``check``): per spec, its job ids (an array's
        tasks); ``StateStoreError`` when the journal cannot take them."""
        ...

    def will_run(self, spec: JobSpec) -> Forecast:
        """``sbatch --test-only`` for ``spec`` (passed ``check``); ``SpecError`` if no
        placement is possible."""
        ...

    def cancel(self, job_id: int, caller: Caller) -> list[int]: ...

    def job(self, job_id: int) -> Job: ...

    def update(
        self,
        job_id: int,
        caller: Caller,
        *,
        hold: bool | None = None,
        time_limit: int | None = None,
        priority: float | None = None,
    ) -> list[int]: ...

    def requeue(self, job_id: int, caller: Caller) -> list[int]: ...

    def priorities(self) -> list[Job]: ...

    def signal(
        self, job_id: int, caller: Caller, signal: int, target: str = "steps"
    ) -> list[int]: ...

    def start_step(self, job_id: int, caller: Caller, request: StepSpec) -> StepView:
        """``srun`` in the running job ``job_id``: ``NotAllowed`` for another user's job,
        ``Conflict`` if it is not running, ``SpecError`` for a step its allocation cannot
        hold."""
        ...

    async def step_info(self, job_id: int, step_no: int, wait: float) -> StepView: ...

    def kill_step(self, job_id: int, step_no: int, caller: Caller) -> None: ...

    def running_steps(self, job_ids: Iterable[int] | None = None) -> Sequence[StepView]:
        """The steps of the jobs running now (of ``job_ids`` only, if given), by job and step
        number. An ended job's steps are on the job (``Job.steps``)."""
        ...

    def fairshare(self) -> list[ShareRow]:
        """The fair-share tree as of now, parents before children."""
        ...

    def jobs(
        self,
        *,
        finished: bool = False,
        states: Iterable[str] | None = None,
        user: str | None = None,
        partition: str | None = None,
        ids: Iterable[int | tuple[int, int]] | None = None,
    ) -> list[Job]: ...

    def finished(
        self,
        *,
        user: str | None = None,
        since: Instant | None = None,
        until: Instant | None = None,
        ids: Iterable[int | tuple[int, int]] | None = None,
    ) -> list[Job]: ...

    def archived(
        self,
        *,
        user: str | None = None,
        since: Instant | None = None,
        until: Instant | None = None,
        ids: Iterable[int | tuple[int, int]] | None = None,
    ) -> list[str]:
        """Accounting records (JSON, as ``acct_record`` makes them) of ended jobs no longer
        in memory, filtered as ``finished`` filters jobs."""
        ...

    def register(self, hello: AgentHello) -> tuple[int, list[tuple[int, int]]]:
        """Admit an agent incarnation: its epoch, and the runs whose end is journaled
        (``Fenced`` if it may not hold the node)."""
        ...

    def reports(self, node: str, body: AgentReports) -> list[tuple[int, int]]:
        """Ended runs (and an inventory) from the node's holder; ``Fenced`` from others."""
        ...

    async def commands(
        self,
        node: str,
        boot_id: str,
        epoch: int,
        after: int,
        wait: float,
        health: NodeFacts | None = None,
    ) -> list[AgentCommand]:
        """The holder's commands after ``after`` (waiting up to ``wait`` s for some);
        ``health`` (``cpu_load``, ``free_mem_mb``) updates its node's facts. ``Fenced`` for
        anyone else."""
        ...

    def node_down(self, name: str) -> bool: ...

    def fault(self, node: str, body: AgentFault) -> None:
        """The node's holder found a fault: drain the node (``Fenced`` for anyone else)."""
        ...

    def update_nodes(
        self, names: Sequence[str], state: str, reason: str, caller: Caller, *, kill: bool = False
    ) -> None:
        """Drain, down or resume nodes (``scontrol update NodeName=...``); ``NotAllowed``
        for a caller who is not an administrator, ``NotFound`` for an unknown node,
        ``Conflict`` to resume a node in service, ``SpecError`` without a reason."""
        ...

    def change_accounting(
        self,
        caller: Caller,
        verb: str,
        entity: str,
        names: Sequence[str],
        where: Sequence[tuple[str, str]],
        settings: Sequence[tuple[str, str]],
    ) -> list[str]:
        """``sacctmgr add|modify|delete account|user|qos``: checked, journaled and applied;
        the lines sacctmgr prints. ``NotAllowed`` for a caller who is not an administrator,
        ``SpecError`` (sacctmgr's message) for a change it refuses."""
        ...

    def node_note(self, name: str) -> NodeNote | None:
        """Why the node is drained or downed (state, reason, user, at), if it is."""
        ...

    def agent_registered(self, name: str) -> bool: ...

    def node_facts(self, name: str) -> NodeFacts:
        """``NodeInfo``'s fields from the node's agent (address, arch, os, boot_time,
        agent_start, cpu_load, free_mem_mb); empty without a registered agent."""
        ...

    def node_mem_alloc(self) -> list[int]:
        """Per node: memory (MB) held by jobs now."""
        ...

    def node_usage(self) -> list[tuple[float, int]]:
        """Per node: GPUs and CPUs allocated now."""
        ...

    def counts(self) -> Mapping[tuple[str, str], int]: ...

    def efficiency(self, window_ms: int) -> tuple[float, float]:
        """eta_sched and theta_overhead over the last ``window_ms``."""
        ...
