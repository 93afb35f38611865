"""Table cells as kubectl prints them: ages, pod status, job completions."""

from __future__ import annotations

import pytest

from phalanx.kube import kinds
from phalanx.kube.tables import age, human_duration, table

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (5, "5s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (400 * 86400, "400d"),
        (-5, "<invalid>"),
    ],
)
def test_human_duration(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_age_of_a_timestamp() -> None:
    assert age("2027-01-15T07:58:00Z", 1_800_000_000.0) == "2m"  # 1.8e9 s is 08:00:00Z
    assert age(None, NOW) == "<unknown>"
    assert age("not a time", NOW) == "<unknown>"


def test_pod_and_job_rows() -> None:
    pod = {
        "metadata": {"name": "p", "creationTimestamp": "2027-01-15T08:00:00Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "node1"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"ready": True, "restartCount": 2, "state": {"running": {}}},
                {
                    "ready": False,
                    "restartCount": 1,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                },
            ],
        },
    }
    kind = kinds.by_resource("", "pods")
    assert kind is not None
    t = table(kind, [pod], NOW)
    assert t["rows"][0]["cells"][:4] == ["p", "1/2", "CrashLoopBackOff", "3"]
    assert t["rows"][0]["cells"][6] == "node1"
    # after a restart, how long ago the last one ended (kube-apiserver's "3 (2m ago)")
    statuses = pod["status"]["containerStatuses"]
    statuses[1]["lastState"] = {"terminated": {"finishedAt": "2027-01-15T07:58:00Z"}}
    assert table(kind, [pod], 1_800_000_000.0)["rows"][0]["cells"][3] == "3 (2m ago)"
    job = {
        "metadata": {"name": "j"},
        "spec": {"completions": 4},
        "status": {"succeeded": 4, "conditions": [{"type": "Complete", "status": "True"}]},
    }
    jobs = kinds.by_resource("batch", "jobs")
    assert jobs is not None
    assert table(jobs, [job], NOW)["rows"][0]["cells"][:3] == ["j", "Complete", "4/4"]
