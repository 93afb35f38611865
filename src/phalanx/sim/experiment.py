"""Experiments: replay one workload on one cluster under several policies and collect results.

The library behind ``phalanx simulate``, ``bench/`` and any later tool::

    workload = trace_workload("philly.csv", options=TraceOptions(limit=300, load=2))
    cluster = uniform_cluster(16, 8, 4)
    results = run_experiment(Experiment(workload, cluster, [profile("slurm"), profile("phalanx")]))
    results["phalanx"].metrics.wait_by_size["9-64"].mean_s

Recipe of ``run_experiment``: for each profile, in order, a fresh ``Simulator`` over the same
workload and cluster; its run summarised (``phalanx.sim.metrics``), with the per-account figures
and the run record itself kept when asked. Policies are independent of one another, so a later
version may run them in parallel; results stay keyed and ordered by profile name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from phalanx.config.clusterspec import cluster_from_yaml, regular_cluster
from phalanx.config.textfile import read_text
from phalanx.domain.cluster import Cluster
from phalanx.domain.time import HOUR, SECOND
from phalanx.errors import TraceError
from phalanx.sched.profile import Profile
from phalanx.sim.executor import CHECKPOINT_RESTORE_MS, CHECKPOINT_SAVE_MS
from phalanx.sim.faults import FaultModel
from phalanx.sim.generator import generate
from phalanx.sim.metrics import PolicyMetrics, per_account, summarize, to_json_dict
from phalanx.sim.records import RunRecord
from phalanx.sim.report import write_json
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces import guess_format, openb_cluster, read_trace
from phalanx.sim.traces.options import NO_OPTIONS, TraceOptions, select
from phalanx.sim.workload import TraceJob

__all__ = [
    "OPENB_NODE_LIST",
    "ClusterChoice",
    "Experiment",
    "PolicyResult",
    "Progress",
    "Workload",
    "cluster_file",
    "generated_workload",
    "openb_node_list",
    "rejected_examples",
    "run_experiment",
    "trace_workload",
    "uniform_cluster",
    "write_results",
]

OPENB_NODE_LIST = "openb_node_list_gpu_node.csv"
"""The node list an openb trace is replayed on when no cluster is named: next to the trace."""
_REJECTED_EXAMPLES = 5


# -- the workload -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    jobs: list[TraceJob]
    label: str
    """The trace's file name, or how the workload was generated."""
    source: str
    """The trace's path, or ``generate:DAYS``."""
    fmt: str | None
    """The trace format; None for a generated workload."""
    options: TraceOptions = NO_OPTIONS


def trace_workload(
    path: str, fmt: str | None = None, options: TraceOptions = NO_OPTIONS
) -> Workload:
    """The jobs of the trace at ``path`` (format named or guessed), ``options`` applied.

    Raises ``TraceError`` naming the file (and line, field) when it is missing or malformed.
    """
    if not os.path.isfile(path):
        raise TraceError("no such trace file", source=path)
    fmt = fmt or guess_format(path)
    jobs = read_trace(path, fmt, options)
    return Workload(jobs, os.path.basename(path), path, fmt, options)


def generated_workload(days: float, options: TraceOptions = NO_OPTIONS) -> Workload:
    """The seeded synthetic workload of ``days`` days (seed ``options.seed``), with the same
    selection (limit, window, load) as a trace."""
    jobs = generate(options.seed, days=days)
    kept = [replace(jobs[i], submit=at) for i, at in select([j.submit for j in jobs], options)]
    label = f"generated ({days:g} days, seed {options.seed})"
    return Workload(kept, label, f"generate:{days:g}", None, options)


# -- the cluster ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterChoice:
    cluster: Cluster
    source: str
    """The YAML file, the openb node list, or ``--nodes``."""

    def facts(self) -> dict[str, Any]:
        """Size and shape, for titles and the JSON report."""
        nodes = self.cluster.nodes
        per_node = {node.gpus for node in nodes}
        leaf = max((len(leaf.children) for leaf in self.cluster.leaves), default=len(nodes))
        return {
            "name": self.cluster.name,
            "source": self.source,
            "nodes": len(nodes),
            "gpus": self.cluster.total_gpus,
            "gpus_per_node": per_node.pop() if len(per_node) == 1 else None,
            "nodes_per_switch": leaf,
            "leaves": len(self.cluster.leaves),
        }


def uniform_cluster(nodes: int, gpus_per_node: int, nodes_per_switch: int) -> ClusterChoice:
    """``nodes`` equal nodes under leaf switches of ``nodes_per_switch`` nodes."""
    return ClusterChoice(regular_cluster(nodes, gpus_per_node, nodes_per_switch), "--nodes")


def cluster_file(path: str) -> ClusterChoice:
    """The cluster described by the YAML file at ``path``."""
    return ClusterChoice(cluster_from_yaml(read_text(path), path), path)


def openb_node_list(trace: str, nodes_per_switch: int | None = None) -> ClusterChoice:
    """The node list that sits next to an openb trace (``OPENB_NODE_LIST``)."""
    node_list = os.path.join(os.path.dirname(trace), OPENB_NODE_LIST)
    if nodes_per_switch is None:
        return ClusterChoice(openb_cluster(node_list), node_list)
    return ClusterChoice(openb_cluster(node_list, nodes_per_switch), node_list)


# -- running ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """One workload on one cluster under ``profiles`` (run in this order)."""

    workload: Workload
    cluster: ClusterChoice
    profiles: Sequence[Profile]
    faults: FaultModel | None = None
    mfu: float = 0.4
    checkpoint_save_ms: int = CHECKPOINT_SAVE_MS
    """Time a job that checkpoints on SIGTERM takes to save before it exits."""
    checkpoint_restore_ms: int = CHECKPOINT_RESTORE_MS
    """Time a resumed job takes to load its checkpoint."""
    keep_runs: bool = False
    """Keep each run's record (with its segments), e.g. for plots."""
    per_account: bool = False
    """Summarise each account too (needs the segments, kept for that alone)."""


@dataclass(frozen=True)
class PolicyResult:
    metrics: PolicyMetrics
    rejected_examples: list[str]
    """The first few rejected jobs, with their trace id and line where known."""
    accounts: Mapping[str, PolicyMetrics] = field(default_factory=dict)
    run: RunRecord | None = None


class Progress(Protocol):
    """What ``run_experiment`` reports as it goes (``phalanx.cli.progress.RunProgress``)."""

    def start(self, policy: str, total: int) -> Callable[[int, int], None] | None:
        """A policy begins; returns the callback fed (finished, total) jobs, or None."""
        ...

    def finished(self, policy: str, jobs: int, wall_s: float) -> None:
        """A policy is done: ``jobs`` jobs in ``wall_s`` seconds of the simulator's time."""
        ...


class _Silent:
    def start(self, policy: str, total: int) -> Callable[[int, int], None] | None:
        return None

    def finished(self, policy: str, jobs: int, wall_s: float) -> None:
        return None


def run_experiment(
    experiment: Experiment, progress: Progress | None = None
) -> dict[str, PolicyResult]:
    """Run every profile of ``experiment``; results by profile name, in the profiles' order."""
    watch: Progress = _Silent() if progress is None else progress
    workload = experiment.workload
    keep_segments = experiment.keep_runs or experiment.per_account
    results: dict[str, PolicyResult] = {}
    for prof in experiment.profiles:
        simulator = Simulator(
            experiment.cluster.cluster,
            prof,
            workload.jobs,
            faults=experiment.faults,
            mfu=experiment.mfu,
            keep_segments=keep_segments,
            checkpoint_save_ms=experiment.checkpoint_save_ms,
            checkpoint_restore_ms=experiment.checkpoint_restore_ms,
        )
        record = simulator.run(progress=watch.start(prof.name, len(workload.jobs)))
        metrics = summarize(record)
        watch.finished(prof.name, metrics.jobs, record.sim_wall_s)
        results[prof.name] = PolicyResult(
            metrics=metrics,
            rejected_examples=rejected_examples(record, workload.jobs),
            accounts=per_account(record) if experiment.per_account else {},
            run=record if experiment.keep_runs else None,
        )
    return results


def rejected_examples(record: RunRecord, workload: Sequence[TraceJob]) -> list[str]:
    """The first few rejected jobs, with their trace id and line where they can be told."""
    source = _trace_jobs_by_id(record, workload)
    out = []
    for job in record.jobs:
        if job.rejected is None:
            continue
        origin = source.get(job.job_id)
        if origin is None:
            out.append(str(job.job_id))
        else:
            where = origin.trace_id + ("" if origin.line is None else f", line {origin.line}")
            out.append(f"{job.job_id} ({where})")
        if len(out) == _REJECTED_EXAMPLES:
            break
    return out


def _trace_jobs_by_id(record: RunRecord, workload: Sequence[TraceJob]) -> dict[int, TraceJob]:
    """Engine job id -> the trace job it came from, when every trace job made one job.

    The simulator submits jobs in (submit, position) order and numbers them in that order, so
    the records (kept in submission order) pair with the sorted workload one to one. A job array
    would make several records of one trace job; then nothing is paired rather than guessed.
    """
    if len(record.jobs) != len(workload):
        return {}
    order = sorted(range(len(workload)), key=lambda i: (workload[i].submit, i))
    return {job.job_id: workload[i] for job, i in zip(record.jobs, order, strict=True)}


# -- the record of an experiment --------------------------------------------------------------


def write_results(path: str, experiment: Experiment, results: Mapping[str, PolicyResult]) -> None:
    """The JSON of ``phalanx simulate --json``: every figure per policy, and what was run
    (trace, cluster facts, selection options, MFU, faults; per-account figures when kept)."""
    options = experiment.workload.options
    faults = experiment.faults
    extra: dict[str, Any] = {
        "trace": experiment.workload.source,
        "trace_format": experiment.workload.fmt,
        "cluster": experiment.cluster.facts(),
        "load": options.load,
        "seed": options.seed,
        "limit": options.limit,
        "window_ms": None if options.window is None else list(options.window),
        "mfu": experiment.mfu,
        "checkpoint_save_s": experiment.checkpoint_save_ms / SECOND,
        "checkpoint_restore_s": experiment.checkpoint_restore_ms / SECOND,
        "faults": None
        if faults is None
        else {
            "mtbf_hours": None if faults.mtbf is None else faults.mtbf / HOUR,
            "repair_hours": faults.repair / HOUR,
            "gpu_mtbf_hours": None if faults.gpu_mtbf is None else faults.gpu_mtbf / HOUR,
            "gpu_repair_hours": faults.gpu_repair / HOUR,
            "fatal_fraction": faults.fatal_fraction,
        },
    }
    if experiment.per_account:
        extra["accounts"] = {
            policy: {account: to_json_dict(m) for account, m in result.accounts.items()}
            for policy, result in results.items()
        }
    write_json(path, {name: r.metrics for name, r in results.items()}, extra=extra)
