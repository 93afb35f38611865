"""Failover of the controller: the leader killed (kill -9) under a stream of submissions with
jobs running, again and again; how long until a standby serves, and whether anything
acknowledged was lost or anything ran twice.

Two controllers (``phalanx controller --db postgresql://...``, a leader and a standby) share
one PostgreSQL store (a server this script starts in a temporary directory, durable: fsync
on); ``--nodes`` agents are given both URLs (``--controller URL1,URL2``), and so is the
submitter (``PHALANX_URL`` as a comma list, ``WireCaller``). The submitters (``--clients``, 4, at
once) send ``--rate`` (1,000) jobs per second in all as batches of ``--batch`` (250) jobs
(``POST /v1/jobs/batch``),
each batch with an ``Idempotency-Key``, retried with the same key until acknowledged, as
``sbatch`` retries. Every job is ``sh -c 'echo $SLURM_JOB_ID >> started; sleep S'``
(``--job-seconds``, 5), one CPU: the start log names each job once per start. The cluster is
full and the queue deep, as on a busy cluster: the stream is faster than the nodes (``--nodes``
4 x ``--cpus`` 16) run jobs, and jobs start all through the run. After a warm-up of
``--warmup`` s the leader is killed with kill -9, ``--kills`` (5) times, ``--every`` (6) s
apart; after each takeover the killed controller is started again (it comes back as the
standby).

Measured per kill:
- takeover: from the kill to the acknowledgement of the first request sent after it (the
  cluster serves again), or to the first ``/v1/ping`` answered as leader if later;
- agents back: from the kill until every node's agent is registered with the new leader.

At the end (the running jobs have ended, or ``--drain`` seconds passed; pending jobs stay):
- acknowledged lost: job ids a controller acknowledged that no controller knows now;
- started twice: job ids in the start log more than once.
The last line: ``takeover p50 X s max Y s; acknowledged lost N; started twice M``. Target:
X, Y <= 5, N = M = 0.

    .venv/bin/python bench/failover.py [--kills N] [--rate R] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import verdict

from phalanx.client.wirecall import ControllerUnreachable, WireCaller
from phalanx.server.hacluster import HACluster
from phalanx.server.localcluster import cluster_yaml
from phalanx.testing.postgres import TempPostgres, pg_bin_dir

TARGET_S = 5.0


class Submitter(threading.Thread):
    """Batches at a steady rate; each retried with its key until acknowledged."""

    def __init__(
        self,
        caller: WireCaller,
        rate: float,
        batch: int,
        started: Path,
        name: str,
        seconds: float,
    ) -> None:
        super().__init__(daemon=True)
        self.name = name
        self.caller = caller
        self.period = batch / rate
        self.batch = batch
        self.job = {
            "command": ["sh", "-c", f"echo $SLURM_JOB_ID >> {started}; sleep {seconds:g}"],
            "output": "/dev/null",
        }
        self.acked: list[int] = []
        self.acks: list[tuple[float, float]] = []
        """(sent, acknowledged), monotonic, of each request (its first try)."""
        self.retries = 0
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            key = f"{self.name}-{n}"
            body = {"jobs": [self.job] * self.batch}
            sent = time.monotonic()
            while not self.stop.is_set():
                try:
                    status, answer = self.caller.call(
                        "POST", "/v1/jobs/batch", body=body, idempotency_key=key
                    )
                except ControllerUnreachable:
                    status, answer = 0, None
                if status == 201 and isinstance(answer, dict):
                    for ids in answer["job_ids"]:
                        self.acked += ids
                    self.acks.append((sent, time.monotonic()))
                    break
                self.retries += 1
                time.sleep(0.05)
            n += 1
            next_at += self.period
            time.sleep(max(0.0, next_at - time.monotonic()))


def _first_after(acks: list[tuple[float, float]], t0: float) -> float | None:
    """Seconds from ``t0`` to the first acknowledgement of a request sent after it."""
    later = [acked for sent, acked in acks if sent > t0]
    return min(later) - t0 if later else None


def _acks(submitters: list[Submitter]) -> list[tuple[float, float]]:
    return sorted(a for submitter in submitters for a in list(submitter.acks))


def _wait_leader(ha: HACluster, timeout: float = 60.0) -> int:
    """The controller that leads (a busy one may take a while to answer its ping)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leader = ha.leader()
        if leader is not None:
            return leader
        time.sleep(0.2)
    raise SystemExit(f"no controller leads after {timeout:g} s")


def _leader_after(ha: HACluster, t0: float, timeout: float) -> float:
    while time.monotonic() - t0 < timeout:
        if ha.leader() is not None:
            return time.monotonic() - t0
        time.sleep(0.02)
    return float("inf")


def _agents_back(ha: HACluster, nodes: int, controller_id: str, t0: float) -> float:
    caller = ha.caller(timeout=10)
    while time.monotonic() - t0 < 60:
        try:
            listed = caller.call_ok("GET", "/v1/nodes")
            ping = caller.call_ok("GET", "/v1/ping")
        except Exception:
            time.sleep(0.1)
            continue
        if ping.get("controller_id") != controller_id:
            registered = [n for n in listed if n["agent"] and n["state"] != "down"]
            if len(registered) >= nodes:
                return time.monotonic() - t0
        time.sleep(0.1)
    return float("inf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--rate", type=float, default=1_000.0, help="jobs submitted per second")
    parser.add_argument("--batch", type=int, default=250, help="jobs per request")
    parser.add_argument(
        "--clients", type=int, default=4, help="submitters at once, each at rate/clients"
    )
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=16, help="CPUs per node")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--every", type=float, default=6.0, help="seconds between kills")
    parser.add_argument("--job-seconds", type=float, default=5.0, help="each job's run time")
    parser.add_argument("--drain", type=float, default=30.0, help="seconds to let running jobs end")
    parser.add_argument("--quick", action="store_true", help="2 kills, 200 jobs/s")
    args = parser.parse_args()
    if args.quick:
        args.kills, args.rate = 2, 200.0
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        print("PostgreSQL's initdb and pg_ctl are not installed", file=sys.stderr)
        return 2
    print(
        f"# failover: {args.kills} kill -9 of the leader, {args.rate:g} jobs/s in batches of "
        f"{args.batch}, {args.nodes} nodes x {args.cpus} CPUs, PostgreSQL durable",
        flush=True,
    )
    server = TempPostgres(bin_dir, durable=True).start()
    root = Path(tempfile.mkdtemp(prefix="phx-failover-"))
    root.chmod(0o755)
    started = root / "started"
    started.touch()
    started.chmod(0o666)
    takeovers: list[float] = []
    lost: list[int] = []
    twice: list[str] = []
    try:
        config = cluster_yaml(args.nodes, 0, cpus=args.cpus, memory_gb=256)
        with HACluster(root / "ha", server.new_database(), config) as ha:
            ha.start(0)
            ha.wait_role(0, "leader")
            ha.start(1)
            ha.wait_role(1, "standby")
            for i in range(args.nodes):
                ha.start_agent(f"node{i + 1}", "--gpus", "0", "--cpus", str(args.cpus))
            ha.wait_agents(args.nodes)
            submitters = [
                Submitter(
                    ha.caller(timeout=10),
                    args.rate / args.clients,
                    args.batch,
                    started,
                    f"s{i}",
                    args.job_seconds,
                )
                for i in range(args.clients)
            ]
            for submitter in submitters:
                submitter.start()
            begun = time.monotonic()
            time.sleep(args.warmup)
            for kill in range(1, args.kills + 1):
                leader = _wait_leader(ha)
                old_id = str((ha.ping(leader) or {}).get("controller_id"))
                t0 = time.monotonic()
                ha.kill(leader)
                led = _leader_after(ha, t0, 60)
                back = _agents_back(ha, args.nodes, old_id, t0)
                while (served := _first_after(_acks(submitters), t0)) is None:
                    if time.monotonic() - t0 > 60:
                        served = float("inf")
                        break
                    time.sleep(0.02)
                takeovers.append(max(served, led))
                print(
                    f"kill {kill}: controller {leader} killed; a leader in {led:.2f} s, "
                    f"submissions served again in {served:.2f} s, agents back in {back:.2f} s",
                    flush=True,
                )
                ha.start(leader)
                ha.wait_role(leader, "standby", timeout=120)
                time.sleep(max(0.0, args.every - (time.monotonic() - t0)))
            for submitter in submitters:
                submitter.stop.set()
            for submitter in submitters:
                submitter.join(30)
            seconds = time.monotonic() - begun
            acked = [j for submitter in submitters for j in submitter.acked]
            retries = sum(submitter.retries for submitter in submitters)
            caller = ha.caller(timeout=30)
            deadline = time.monotonic() + args.drain
            while True:
                active = caller.call_ok("GET", "/v1/jobs", query={"state": "RUNNING,COMPLETING"})[
                    "jobs"
                ]
                if not active or time.monotonic() > deadline:
                    break
                time.sleep(1.0)
            pending = caller.call_ok("GET", "/v1/jobs", query={"state": "PENDING"})["jobs"]
            known = {
                j["job_id"] for j in caller.call_ok("GET", "/v1/jobs", query={"all": True})["jobs"]
            }
            acct = caller.call_ok("GET", "/v1/accounting")
            known |= {int(r["job_id"]) for r in acct} if isinstance(acct, list) else set()
            lost = [j for j in acked if j not in known]
            starts = collections.Counter(started.read_text().split())
            twice = [j for j, n in starts.items() if n > 1]
            print(
                f"{len(acked)} jobs acknowledged in {seconds:.1f} s "
                f"({len(acked) / seconds:.0f} jobs/s; {retries} requests retried), "
                f"{len(starts)} started, {len(active)} still running and {len(pending)} "
                "pending at the end",
                flush=True,
            )
    finally:
        server.stop()
    p50 = statistics.median(takeovers) if takeovers else float("inf")
    worst = max(takeovers) if takeovers else float("inf")
    passed = p50 <= TARGET_S and worst <= TARGET_S and not lost and not twice
    print(verdict(passed, f"takeover <= {TARGET_S:g} s, nothing lost, nothing run twice"))
    print(
        f"takeover p50 {p50:.2f} s max {worst:.2f} s; acknowledged lost {len(lost)}; "
        f"started twice {len(twice)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
