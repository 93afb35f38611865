"""The controllers' pace behind the API's requests (``phalanx.kube.pace``): deferred work runs
after a pause in the requests, at most ``most_s`` late, and work it defers in turn (a drain's
next batch) does not wait again."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.kube.pace import Pace


async def _requests_every(pace: Pace, every_s: float, until_s: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + until_s
    while loop.time() < end:
        pace.request()
        await asyncio.sleep(every_s)


def test_on_an_idle_loop_work_runs_at_once() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        pace = Pace(loop, quiet_s=0.05, most_s=5.0)
        ran = loop.create_future()
        start = loop.time()
        pace.defer(lambda: ran.set_result(loop.time()))
        return await asyncio.wait_for(ran, 1.0) - start

    assert asyncio.run(main()) < 0.04  # no request was made: no quiet period to wait for


def test_work_waits_for_a_pause_in_the_requests() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        pace = Pace(loop, quiet_s=0.2, most_s=5.0)
        ran = loop.create_future()
        pace.request()
        pace.defer(lambda: ran.set_result(loop.time()))
        requests = asyncio.create_task(_requests_every(pace, 0.01, 0.3))
        await requests
        last = pace.last_request
        return await asyncio.wait_for(ran, 2.0), last

    ran_at, last_request = asyncio.run(main())
    # not while the requests came (every 10 ms), but once they had paused for quiet_s
    assert ran_at >= last_request + 0.2 - 0.005


def test_requests_that_keep_coming_delay_work_by_at_most_most_s() -> None:
    async def main() -> tuple[float, int, int]:
        loop = asyncio.get_running_loop()
        pace = Pace(loop, quiet_s=0.3, most_s=0.1)
        ran: list[float] = []
        requests = asyncio.create_task(_requests_every(pace, 0.005, 1.0))
        await asyncio.sleep(0.01)
        start = loop.time()

        def batch() -> None:
            ran.append(loop.time())
            if len(ran) < 3:
                pace.defer(batch)  # as a drain that leaves a batch for the next one

        pace.defer(batch)
        await requests
        return ran[0] - start, len(ran), pace.requests

    late, batches, requests = asyncio.run(main())
    assert requests > 50  # the requests (for 1 s) never paused for quiet_s
    assert 0.1 - 0.01 <= late < 0.6
    # the batches it deferred ran on at once, though the requests went on
    assert batches == 3


def test_a_failing_piece_of_work_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        pace = Pace(loop)
        done: list[str] = []

        def bad() -> None:
            raise RuntimeError("a bug")

        pace.defer(bad)
        pace.defer(lambda: done.append("next"))
        await asyncio.sleep(0.05)
        pace.defer(lambda: done.append("later"))
        await asyncio.sleep(0.05)
        return done

    assert asyncio.run(main()) == ["next", "later"]
    assert "a bug" in caplog.text
