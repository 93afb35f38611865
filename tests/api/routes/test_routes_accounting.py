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


def test_priority_lists_pending_jobs_with_their_factors(api: Api) -> None:
    api.submit(gpus_per_task=8, nodes="2")
    [waits] = api.submit(gpus_per_task=1)
    r = api.client.get("/v1/priority", headers=USER)
    assert r.status_code == 200
    [row] = r.json()
    assert (row["job_id"], row["user"], row["partition"]) == (waits, "nobody", "gpu")
    assert row["factors"] and all(isinstance(v, float) for v in row["factors"].values())
    assert row["priority"] == api.controller.job(waits).priority


def test_fairshare_is_the_tree_root_first_accounts_as_jobs_bring_them(api: Api) -> None:
    def tree() -> dict[str, dict[str, object]]:
        r = api.client.get("/v1/fairshare", headers=USER)
        assert r.status_code == 200
        rows = r.json()
        assert rows[0]["account"] == "root" and rows[0]["parent"] is None
        return {row["account"]: row for row in rows}

    assert set(tree()) == {"root"}
    api.submit(gpus_per_task=8, account="ml")
    after = tree()
    assert set(after) == {"root", "ml"}
    ml = after["ml"]
    assert (ml["parent"], ml["raw_shares"], ml["norm_shares"]) == ("root", 1, 1.0)
    assert set(ml) == {
        "account",
        "parent",
        "raw_shares",
        "norm_shares",
        "raw_usage",
        "effective_usage",
        "fairshare",
    }
    assert 0.0 <= float(ml["fairshare"]) <= 1.0  # type: ignore[arg-type]
