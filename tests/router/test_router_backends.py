"""The choice among endpoints: fewest outstanding, round-robin ties, down marks, the hold."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.router.backends import DOWN_MAX_S, DOWN_S, HoldFull, Pool


def pool_of(*ports: int, ready: bool = True) -> Pool:
    pool = Pool()
    pool.set_endpoints([("127.0.0.1", p, ready, f"pod-{p}") for p in ports])
    return pool


def test_ties_go_round_robin() -> None:
    pool = pool_of(1, 2, 3)
    picks = []
    for _ in range(6):
        e = pool.choose(0.0)
        assert e is not None
        picks.append(e.port)
        pool.release(e)
    assert picks == [1, 2, 3, 1, 2, 3]


def test_the_fewest_outstanding_wins() -> None:
    pool = pool_of(1, 2)
    picks = [pool.choose(0.0) for _ in range(3)]
    assert [e.port for e in picks if e is not None] == [1, 2, 1]
    pool.release(picks[1])  # port 1: two outstanding, port 2: none
    for _ in range(2):
        e = pool.choose(0.0)
        assert e is not None and e.port == 2


def test_busy_endpoint_is_avoided_until_it_catches_up() -> None:
    pool = pool_of(1, 2)
    held = [pool.choose(0.0) for _ in range(4)]  # 2 each
    slow = next(e for e in held if e is not None and e.port == 1)
    for e in held:
        if e is not None and e.port == 2:
            pool.release(e)
    picks = []
    for _ in range(2):
        e = pool.choose(0.0)
        assert e is not None
        picks.append(e.port)
    assert picks == [2, 2]  # port 1 still has two outstanding
    assert slow.outstanding == 2


def test_unready_and_down_endpoints_are_skipped_and_down_backs_off() -> None:
    pool = Pool()
    pool.set_endpoints([("127.0.0.1", 1, False, "a"), ("127.0.0.1", 2, True, "b")])
    e = pool.choose(0.0)
    assert e is not None and e.port == 2
    pool.release(e, ok=False)
    pool.mark_down(e, 0.0)
    assert pool.choose(0.0) is None
    assert pool.choose(DOWN_S * 0.99) is None
    assert pool.next_up(0.0) == pytest.approx(DOWN_S)
    again = pool.choose(DOWN_S)
    assert again is e
    pool.release(again, ok=False)
    pool.mark_down(again, DOWN_S)
    assert again.down_for == 2 * DOWN_S  # still refusing: longer
    for _ in range(20):
        pool.mark_down(again, 0.0)
    assert again.down_for == DOWN_MAX_S
    pool.release(pool.choose(1000.0) or again, ok=True)
    assert again.down_for == 0.0  # answered: forgiven


def test_a_new_pod_at_the_same_address_is_a_new_endpoint() -> None:
    pool = pool_of(1)
    old = pool.choose(0.0)
    assert old is not None
    pool.mark_down(old, 0.0)
    pool.set_endpoints([("127.0.0.1", 1, True, "pod-new")])
    fresh = pool.choose(0.0)
    assert fresh is not None and fresh is not old and fresh.outstanding == 1


def test_an_endpoint_kept_keeps_its_count() -> None:
    pool = pool_of(1, 2)
    e = pool.choose(0.0)
    assert e is not None
    pool.set_endpoints([("127.0.0.1", e.port, True, f"pod-{e.port}")])
    assert pool.endpoints == [e] and e.outstanding == 1


def test_the_hold_wakes_on_a_new_endpoint_and_is_bounded() -> None:
    async def scenario() -> None:
        pool = Pool(max_held=2)
        waiter = asyncio.create_task(pool.wait_change(5.0))
        other = asyncio.create_task(pool.wait_change(5.0))
        await asyncio.sleep(0.01)
        assert pool.held == 2
        with pytest.raises(HoldFull):
            await pool.wait_change(5.0)
        pool.set_endpoints([("127.0.0.1", 1, True, "a")])
        await asyncio.wait_for(asyncio.gather(waiter, other), 1.0)
        assert pool.held == 0
        assert pool.choose(0.0) is not None
        t0 = asyncio.get_running_loop().time()
        await pool.wait_change(0.05)  # nothing changes: the timeout ends it
        assert asyncio.get_running_loop().time() - t0 >= 0.04

    asyncio.run(scenario())


def test_each_endpoint_counts_what_was_sent_to_it_and_what_it_refused() -> None:
    pool = pool_of(1, 2)
    first = pool.choose(0.0)
    assert first is not None and first.port == 1
    pool.release(first, ok=False)
    pool.mark_down(first, 0.0)
    for _ in range(3):  # port 1 is down: everything goes to port 2
        e = pool.choose(0.5)
        assert e is not None and e.port == 2
        pool.release(e)
    pool.set_endpoints([("127.0.0.1", 1, False, "pod-1"), ("127.0.0.1", 2, True, "pod-2")])
    e = pool.choose(5.0)  # port 1's down mark has passed, but the API calls it not ready
    assert e is not None and e.port == 2
    snaps = {s["port"]: s for s in (e.snapshot(5.0) for e in pool.endpoints)}
    assert snaps[1] == {
        "address": "127.0.0.1",
        "port": 1,
        "pod_uid": "pod-1",
        "ready": False,
        "usable": False,
        "outstanding": 0,
        "requests_sent": 1,
        "refused": 1,
    }
    assert (snaps[2]["requests_sent"], snaps[2]["refused"], snaps[2]["outstanding"]) == (4, 0, 1)
