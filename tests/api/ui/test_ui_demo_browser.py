"""The dashboard on the ``make run`` demo (``phalanx demo``: a controller and four agents,
a gang, an array, a job that times out, and a high-QOS job preempting a normal one) in a
real headless Chromium (Debian's ``/usr/bin/chromium``, through Playwright).

Checked: the demo's sign-in link signs the browser in as an administrator; the map shows
the gang's GPUs on two nodes of the two leaves; the preempted job's page shows it requeued
(``restarted 1 time(s)``) without a reload; the queue shows it and the other normal job
running with their 8 GPUs each; every page loads without a console error. Screenshots
(``demo-*.png``) as ``test_ui_browser`` (``PHALANX_SCREENSHOTS``). Skipped where chromium or
Playwright is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_ui_browser import CHROMIUM, Browser, _shot

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not os.access(CHROMIUM, os.X_OK) and shutil.which("chromium") is None:
    pytest.skip("no chromium (apt install chromium)", allow_module_level=True)

SUBMITTED = re.compile(
    r"Submitted: gang (\d+) .*?array (\d+)_.*?job (\d+) .*?jobs (\d+) and (\d+) .*?then (\d+) "
)


def _phalanx(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    env.pop("PHALANX_URL", None)
    env.pop("PHALANX_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, int]]]:
    """``phalanx demo`` on a port of its own: the sign-in link and the jobs it submitted."""
    state = tmp_path_factory.mktemp("phalanx-demo") / "state"
    done = _phalanx(state, "demo", "--port", "0", "--state-dir", str(state))
    try:
        assert done.returncode == 0, done.stderr
        link = re.search(r"dashboard: (http://\S+/ui\?token=\S+)", done.stdout)
        ids = SUBMITTED.search(done.stdout.replace("\n", " "))
        assert link is not None and ids is not None, done.stdout
        names = ("gang", "array", "timeout", "normal", "victim", "urgent")
        yield link.group(1), dict(zip(names, map(int, ids.groups()), strict=True))
    finally:
        down = _phalanx(state, "down")
        assert down.returncode == 0, down.stderr
    log = (state / "log" / "controller.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        yield p


def test_the_dashboard_on_the_make_run_demo(
    demo: tuple[str, dict[str, int]], playwright: Any, tmp_path: Path
) -> None:
    link, jobs = demo
    url = link.split("/ui?")[0]
    admin = Browser(playwright, tmp_path / "admin")
    try:
        page = admin.page
        page.goto(link)
        assert page.url == f"{url}/ui"  # signed in; the token left the address bar
        assert "admin" in page.inner_text("header .who")
        assert page.locator(".leaf").count() == 2 and page.locator(".node").count() == 4
        # One of the two normal jobs holds GPUs at any time: the urgent job preempts one
        # (20 s long, it may be running as the page loads), never both.
        page.wait_for_selector(
            f'a.gpu[href="/ui/jobs/{jobs["normal"]}"], a.gpu[href="/ui/jobs/{jobs["victim"]}"]',
            timeout=60_000,
        )
        gang = page.locator(f'a.gpu[href="/ui/jobs/{jobs["gang"]}"]')
        if gang.count():  # 45 s long: on a slow machine it may be over already
            assert gang.count() == 16  # 2 nodes x 4 tasks x 2 GPUs
        _shot(page, "demo-cluster")

        # The preempted normal job: requeued, shown on its page as it happens.
        page.goto(f"{url}/ui/jobs/{jobs['victim']}")
        page.evaluate("window.__same_page = true")
        page.wait_for_selector(".timeline li:has-text('restarted 1 time(s)')", timeout=60_000)
        assert page.evaluate("window.__same_page") is True
        assert "normal" in page.inner_text("table.kv")  # its QOS
        _shot(page, "demo-job")

        # The queue: the normal job and the requeued one running again, with their GPUs
        # (the urgent job, 20 s long, may be over by now).
        page.goto(f"{url}/ui/queue")
        for job in (jobs["normal"], jobs["victim"]):
            page.wait_for_selector(f"#running #job-{job}", timeout=60_000)
            assert page.locator(f"#running #job-{job} td.num").first.inner_text() == "8.0"
        if page.locator("#pending tr[data-state=PENDING]").count():  # array tasks, throttled
            assert "JobArrayTaskLimit" in page.inner_text("#pending")
        _shot(page, "demo-queue")

        for path in ("/ui/accounts", "/ui/efficiency", "/ui/serving", "/ui/sim"):
            page.goto(f"{url}{path}")
            page.wait_for_selector("main h1")
        assert admin.errors == [], admin.errors
    finally:
        admin.close()
