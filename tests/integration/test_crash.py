"""kill -9 of the controller while jobs run and submissions arrive: after a restart with
``phalanx up`` every acknowledged job exists, none ran twice (each job's process started
exactly once, by the start log), and tasks that were running were not killed."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

from live_env import env

from phalanx.client.wirecall import ControllerUnreachable
from phalanx.live.store import open_store
from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.server.statedir import StateDir


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[-1][:1] != "Z"


def test_kill_9_of_the_controller_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path, workdir: Path, db_url: str
) -> None:
    runs = workdir / "runs.log"

    # Every task appends "job pid" when it starts (O_APPEND: whole lines), then works.
    def command(seconds: float, code: int = 0) -> list[str]:
        return ["sh", "-c", f'echo "$SLURM_JOB_ID $$" >> {runs}; sleep {seconds}; exit {code}']

    with LocalCluster(
        tmp_path / "state", cluster_yaml(2, 8, cpus=64), env=dict(os.environ, PHALANX_DB=db_url)
    ) as cluster:
        # Long jobs that must survive the crash, and one that ends while it is down.
        long_ids = [
            cluster.submit(
                command=command(120), workdir=str(workdir), environment=env(), output="/dev/null"
            )[0]
            for _ in range(4)
        ]
        [ends_meanwhile] = cluster.submit(
            command=command(1.5, 7), workdir=str(workdir), environment=env(), output="/dev/null"
        )
        cluster.wait([*long_ids, ends_meanwhile], ("RUNNING",), final=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if runs.exists() and len(runs.read_text().splitlines()) >= 5:
                break
            time.sleep(0.05)
        pids = {int(j): int(p) for j, p in (line.split() for line in runs.read_text().splitlines())}

        acknowledged: list[int] = []
        stop = threading.Event()

        def submitter() -> None:
            while not stop.is_set():
                try:
                    acknowledged.extend(
                        cluster.submit(
                            command=command(0.2),
                            workdir=str(workdir),
                            environment=env(),
                            output="/dev/null",
                        )
                    )
                except ControllerUnreachable:
                    time.sleep(0.02)  # down: the request was not acknowledged

        thread = threading.Thread(target=submitter)
        thread.start()
        try:
            time.sleep(1.0)
            cluster.kill_controller()
            before = len(acknowledged)
            time.sleep(2.5)  # ends_meanwhile ends while nobody listens
            for job_id in long_ids:
                assert _alive(pids[job_id]), "a running task died with the controller"
            # As a user would: `phalanx up` again. It keeps the agents still running (no
            # second agent for a node) and they register with the new controller.
            agents_before = StateDir(cluster.state_dir).live_agents()
            printed = cluster.up()
            assert "kept    2 agent(s)" in printed
            cluster.wait_agents()
            assert StateDir(cluster.state_dir).live_agents() == agents_before
            time.sleep(1.0)
        finally:
            stop.set()
            thread.join()
        assert before > 0 and len(acknowledged) > before  # submissions on both sides

        for job_id in long_ids:
            job = cluster.job(job_id)
            assert _alive(pids[job_id]), f"a running task was killed by the restart: {job}"
            assert (job["state"], job["restarts"]) == ("RUNNING", 0)
        jobs = cluster.wait([ends_meanwhile, *acknowledged], timeout=120)
        states = {j["job_id"]: j for j in jobs}
        assert states[ends_meanwhile]["state"] == "FAILED"
        assert states[ends_meanwhile]["exit_code"] == 7
        others = {i: states[i]["state"] for i in acknowledged if states[i]["state"] != "COMPLETED"}
        assert not others, others
        for job_id in long_ids:  # still the same processes, all along
            assert _alive(pids[job_id])
            cluster.call("DELETE", f"/v1/jobs/{job_id}")
        assert {j["state"] for j in cluster.wait(long_ids)} == {"CANCELLED"}
        started = Counter(int(line.split()[0]) for line in runs.read_text().splitlines())
        twice = [job for job, n in started.items() if n > 1]
        assert not twice, f"ran twice: {twice}"
        assert set(acknowledged) <= set(started)
    for name in ("controller", "agent-node1", "agent-node2"):
        assert "Traceback" not in cluster.log_tail(name, 500)
    # Both controllers journaled into the store asked for: a submission each, and more.
    store = open_store(db_url)
    try:
        assert store.journal.count() > len(acknowledged) + len(long_ids)
    finally:
        store.close()
