"""The REST API fuzzed with schemathesis (the owner's token, every operation, the agent
endpoints included), bounded: no answer is a 5xx, and afterwards the cluster still works
(its agents were not displaced, a submitted job runs to COMPLETED).

Requests that start jobs have their paths pinned under this test's directory and an empty
``PATH``, so that generated jobs (they run as the owner) cannot write or run anything
outside it; everything else is as generated.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402

from phalanx.server.localcluster import LocalCluster, cluster_yaml  # noqa: E402
from phalanx.server.statedir import StateDir  # noqa: E402

EXAMPLES = 200
BUDGET_S = 35.0
"""Generated requests past this are not sent (a 2-core machine shared with others)."""
_PINNED = ("workdir", "output", "error")


def _pin(body: Any, where: Path) -> None:
    """Keep what a generated job would write, and what it could run, inside ``where``."""
    if isinstance(body, list):
        for item in body:
            _pin(item, where)
        return
    if not isinstance(body, dict):
        return
    if "jobs" in body:
        _pin(body["jobs"], where)
    if "command" in body or "script" in body:
        for key in _PINNED:
            if key in body or key == "workdir":
                body[key] = str(where / "out") if key != "workdir" else str(where)
        body["environment"] = {"PATH": str(where / "empty")}


def _on_node(pair: tuple[Any, str]) -> Any:
    """A generated agent request, for a node of the cluster."""
    case, node = pair
    if isinstance(case.body, dict) and "node" in case.body:
        case.body["node"] = node
    if case.path_parameters and "node" in case.path_parameters:
        case.path_parameters["node"] = node
    return case


def test_fuzzing_the_api_leaves_a_working_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the controller's and agents' own directory too
    (tmp_path / "empty").mkdir()
    state = tmp_path / "state"
    with LocalCluster(state, cluster_yaml(2, 8)) as cluster:
        agents = StateDir(state).live_agents()
        port = (state / "controller.port").read_text().strip()
        base = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {(state / 'token').read_text().strip()}"}
        schema = schemathesis.openapi.from_url(f"{base}/openapi.json", headers=auth)
        # The agent endpoints also for the real nodes: generated incarnations that try to
        # take them (as the fuzzing in the issue did) or to poll their commands.
        agent_ops = [
            schema["/v1/agents/register"]["POST"],
            schema["/v1/agents/{node}/commands"]["GET"],
            schema["/v1/agents/{node}/reports"]["POST"],
        ]
        real_nodes = st.sampled_from(["node1", "node2"])
        cases = st.one_of(
            schema.as_strategy(GenerationMode.POSITIVE),
            schema.as_strategy(GenerationMode.NEGATIVE),
            *[
                st.tuples(op.as_strategy(path_parameters={"node": "node1"}), real_nodes).map(
                    _on_node
                )
                for op in agent_ops
            ],
        )
        statuses: list[tuple[str, str, int]] = []
        start = time.monotonic()

        @given(case=cases)
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,  # a fixed seed: the same requests every run
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: Any) -> None:
            if time.monotonic() - start > BUDGET_S:
                return
            _pin(case.body, tmp_path)
            response = case.call(base_url=base, headers=auth, timeout=70)
            statuses.append((case.method, case.path, response.status_code))
            assert response.status_code < 500, (case.method, case.path, response.text)

        fuzz()
        print(Counter(code for _, _, code in statuses), len(statuses), "requests")
        assert len(statuses) >= 100, f"only {len(statuses)} requests in {BUDGET_S} s"
        # Generated agents did try the real nodes, and were refused.
        refused = [p for m, p, code in statuses if p.startswith("/v1/agents") and code == 409]
        assert refused
        assert len({(m, p) for m, p, _ in statuses}) >= 15  # most operations were reached
        # The agents were neither displaced nor fenced, and still get their launches.
        assert StateDir(state).live_agents() == agents
        cluster.wait_agents()
        # Generated administrator's calls may have drained or downed nodes (as they may):
        # an administrator resumes them, and the cluster works again.
        noted = [n["name"] for n in cluster.call("GET", "/v1/nodes") if n["reason_user"]]
        if noted:
            cluster.call("PATCH", "/v1/nodes", body={"nodes": noted, "state": "resume"})
        out = tmp_path / "after-fuzz.txt"
        [job_id] = cluster.submit(
            command=["sh", "-c", f"echo done > {out}"],
            workdir=str(tmp_path),
            environment={"PATH": "/usr/bin:/bin"},
            output="/dev/null",
        )
        [job] = cluster.wait([job_id], timeout=60)
        assert job["state"] == "COMPLETED", job
        assert out.read_text() == "done\n"
    assert "Traceback" not in cluster.log_tail("controller", 2000)
