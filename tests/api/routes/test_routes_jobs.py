"""``/v1/jobs``: submit, list, show, cancel."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from routes_scene import CMD, ROOT, START, USER, Api, serve

from phalanx.api.routes import Access
from phalanx.client.wirecall import WireCaller
from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.associations import Association, Associations, Limits
from phalanx.live.controller import Controller
from phalanx.live.journal import MemoryJournal
from phalanx.policies.catalog import profile
from phalanx.runtime import FakeClock
from phalanx.slurm.sbatch import failure_lines

# ---------------------------------------------------------------------------- submit


def test_submit_one(api: Api) -> None:
    r = api.client.post("/v1/jobs", json={"command": CMD, "gpus_per_task": 8}, headers=USER)
    assert r.status_code == 201
    assert r.json() == {"job_ids": [[1]]}
    api.run()
    [job] = api.jobs()
    assert job["job_id"] == 1
    assert job["user"] == "nobody"  # the caller, known from the token
    assert job["state"] == "RUNNING"
    assert job["gpus"] == 8.0


def test_submit_a_batch_with_an_array(api: Api) -> None:
    r = api.client.post(
        "/v1/jobs/batch",
        json={"jobs": [{"command": CMD}, {"command": CMD, "array": "0-2"}, {"command": CMD}]},
        headers=USER,
    )
    assert r.status_code == 201
    assert r.json() == {"job_ids": [[1], [2, 3, 4], [5]]}
    api.run()
    assert [j["job_id"] for j in api.jobs()] == [1, 2, 3, 4, 5]
    tasks = [(j["array_job_id"], j["array_task_id"]) for j in api.jobs(ids="2")]
    assert tasks == [(2, 0), (2, 1), (2, 2)]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"command": CMD, "time": "soon"}, "time"),
        ({"command": CMD, "partition": "nope"}, "partition"),
        ({"command": CMD, "gpus_per_task": 9}, "resources"),  # 8-GPU nodes
        ({"command": CMD, "nodes": "2", "gpus_per_task": 9}, "resources"),
        ({"command": CMD, "mem": "4X"}, "mem"),
        ({"command": CMD, "array": "0-5000"}, "array"),
        ({"command": CMD, "dependency": "afterok:1?afterok:2"}, "dependency"),
        ({"command": CMD, "workdir": "rel"}, "workdir"),
        ({}, "command"),
        ({"command": []}, "command"),
        ({"command": CMD, "gpus_per_task": -1}, "gpus_per_task"),
        ({"command": CMD, "unknown": 1}, "unknown"),
    ],
)
def test_bad_submissions_name_the_field(api: Api, body: dict[str, Any], field: str) -> None:
    r = api.client.post("/v1/jobs", json=body, headers=USER)
    assert r.status_code == 422, r.text
    answer = r.json()
    assert answer["field"] == field
    assert isinstance(answer["error"], str) and answer["error"]
    assert api.journal.events == []
    api.run()
    assert api.jobs(all="true") == []


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"command": CMD, "time": "soon"}, "jobs.1.time"),
        ({"command": CMD, "gpus_per_task": 9}, "jobs.1.resources"),
        ({"command": CMD, "partition": "nope"}, "jobs.1.partition"),
        ({}, "jobs.1.command"),
    ],
)
def test_a_bad_job_in_a_batch_refuses_the_batch(api: Api, bad: dict[str, Any], field: str) -> None:
    body = {"jobs": [{"command": CMD}, bad, {"command": CMD}]}
    r = api.client.post("/v1/jobs/batch", json=body, headers=USER)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert api.journal.events == []  # nothing of the batch was queued
    api.run()
    assert api.jobs(all="true") == []


def test_what_slurm_queues_without_enforcement_is_queued(api: Api) -> None:
    # An unknown QOS (no AccountingStorageEnforce=qos) runs under "normal" and keeps its name;
    # more nodes than the partition has (no EnforcePartLimits) waits for PartitionConfig.
    [gold] = api.submit(qos="gold")
    [big] = api.submit(nodes="3")
    detail = api.client.get(f"/v1/jobs/{big}", headers=USER).json()
    assert (detail["state"], detail["reason"]) == ("PENDING", "PartitionConfig")
    detail = api.client.get(f"/v1/jobs/{gold}", headers=USER).json()
    assert (detail["state"], detail["qos"]) == ("RUNNING", "gold")


@pytest.mark.parametrize(
    ("body", "field"),
    [({"command": CMD, "qos": "nope"}, "qos"), ({"command": CMD, "nodes": "3"}, "nodes")],
)
def test_an_enforcing_cluster_refuses_unknown_qos_and_partition_limits(
    body: dict[str, Any], field: str
) -> None:
    cluster = dataclasses.replace(
        regular_cluster(2, 8, 2), enforce_part_limits=True, enforce_qos=True
    )
    controller = Controller(cluster, profile("phalanx"), MemoryJournal(), clock=FakeClock(START))
    with serve(controller, Access(tokens={"t-alice": "nobody"}, owner_uid=0)) as client:
        r = client.post("/v1/jobs", json=body, headers=USER)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


def test_a_submission_over_max_submit_jobs_is_refused_as_slurm_refuses_it() -> None:
    limited = Association("root", limits=Limits(max_submit=2))
    cluster = dataclasses.replace(
        regular_cluster(2, 8, 2),
        associations=Associations({("root", ""): limited}, {"root": None}),
    )
    controller = Controller(cluster, profile("phalanx"), MemoryJournal(), clock=FakeClock(START))
    with serve(controller, Access(tokens={"t-alice": "nobody"}, owner_uid=0)) as client:
        codes = [client.post("/v1/jobs", json={"command": CMD}, headers=USER) for _ in range(3)]
        assert [r.status_code for r in codes] == [201, 201, 422]
        answer = codes[2].json()
        assert answer["field"] == "limits" and "AssocMaxSubmitJobLimit" in answer["error"]
        lines = failure_lines(422, answer, {}, WireCaller())
        assert lines == [
            "sbatch: error: AssocMaxSubmitJobLimit",
            "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
            "(job submit limit, user's size and/or time limits)",
        ]


def test_a_full_journal_refuses_submissions_with_507(api: Api) -> None:
    api.journal.fail = True
    r = api.client.post("/v1/jobs", json={"command": CMD}, headers=USER)
    assert r.status_code == 507
    assert "submissions refused" in r.json()["error"]
    r = api.client.post("/v1/jobs/batch", json={"jobs": [{"command": CMD}]}, headers=USER)
    assert r.status_code == 507
    api.run()
    assert api.jobs(all="true") == []
    assert api.controller.loop.next_due() is None
    # Once the journal takes writes again, the ids are the ones never handed out.
    api.journal.fail = False
    assert api.submit() == [1]


# ---------------------------------------------------------------------------- queries


def test_job_list_filters(api: Api) -> None:
    [a] = api.submit(gpus_per_task=8, nodes="2", time="10")  # takes the whole cluster
    [b] = api.submit(headers=ROOT, gpus_per_task=1)
    c = api.submit(array="0-2", gpus_per_task=1)
    [d] = api.submit(headers=ROOT, hold=True)
    api.client.delete(f"/v1/jobs/{d}", headers=ROOT)
    api.run()
    assert api.state(a) == "RUNNING" and api.state(b) == "PENDING"
    assert api.state(d) == "CANCELLED"

    def ids(**params: Any) -> list[int]:
        return [j["job_id"] for j in api.jobs(**params)]

    assert ids() == [a, b, *c]  # finished jobs only with all
    assert ids(all="true") == [a, b, *c, d]
    assert ids(state="RUNNING") == [a]
    assert ids(state="pending") == [b, *c]
    assert ids(state="CANCELLED") == [d]
    assert ids(state="RUNNING,CANCELLED") == [a, d]
    assert ids(user="root") == [b]
    assert ids(user="root", all="true") == [b, d]
    assert ids(user="nobody") == [a, *c]
    assert ids(partition="gpu") == [a, b, *c]
    assert ids(partition="other") == []
    assert ids(ids=f"{b},{a}") == [b, a]
    assert ids(ids=str(c[0])) == c  # an array job id lists its tasks
    assert ids(ids="999") == []


def test_job_table_is_the_job_list_as_rows(api: Api) -> None:
    [a] = api.submit(gpus_per_task=8, nodes="2", time="10")
    [b] = api.submit(headers=ROOT, gpus_per_task=1)
    c = api.submit(array="0-2", gpus_per_task=1)
    [d] = api.submit(headers=ROOT, hold=True)
    api.client.delete(f"/v1/jobs/{d}", headers=ROOT)
    api.run()

    def table(**params: Any) -> list[dict[str, Any]]:
        r = api.client.get("/v1/jobs/table", params=params, headers=USER)
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"fields", "rows"}
        return [dict(zip(body["fields"], row, strict=True)) for row in body["rows"]]

    assert table() == api.jobs()  # every field by default
    assert table(all="true", user="root") == api.jobs(all="true", user="root")
    some = table(fields="state,job_id,nodelist,job_id", state="RUNNING,PENDING", partition="gpu")
    assert some == [
        {k: j[k] for k in ("state", "job_id", "nodelist")}
        for j in api.jobs(state="RUNNING,PENDING", partition="gpu")
    ]
    assert [j["job_id"] for j in some] == [a, b, *c]
    assert table(fields="job_id", ids=f"{c[0]}_1,{d}", all="true") == [
        {"job_id": c[1]},
        {"job_id": d},
    ]
    r = api.client.get("/v1/jobs/table", params={"fields": "job_id,colour"}, headers=USER)
    assert r.status_code == 422
    assert r.json()["field"] == "fields" and "colour" in r.json()["error"]
    assert api.client.get("/v1/jobs/table").status_code == 401


def test_bad_ids_are_refused(api: Api) -> None:
    r = api.client.get("/v1/jobs", params={"ids": "1,x"}, headers=USER)
    assert r.status_code == 422
    assert r.json()["field"] == "ids"


def test_job_list_by_array_task_id(api: Api) -> None:
    tasks = api.submit(array="0-2")
    one = [j["job_id"] for j in api.jobs(ids=f"{tasks[0]}_1")]
    assert one == [tasks[1]]


def test_one_job(api: Api) -> None:
    [a] = api.submit(name="one", comment="hi")
    r = api.client.get(f"/v1/jobs/{a}", headers=USER)
    assert r.status_code == 200
    info = r.json()
    assert (info["job_id"], info["name"], info["comment"]) == (a, "one", "hi")
    assert info["command"] == CMD and info["workdir"] == "/nonexistent"  # nobody's home


def test_unknown_job_is_404(api: Api) -> None:
    r = api.client.get("/v1/jobs/999", headers=USER)
    assert r.status_code == 404
    assert r.json() == {"error": "no job 999", "field": None}
    assert api.client.delete("/v1/jobs/999", headers=ROOT).status_code == 404


# ---------------------------------------------------------------------------- cancel


def test_cancel_ownership(api: Api) -> None:
    [mine] = api.submit(gpus_per_task=1)
    [roots] = api.submit(headers=ROOT, gpus_per_task=1)
    [other] = api.submit(gpus_per_task=1)

    r = api.client.delete(f"/v1/jobs/{roots}", headers=USER)
    assert r.status_code == 403
    assert "root" in r.json()["error"]
    assert api.journal.events[-1].__class__.__name__ == "Submit"  # nothing journaled

    r = api.client.delete(f"/v1/jobs/{mine}", headers=USER)
    assert r.status_code == 200
    assert r.json() == {"cancelled": [mine]}

    r = api.client.delete(f"/v1/jobs/{other}", headers=ROOT)  # root may cancel anyone's
    assert r.status_code == 200
    assert r.json() == {"cancelled": [other]}
    api.run()
    assert api.state(roots) == "RUNNING"


def test_cancel_of_a_pending_job_ends_it_and_again_cancels_nothing(api: Api) -> None:
    [mine] = api.submit(hold=True)
    assert api.state(mine) == "PENDING"
    assert api.client.delete(f"/v1/jobs/{mine}", headers=USER).json() == {"cancelled": [mine]}
    api.run()
    assert api.state(mine) == "CANCELLED"
    assert api.client.delete(f"/v1/jobs/{mine}", headers=USER).json() == {"cancelled": []}


def test_cancel_of_an_array_cancels_every_task(api: Api) -> None:
    tasks = api.submit(array="0-3", hold=True)
    r = api.client.delete(f"/v1/jobs/{tasks[0]}", headers=USER)
    assert r.json() == {"cancelled": tasks}
    api.run()
    assert {api.state(t) for t in tasks} == {"CANCELLED"}


# ---------------------------------------------------------------------------- test-only, update


def test_test_only_says_when_and_where_without_queueing(api: Api) -> None:
    r = api.client.post("/v1/jobs/test", json={"command": CMD, "gpus_per_task": 8}, headers=USER)
    assert r.status_code == 200, r.text
    now = r.json()
    assert now["job_id"] == 1 and now["start"] == START and now["partition"] == "gpu"
    assert len(now["nodes"]) == 1 and now["nodes"][0].startswith("gpu00") and now["cpus"] > 0
    assert api.journal.events == []  # nothing queued
    [big] = api.submit(gpus_per_task=8, nodes="2", time="10")  # the cluster for 10 minutes
    ends = api.client.get(f"/v1/jobs/{big}", headers=USER).json()["start"] + 10 * 60_000
    body = {"command": CMD, "gpus_per_task": 1}
    later = api.client.post("/v1/jobs/test", json=body, headers=USER).json()
    assert later["job_id"] == 2 and later["start"] == ends
    r = api.client.post("/v1/jobs/test", json={"command": CMD, "gpus_per_task": 9}, headers=USER)
    assert r.status_code == 422 and r.json()["field"] == "resources"


def test_update_changes_the_time_limit_or_says_what_is_missing(api: Api) -> None:
    [job] = api.submit(time="10")
    r = api.client.patch(f"/v1/jobs/{job}", json={"time": "5"}, headers=USER)
    assert r.status_code == 200 and r.json() == {"changed": [job]}
    api.run()
    assert api.client.get(f"/v1/jobs/{job}", headers=USER).json()["time_limit_ms"] == 5 * 60_000
    r = api.client.patch(f"/v1/jobs/{job}", json={}, headers=USER)
    assert r.status_code == 422 and r.json()["field"] == "time"
    r = api.client.patch(f"/v1/jobs/{job}", json={"time": "soon"}, headers=USER)
    assert r.status_code == 422


@pytest.mark.parametrize(
    ("change", "field"),
    [
        # 10^30 minutes was taken, then every 'scontrol show job' of it raised OverflowError.
        ({"time": "9" * 30}, "time"),
        ({"priority": 1e30}, "priority"),
        ({"priority": -1}, "priority"),
    ],
)
def test_an_update_past_the_bounds_is_refused(api: Api, change: dict[str, Any], field: str) -> None:
    [job] = api.submit(time="10")
    r = api.client.patch(f"/v1/jobs/{job}", json=change, headers=ROOT)
    assert r.status_code == 422 and r.json()["field"] == field


def test_a_nan_priority_is_refused(api: Api) -> None:
    # Python's JSON reader takes NaN: it would have been a priority no order can place.
    [job] = api.submit(time="10")
    body = b'{"priority": NaN}'
    headers = {**ROOT, "Content-Type": "application/json"}
    r = api.client.patch(f"/v1/jobs/{job}", content=body, headers=headers)
    assert r.status_code == 422


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"nice": 10**30}, "nice"),  # overflowed the int64 priority columns mid-submission
        ({"nice": -2_147_483_646}, "nice"),
        ({"time": "9" * 30}, "time"),
    ],
)
def test_a_submission_past_the_bounds_is_refused(
    api: Api, fields: dict[str, Any], field: str
) -> None:
    r = api.client.post("/v1/jobs", json={"command": CMD, **fields}, headers=USER)
    assert r.status_code == 422 and r.json()["field"] == field, r.text


def test_an_idempotency_key_makes_a_retried_submission_return_the_first_ids(api: Api) -> None:
    body = {"command": CMD}
    key = {**USER, "Idempotency-Key": "k-123"}
    first = api.client.post("/v1/jobs", json=body, headers=key)
    again = api.client.post("/v1/jobs", json=body, headers=key)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    batch = {"jobs": [body, body]}
    one = api.client.post("/v1/jobs/batch", json=batch, headers={**USER, "Idempotency-Key": "b"})
    two = api.client.post("/v1/jobs/batch", json=batch, headers={**USER, "Idempotency-Key": "b"})
    assert one.json() == two.json() and len(one.json()["job_ids"]) == 2
    api.run()
    assert len(api.jobs()) == 3
    r = api.client.post("/v1/jobs/batch", json=batch, headers=key)
    assert r.status_code == 409  # the key of another request (of one job)
