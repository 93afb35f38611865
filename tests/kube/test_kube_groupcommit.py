"""Group commit: writes change memory at once, reach the table in batches, and nothing is
acknowledged before its batch is in the table; a refused batch fails its waiters and is
retried. Also the per-version memo the list encodings use."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from phalanx.kube.errors import Unavailable
from phalanx.kube.groupcommit import GroupCommit
from phalanx.kube.persist import MemoryObjects, Write
from phalanx.kube.store import ObjectStore
from phalanx.live.journal import JournalError
from phalanx.live.kubeobjects import SqliteObjects

CMS = ("", "configmaps")


def cm(name: str, value: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"v": value},
    }


class SlowTable(MemoryObjects):
    """Commits block until released; each commit's writes are recorded; ``refuse`` makes
    the next commits fail."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[Write]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.refuse = False

    def commit(self, rv: int, writes: Sequence[Write]) -> None:
        self.gate.wait(10)
        if self.refuse:
            raise JournalError("disk full")
        self.batches.append(list(writes))
        super().commit(rv, writes)


def test_deferred_writes_wait_until_flushed() -> None:
    table = SlowTable()
    store = ObjectStore(table)
    store.defer_commits()
    made = store.create(cm("a"))
    store.update({**made, "data": {"v": "2"}})
    assert store.get(CMS, "default", "a")["data"] == {"v": "2"}  # type: ignore[index]
    assert ("/configmaps", "default", "a") not in table.rows
    assert store.durable_version < store.resource_version
    store.flush()
    assert table.batches[-1] == [
        (
            "/configmaps",
            "default",
            "a",
            store.resource_version,
            table.rows[("/configmaps", "default", "a")],
        )
    ]  # the latest write of the object only
    assert table.rows[("/configmaps", "default", "a")]["data"] == {"v": "2"}
    assert store.durable_version == store.resource_version == table.rv


def test_refused_writes_wait_again_behind_newer_ones() -> None:
    table = SlowTable()
    store = ObjectStore(table)
    store.defer_commits()
    store.create(cm("a"))
    table.refuse = True
    with pytest.raises(JournalError):
        store.flush()
    store.create(cm("b"))
    table.refuse = False
    store.flush()
    assert {k[2] for k in table.rows if k[0] == "/configmaps"} == {"a", "b"}
    assert store.durable_version == store.resource_version


def test_answers_wait_for_their_batch_and_share_it() -> None:
    async def scenario() -> None:
        table = SlowTable()
        store = ObjectStore(table)
        commits = GroupCommit(store)
        runner = asyncio.create_task(commits.run())
        await commits.settle()  # the system namespaces
        table.gate.clear()
        store.create(cm("a"))
        first = asyncio.create_task(commits.until(store.resource_version))
        await asyncio.sleep(0.05)  # its batch is being committed (held by the gate)
        store.create(cm("b"))
        store.create(cm("c"))
        later = asyncio.create_task(commits.settle())
        await asyncio.sleep(0.05)
        assert not first.done() and not later.done()
        assert ("/configmaps", "default", "a") not in table.rows
        table.gate.set()
        await asyncio.wait_for(asyncio.gather(first, later), 5)
        assert [sorted(w[2] for w in b) for b in table.batches[-2:]] == [["a"], ["b", "c"]]
        commits.stop()
        await asyncio.wait_for(runner, 5)
        with pytest.raises(Unavailable):
            store.create(cm("d"))
            await commits.settle()  # nothing commits any more: refused, not hung

    asyncio.run(scenario())


def test_what_a_write_sets_off_on_the_next_loop_turns_shares_its_batch() -> None:
    """A write's consequences (the runner's drain, call_soon'ed, however long it holds the
    loop, and the drain that one schedules) join its batch; a lone write waits for nothing."""

    async def scenario() -> None:
        table = SlowTable()
        store = ObjectStore(table)
        commits = GroupCommit(store)
        runner = asyncio.create_task(commits.run())
        await commits.settle()
        loop = asyncio.get_running_loop()
        before = len(table.batches)

        def second() -> None:
            time.sleep(0.02)  # a slow drain (an engine submission's own fsync)
            store.create(cm("b"))
            loop.call_soon(lambda: store.create(cm("c")))

        store.create(cm("a"))
        loop.call_soon(second)
        await asyncio.wait_for(commits.settle(), 5)
        assert [sorted(w[2] for w in b) for b in table.batches[before:]] == [["a", "b", "c"]]
        store.create(cm("d"))
        start = time.perf_counter()
        await asyncio.wait_for(commits.settle(), 5)
        assert time.perf_counter() - start < 1.0  # no window to sit out (the table is memory)
        assert [w[2] for w in table.batches[-1]] == ["d"]
        commits.stop()
        await asyncio.wait_for(runner, 5)

    asyncio.run(scenario())


def test_a_refused_batch_fails_its_waiters_then_is_retried() -> None:
    async def scenario() -> None:
        table = SlowTable()
        store = ObjectStore(table)
        commits = GroupCommit(store)
        runner = asyncio.create_task(commits.run())
        await commits.settle()
        table.refuse = True
        store.create(cm("a"))
        with pytest.raises(Unavailable, match="disk full"):
            await asyncio.wait_for(commits.settle(), 5)
        table.refuse = False
        await asyncio.wait_for(commits.settle(), 5)  # the retry
        assert ("/configmaps", "default", "a") in table.rows
        commits.stop()
        await asyncio.wait_for(runner, 5)

    asyncio.run(scenario())


def test_stop_commits_what_waits(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = ObjectStore(SqliteObjects(str(tmp_path / "state.db")))
        commits = GroupCommit(store)
        runner = asyncio.create_task(commits.run())
        store.create(cm("a"))
        commits.stop()
        await asyncio.wait_for(runner, 5)
        store.table.close()

    asyncio.run(scenario())
    again = ObjectStore(SqliteObjects(str(tmp_path / "state.db")))
    assert again.get(CMS, "default", "a") is not None


def test_memo_is_kept_per_version_and_forgotten() -> None:
    store = ObjectStore()
    made = store.create(cm("a"))
    calls: list[str] = []

    def compute(obj: dict[str, Any]) -> str:
        calls.append(obj["metadata"]["resourceVersion"])
        return str(obj["data"]["v"])

    own = store.peek(CMS, "default", "a")
    assert own is not None
    assert store.memo(own, "v", compute) == "1"
    assert store.memo(own, "v", compute) == "1"
    assert len(calls) == 1
    store.update({**made, "data": {"v": "2"}})
    own = store.peek(CMS, "default", "a")
    assert own is not None
    assert store.memo(own, "v", compute) == "2"  # a new version: computed again
    assert len(calls) == 2
    store.delete(CMS, "default", "a")
    assert store.memo(own, "v", compute) == "2"  # gone: computed, not kept
    assert len(calls) == 3
    uid = own["metadata"]["uid"]
    assert uid not in store._cache


def test_a_taken_generated_name_is_drawn_again_when_the_store_takes_the_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from phalanx.kube import values

    s = ObjectStore()
    draws = iter((0, 0, 1))  # "bbbbb" twice, then "cbbbb"
    real = values._entropy.take
    # a suffix's draws (4 bytes) come from ``draws``; a uid's (16) are real
    monkeypatch.setattr(
        values._entropy, "take", lambda n: next(draws).to_bytes(n, "big") if n == 4 else real(n)
    )
    first = s.create({**cm(""), "metadata": {"generateName": "g-"}}, copy=False)
    second = s.create({**cm(""), "metadata": {"generateName": "g-"}}, copy=False)
    assert (first["metadata"]["name"], second["metadata"]["name"]) == ("g-bbbbb", "g-cbbbb")


def test_the_api_answers_only_what_is_durable() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
        from starlette.testclient import TestClient

    from phalanx.kube.server import create_app

    table = SlowTable()
    store = ObjectStore(table)
    store.defer_commits()
    asked: list[int] = []

    async def durable(rv: int) -> None:
        # what GroupCommit.until does, at once: commit, or refuse as a full disk would
        asked.append(rv)
        try:
            store.flush()
        except JournalError as exc:
            raise Unavailable(f"not stored: {exc}") from None

    app = create_app(store, {"tok": ("ann", ("system:masters",))}, durable=durable)
    client = TestClient(app, base_url="https://testserver")
    client.headers.update({"Authorization": "Bearer tok"})
    r = client.post("/api/v1/namespaces/default/configmaps", json=cm("a"))
    assert r.status_code == 201
    assert asked[-1] == int(r.json()["metadata"]["resourceVersion"])
    assert table.rows[("/configmaps", "default", "a")]["data"] == {"v": "1"}
    assert client.get("/version").status_code == 200
    assert len(asked) == 1  # discovery shows no object: it waits for nothing
    table.refuse = True
    r = client.post("/api/v1/namespaces/default/configmaps", json=cm("b"))
    assert r.status_code == 503 and "disk full" in r.json()["message"]
    assert ("/configmaps", "default", "b") not in table.rows


def test_suffixes_and_uids_are_drawn_fresh_each_time() -> None:
    from phalanx.kube import values

    suffixes = {values.suffix() for _ in range(2000)}
    uids = {values.new_uid() for _ in range(2000)}  # more than one pool of bytes
    assert len(uids) == 2000
    assert len(suffixes) > 1900  # 27**5 = 14.3 million: a few repeats at most
    assert all(len(x) == 5 and set(x) <= set("bcdfghjklmnpqrstvwxz2456789") for x in suffixes)
    assert all(u[14] == "4" and u[19] in "89ab" for u in uids)  # version 4, RFC 4122 variant
    import uuid

    parsed = [uuid.UUID(u) for u in uids]  # written as uuid writes them
    assert all(str(p) == u and p.version == 4 for p, u in zip(parsed, uids, strict=True))
    assert all(p.variant == uuid.RFC_4122 for p in parsed)


def test_a_timestamp_is_the_second_it_falls_in() -> None:
    from phalanx.kube.values import timestamp

    assert timestamp(1_764_647_000.9) == "2025-12-02T03:43:20Z"
    assert timestamp(1_764_647_001.0) == "2025-12-02T03:43:21Z"
    assert timestamp(1_764_647_000.2) == "2025-12-02T03:43:20Z"  # an older second again
    assert timestamp(-0.5) == "1969-12-31T23:59:59Z"
