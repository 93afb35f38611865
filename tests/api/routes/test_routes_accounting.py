"""``/v1/accounting``, ``/v1/priority``, ``/v1/fairshare``."""

from __future__ import annotations

from routes_scene import START, USER, Api

from phalanx.domain.time import MINUTE


def test_accounting_lists_jobs_once_they_end(api: Api) -> None:
    [ran] = api.submit(gpus_per_task=2)
    [waits] = api.submit(hold=True)
    assert api.client.get("/v1/accounting", headers=USER).json() == []
    api.clock.advance(MINUTE)
    ended_at = api.clock.now()
    api.finish(ran, exit_code=3)
    api.client.delete(f"/v1/jobs/{waits}", headers=USER)
    api.run()
    r = api.client.get("/v1/accounting", headers=USER)
    assert r.status_code == 200
    records = {rec["job_id"]: rec for rec in r.json()}
    assert set(records) == {ran, waits}
    assert records[ran]["state"] == "FAILED"
    assert records[ran]["exit_code"] == 3
    assert records[ran]["start"] == START
    assert records[ran]["end"] == ended_at  # no epilog: the end is the report
    assert records[ran]["gpus"] == 2.0 and records[ran]["nodelist"].startswith("gpu00")
    assert records[waits]["state"] == "CANCELLED" and records[waits]["start"] is None
    assert records[ran]["user"] == "nobody"
    by_id = api.client.get("/v1/accounting", params={"ids": str(ran)}, headers=USER).json()
    assert [rec["job_id"] for rec in by_id] == [ran]
    assert api.client.get("/v1/accounting", params={"user": "root"}, headers=USER).json() == []
    later = api.clock.now() + 1
    assert api.client.get("/v1/accounting", params={"since": later}, headers=USER).json() == []
