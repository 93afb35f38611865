"""The dashboard in a real headless Chromium (Debian's ``/usr/bin/chromium``, driven by
Playwright for Python) against a real Phalanx: a controller and two agents as processes.

Checked: every page loads without a console error; a job's state changes on its page
without a reload (server-sent events); an administrator's cancel button cancels a running
job (and ``squeue`` then shows it CANCELLED); a user sees no cancel button, and a forged
POST from the user's page is refused (403). Screenshots go to the test's temporary directory,
or to ``$PHALANX_SCREENSHOTS`` where set (``PHALANX_SCREENSHOTS=docs/screenshots`` remakes the
README's). Skipped where chromium or Playwright is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.server.localcluster import LocalCluster

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT_DIR = Path(__file__).parents[3]
SHOTS_ENV = "PHALANX_SCREENSHOTS"
USER_TOKEN = "tok-nobody"
CLUSTER = """name: lab
nodes:
  - {names: "node[1-4]", gpus: 8, gpu_model: h100, cpus: 32, memory: 64G}
topology:
  leaves:
    - {name: leaf1, nodes: "node[1-2]"}
    - {name: leaf2, nodes: "node[3-4]"}
  spines:
    - {name: spine1, leaves: [leaf1, leaf2]}
  blocks:
    - {nodes: "node[1-2]"}
    - {nodes: "node[3-4]"}
partitions:
  - {name: main, nodes: ALL, default: true}
accounts:
  - {name: research, shares: 60}
  - {name: prod, shares: 40}
"""

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not os.access(CHROMIUM, os.X_OK) and shutil.which("chromium") is None:
    pytest.skip("no chromium (apt install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, str]]:
    """A controller and four 8-GPU agents (two leaves under a spine, two NVLink blocks);
    the controller's URL."""
    state = tmp_path_factory.mktemp("phalanx-ui")
    tokens = state / "tokens"
    tokens.write_text(f"{USER_TOKEN} nobody\n")
    with LocalCluster(state, CLUSTER, extra_args=("--tokens", str(tokens))) as local:
        port = int((state / "controller.port").read_text())
        yield local, f"http://127.0.0.1:{port}"
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ui-jobs")
    out.chmod(0o777)
    return out


class Browser:
    """One Chromium with a fresh profile of its own; ``errors`` collects console errors
    and uncaught page errors of every page it opened."""

    def __init__(self, playwright: Any, profile: Path) -> None:
        self.context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1360, "height": 900},
        )
        self.errors: list[str] = []
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on(
            "response",
            lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 400 else None,
        )
        self.page.on("dialog", lambda d: d.accept())  # hx-confirm: "Cancel job N?"
        self.page.set_default_timeout(15_000)

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        yield p


def _shot(page: Any, name: str) -> None:
    # A test run leaves the checkout as it was: the README's screenshots are remade on purpose.
    shots = Path(os.environ.get(SHOTS_ENV) or Path(tempfile.gettempdir()) / "phalanx-ui-shots")
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def _squeue_state(local: LocalCluster, job: int) -> str:
    code = "import sys; from phalanx.slurm import squeue; sys.exit(squeue.main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "-h", "-t", "all", "-j", str(job), "-o", "%T"],
        capture_output=True,
        text=True,
        env=local.env,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_dashboard_in_chromium(
    phalanx: tuple[LocalCluster, str], workdir: Path, playwright: Any, tmp_path: Path
) -> None:
    local, url = phalanx
    admin_token = (local.state_dir / "token").read_text().strip()
    base = {"workdir": str(workdir), "environment": {"PATH": os.environ.get("PATH", "")}}
    train = local.submit(
        **base,
        name="train",
        command=["sh", "-c", "echo step 1; sleep 300"],
        nodes="2",
        gpus_per_task=6,
        time="10:00",
        output="train-%j.out",
        account="research",
    )[0]
    evals = local.submit(
        **base,
        name="eval",
        command=["sleep", "300"],
        gpus_per_task=2,
        time="10:00",
        account="prod",
    )[0]
    big = local.submit(
        **base,
        name="big",
        command=["sleep", "300"],
        nodes="3",
        gpus_per_task=8,
        time="5:00",
        account="prod",
    )[0]
    short = local.submit(
        **base,
        name="short",
        command=["sh", "-c", "echo hello; sleep 1"],
        gpus_per_task=1,
        time="1:00",
        hold=True,
    )[0]
    local.wait([train, evals], ("RUNNING",), final=False, timeout=30)

    admin = Browser(playwright, tmp_path / "admin")
    try:
        page = admin.page
        page.goto(f"{url}/ui?token={admin_token}")
        assert page.url == f"{url}/ui"  # signed in; the token left the address bar
        page.wait_for_selector(f'#node-node1 a.gpu[href="/ui/jobs/{train}"]')
        assert page.locator(".spine .leaf").count() == 2
        assert page.locator(".block.nvl").count() == 2

        # A live update: the held job is released, runs and ends while its page stays open.
        page.goto(f"{url}/ui/jobs/{short}")
        page.evaluate("window.__same_page = true")
        assert page.inner_text("#job-state") == "PENDING"
        local.call("POST", f"/v1/jobs/{short}/release")
        page.wait_for_function(
            "document.querySelector('#job-state').textContent === 'COMPLETED'", timeout=20_000
        )
        assert page.evaluate("window.__same_page") is True  # the same document: no reload

        page.goto(f"{url}/ui/queue")
        page.wait_for_selector(f"#pending #job-{big}")
        assert page.inner_text(f"#pending #job-{big}").count("Resources") >= 1
        _shot(page, "queue")

        # The administrator cancels the running job: gone from the queue page, CANCELLED.
        page.click(f'#running #job-{train} button[data-action="cancel"]')
        page.wait_for_selector("#flash .ok")
        page.wait_for_selector(f"#running #job-{train}", state="detached", timeout=20_000)
        assert local.wait([train], ("CANCELLED",), timeout=20)[0]["state"] == "CANCELLED"
        assert _squeue_state(local, train) == "CANCELLED"
        page.wait_for_selector(f"#running #job-{big}", timeout=20_000)  # it started

        page.goto(f"{url}/ui/jobs/{train}")
        assert "step 1" in page.inner_text("pre.tail")
        _shot(page, "job")

        # The administrator drains a node with a reason; the map shows it.
        page.goto(f"{url}/ui")
        page.fill("#node-node4 input[name=reason]", "fan noise")
        page.click("#node-node4 button:has-text('drain')")
        page.wait_for_selector("#node-node4 .reason:has-text('fan noise')", timeout=20_000)
        _shot(page, "cluster")

        for path, name in [
            ("/ui/accounts", "accounts"),
            ("/ui/efficiency", "efficiency"),
            ("/ui/serving", None),
        ]:
            page.goto(f"{url}{path}")
            page.wait_for_selector("main h1")
            if name:
                _shot(page, name)
        page.goto(f"{url}/ui/sim")
        page.set_input_files("#sim-file", str(ROOT_DIR / "docs" / "results" / "philly-1024.json"))
        page.wait_for_selector("#sim-figures")
        assert "k8s-default" in page.inner_text("#report")
        _shot(page, "simulation")
        assert admin.errors == [], admin.errors
    finally:
        admin.close()

    user = Browser(playwright, tmp_path / "user")
    try:
        page = user.page
        page.goto(f"{url}/ui/queue")
        assert "/ui/login" in page.url  # not signed in: the form
        page.fill("input[name=token]", USER_TOKEN)
        page.click("button[type=submit]")
        page.wait_for_url(f"{url}/ui/queue")
        page.wait_for_selector(f"#running #job-{big}")
        assert page.locator('button[data-action="cancel"]').count() == 0
        assert page.locator("text=drain").count() == 0
        # A forged cancel from the user's own page, with the session's CSRF token: 403.
        status = page.evaluate(
            """async (job) => {
                const csrf = document.querySelector('meta[name="csrf-token"]').content;
                const r = await fetch(`/ui/jobs/${job}/cancel`, {method: "POST",
                    headers: {"X-CSRF-Token": csrf,
                              "Content-Type": "application/x-www-form-urlencoded"},
                    body: "csrf=" + encodeURIComponent(csrf)});
                return r.status;
            }""",
            big,
        )
        assert status == 403
        user.errors = [e for e in user.errors if "403" not in e]  # the refusal itself
        assert local.job(big)["state"] == "RUNNING"
        _shot(page, "queue-user")
        assert user.errors == [], user.errors
    finally:
        user.close()
    local.call("DELETE", f"/v1/jobs/{big}")
