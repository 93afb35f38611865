"""Hypothesis: for any sequence of engine state changes, a Job's status counts equal its
pods' phases, never more than parallelism pods are active, never more than completions
succeed, and no engine job is submitted twice."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.domain.state import JobState
from phalanx.testing.workloads import Bench
from phalanx.workloads import job as kjob
from phalanx.workloads.plan import Context

T0 = 1_764_613_704_000
MOVES = st.sampled_from(
    [
        JobState.RUNNING,
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.TIMEOUT,
        JobState.OUT_OF_MEMORY,
        JobState.NODE_FAIL,
        JobState.PENDING,
    ]
)


def make(parallelism: int, completions: int | None, indexed: bool, backoff: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "backoffLimit": backoff,
        "template": {"spec": {"containers": [{"name": "c", "command": ["true"]}]}},
    }
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": spec,
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parallelism=st.integers(1, 4),
    completions=st.one_of(st.none(), st.integers(1, 6)),
    indexed=st.booleans(),
    backoff=st.integers(0, 4),
    moves=st.lists(
        st.lists(st.tuples(st.integers(0, 30), MOVES), min_size=1, max_size=3), max_size=30
    ),
)
def test_status_matches_pods(
    parallelism: int,
    completions: int | None,
    indexed: bool,
    backoff: int,
    moves: list[list[tuple[int, JobState]]],
) -> None:
    if indexed and completions is None:
        completions = parallelism
    bench = Bench(make(parallelism, completions, indexed, backoff))
    now = T0
    submitted: list[str] = []

    def step() -> None:
        plan = kjob.reconcile(
            bench.obj, list(bench.pods.values()), bench.engine(), now, Context(), bench.names
        )
        submitted.extend(s.key for s in plan.submit if s.key not in bench.keys)
        bench.apply(plan)
        status = bench.obj.get("status") or {}
        phases = list(bench.phases().values())
        active = sum(p in ("Pending", "Running") for p in phases)
        assert status.get("active", 0) == active <= parallelism
        assert status.get("succeeded", 0) == phases.count("Succeeded")
        assert status.get("failed", 0) == phases.count("Failed")
        assert status.get("ready", 0) == phases.count("Running")
        if completions is not None:
            assert phases.count("Succeeded") <= completions
            assert active <= completions - phases.count("Succeeded")
        if indexed:
            done = [p for p in bench.pods.values() if p["status"]["phase"] == "Succeeded"]
            idx = [
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                for p in done
            ]
            assert len(idx) == len(set(idx))  # an index succeeds once

    step()
    for batch in moves:  # engine changes that happen between two reconciles
        now += 1000
        live = [n for n, p in sorted(bench.phases().items()) if p in ("Pending", "Running")]
        for pick, state in batch:
            if not live:
                break
            job_id = bench.job_of(live[pick % len(live)])
            current = bench.jobs[job_id].state
            if current in (JobState.PENDING, JobState.RUNNING):
                if state is not JobState.PENDING and current is JobState.PENDING:
                    bench.move(job_id, JobState.RUNNING, now)
                bench.move(job_id, state, now)
        step()
    assert len(submitted) == len(set(submitted))
    assert len(bench.jobs) == len(set(bench.keys.values()))
