"""Live panels: server-sent events carrying the panel when it changes, shared renders, and a
stream that ends when its browser goes."""

from __future__ import annotations

import asyncio
from typing import Any

from ui_scene import Ui

from phalanx.api.ui import live
from phalanx.api.ui.series import Series


class _Request:
    """What ``live._stream`` reads of a request: the app's cache, and whether the browser
    is still there (gone after ``alive`` checks)."""

    def __init__(self, app: Any, alive: int) -> None:
        self.app = app
        self.alive = alive

    async def is_disconnected(self) -> bool:
        self.alive -= 1
        return self.alive < 0


def _collect(request: _Request, render: Any) -> list[str]:
    async def go() -> list[str]:
        return [m async for m in live._stream(request, "p", "k", render)]  # type: ignore[arg-type]

    return asyncio.run(go())


def test_an_event_carries_html_as_data_lines() -> None:
    assert live.event("queue", "<a>\n<b>") == "event: queue\ndata: <a>\ndata: <b>\n\n"
    assert live.event("x", "") == "event: x\ndata: \n\n"


def test_a_stream_sends_changes_only_and_ends_when_the_browser_goes(
    ui: Ui, monkeypatch: Any
) -> None:
    monkeypatch.setattr(live, "EVERY_S", 0.001)
    monkeypatch.setattr(live, "KEEPALIVE_S", 0.002)
    panels = iter(["one", "one", "two", "two", "two", "two"])
    ui.app.state.ui_cache.clear()
    out = _collect(_Request(ui.app, alive=6), lambda: next(panels))
    assert out[0] == "retry: 2000\n\n"
    events = [m for m in out if m.startswith("event:")]
    assert events == [live.event("p", "one"), live.event("p", "two")]
    assert ": keep-alive\n\n" in out  # quiet rounds after "two"
    # the generator returned: nothing is left running for a closed browser


def test_streams_asking_the_same_panel_share_a_render(ui: Ui) -> None:
    calls = []

    def render() -> str:
        calls.append(1)
        return "same"

    ui.app.state.ui_cache.clear()
    request = _Request(ui.app, alive=0)
    for _ in range(3):
        html, wait = live._shared(request, "k", render)  # type: ignore[arg-type]
        assert html == "same" and 0 < wait <= live.EVERY_S
    assert len(calls) == 1


def test_a_slow_panel_is_rendered_less_often(ui: Ui, monkeypatch: Any) -> None:
    import time

    def slow() -> str:
        time.sleep(0.2)
        return "slow"

    ui.app.state.ui_cache.clear()
    _, wait = live._shared(_Request(ui.app, alive=0), "s", slow)  # type: ignore[arg-type]
    assert wait >= 0.2 / live.BUSY_SHARE  # the loop spends at most BUSY_SHARE on it


def test_a_live_panel_is_an_event_stream_of_the_page_fragment(ui: Ui) -> None:
    job = ui.submit(gpus_per_task=2)
    client, _ = ui.browser("t-user")
    with client.stream("GET", "/ui/live/queue", params={"user": "nobody"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        seen = ""
        for chunk in r.iter_text():
            seen += chunk
            if "event: queue" in seen and "</table>" in seen:
                break
    assert f'data: <tr id="job-{job}" data-state="RUNNING">' in seen
    assert client.get("/ui/live/jobs/999").status_code == 404


def test_the_series_samples_utilisation_and_idle_gpus_while_jobs_wait(ui: Ui) -> None:
    series = Series(ui.controller, every_s=5.0, keep=3)
    first = series.sample()
    assert (first.gpus, first.gpus_alloc, first.pending, first.idle_while_pending) == (16, 0, 0, 0)
    ui.submit(gpus_per_task=8)
    ui.submit(gpus_per_task=8, nodes="2")  # cannot start while the first runs
    now = series.sample()
    assert now.gpus_alloc == 8 and now.running == 1 and now.pending == 1
    assert now.utilization == 0.5 and now.idle_while_pending == 0.5
    assert now.by_account == {"root": 8.0}
    for _ in range(3):
        series.sample()
    assert len(series.samples) == 3  # bounded


def test_a_pushed_panel_is_the_roles_and_carries_no_session_token(ui: Ui) -> None:
    ui.submit(gpus_per_task=2)
    client, csrf = ui.browser("t-root")
    with client.stream("GET", "/ui/live/overview") as r:
        seen = ""
        for chunk in r.iter_text():
            seen += chunk
            if "event: overview" in seen and "/ui/nodes/gpu002/drain" in seen:
                break
    assert csrf not in seen  # posted by htmx with the page's header instead
    assert "overview:admin" in ui.app.state.ui_cache
