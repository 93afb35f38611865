"""Restart time of the controller after a long journal, on SQLite and on PostgreSQL.

The journal is built through the store's interface by the controller's own driver loop, as a
live controller fills it, without HTTP: rounds of ``--per-round`` (500) one-GPU jobs are
submitted (one journal write; each job its own ``JobSpec``, as the API decodes each request,
with an idempotency key, as ``sbatch`` sends one), the engine starts them on 64 nodes x 8
GPUs, and their ends (``TasksExited``, one write per round) come 1 s later; the fake clock
moves 10 s a round.
Two inputs per job, ``--inputs`` (1,000,000) in all. A snapshot is saved every
``SNAPSHOT_EVERY`` inputs, as the controller does, forgetting jobs ended more than MinJobAge
(300 s) ago into the store's accounting. The last snapshot falls one whole interval before
the end, so that the restart replays a full interval of tail: the worst case of a controller
that saves every interval (plus, live, what arrives while a save is in flight). The journal and
its snapshot are built once, on SQLite (``--keep FILE`` keeps it for the next run); the
PostgreSQL store (a server this script starts in a temporary directory, with fsync on) gets the
same rows and the same snapshot copied through the same interface.

Timed, per store, ``--repeat`` (3) times: a fresh ``Controller`` on a freshly opened store,
``recover()`` (load the snapshot, replay the tail) -- what ``phalanx controller`` does before
it serves. Target: <= 2 s with 1,000,000 journaled inputs. With ``--full`` it also times a
replay of the whole journal without the snapshot (today's restart before snapshots).

    .venv/bin/python bench/restart.py [--inputs N] [--repeat N] [--full] [--keep FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

from harness import verdict

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import SECOND, Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Engine,
    Event,
    Kill,
    Launch,
    Resize,
    Signal,
    TasksExited,
)
from phalanx.live.accounting import MemoryAccounting
from phalanx.live.controller import Controller
from phalanx.live.snapshot import SNAPSHOT_EVERY, Snapshots
from phalanx.live.store import Store, open_store, sqlite_url
from phalanx.policies.catalog import profile
from phalanx.runtime import Driver, FakeClock
from phalanx.sched.job import Job
from phalanx.testing.postgres import TempPostgres, pg_bin_dir

TARGET_S = 2.0
POLICY = "phalanx"


def _cluster() -> Cluster:
    return regular_cluster(64, 8, 8, prefix="n")


def _record(job: Job) -> str:
    return json.dumps({"job_id": job.id, "state": job.state.value})


class _Ends:
    """The executor of the build: every run ends 1 s after it starts (reported in a batch
    per round, one journal write), an epilog takes no time."""

    def __init__(self) -> None:
        self.loop: Driver | None = None
        self.ended: list[Event] = []
        self.runs: dict[tuple[int, int], SimpleNamespace] = {}
        """As the fleet's: each run's ``launch``, for the snapshot."""

    def launch(self, cmd: Launch, at: Instant) -> None:
        self.runs[(cmd.job_id, cmd.run)] = SimpleNamespace(launch=cmd)
        self.ended.append(TasksExited(at + SECOND, cmd.job_id, cmd.run, 0, 0))

    def resize(self, cmd: Resize, at: Instant) -> None:
        pass  # no elastic job is submitted here

    def signal(self, cmd: Signal, at: Instant) -> None:
        pass

    def kill(self, cmd: Kill, at: Instant) -> None:
        pass

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        assert self.loop is not None
        self.runs.pop((cmd.job_id, cmd.run), None)
        self.loop.deliver(CleanupDone(at, cmd.job_id, cmd.run))


def build(store: Store, inputs: int, per_round: int) -> tuple[int, float]:
    """Fill ``store`` with ``inputs`` journaled inputs and snapshots; (jobs, seconds)."""
    clock = FakeClock(1_000_000)
    loop = Driver(Engine(_cluster(), profile(POLICY)), clock, store.journal)
    ends = _Ends()
    ends.loop = loop
    loop.attach(ends)
    snaps = Snapshots(loop, ends, store.accounting, _record)  # type: ignore[arg-type]
    spec = JobSpec(user="bench", gpus_per_task=1, time_limit=3_600 * SECOND, command=("true",))
    rounds = 0
    t0 = time.perf_counter()
    jobs = 0
    while loop.accepted < inputs:
        n = min(per_round, (inputs - loop.accepted) // 2) or 1
        # Distinct objects, as a live controller holds them (a shared one pickles once).
        specs = [dataclasses.replace(spec) for _ in range(n)]
        loop.submit_many(specs, [f"bench/{rounds:032x}/{i}" for i in range(n)])
        rounds += 1
        jobs += n
        clock.advance(1)
        loop.run_due()
        clock.advance(10 * SECOND)
        loop.accept(ends.ended)
        ends.ended = []
        loop.run_due()
        # As the controller's step does: decisions are booked, then dropped.
        loop.engine.decisions.entries.clear()
        # The worst case a live controller meets: its last snapshot one whole interval
        # before the end (a save is due every interval), so the restart replays a full
        # interval of tail -- not a lucky short one, nor two (a skipped due save).
        last = inputs - snaps.cadence.every
        if loop.accepted <= last and (snaps.due() or loop.accepted + 2 * n + 2 > last):
            snaps.save()
        if jobs % 50_000 < per_round:
            print(f"  built {loop.accepted:,} inputs, {len(loop.engine.jobs):,} jobs in memory",
                  flush=True)  # fmt: skip
    clock.advance(10 * SECOND)
    loop.run_due()
    return jobs, time.perf_counter() - t0


def copy(source: Store, target: Store) -> None:
    """The same journal (in the same order) and the same snapshot, through the interface."""
    batch: list[Event] = []
    for event in source.journal.read():
        batch.append(event)
        if len(batch) == 10_000:
            target.journal.write(batch)
            batch = []
    target.journal.write(batch)
    found = source.journal.load_snapshot()
    assert found is not None
    # Positions are each store's own: the snapshot's is the same count of inputs here.
    offset = target.journal.position() - source.journal.position()
    target.journal.save_snapshot(found[0] + offset, found[1])
    target.accounting.archive(source.accounting.query())


def restart(url: str, *, full: bool = False) -> tuple[float, float, int, int]:
    """Seconds (wall, CPU) to open the store and recover a controller; inputs replayed;
    jobs known."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    store = open_store(url)
    if full:
        store.journal.load_snapshot = lambda: None  # type: ignore[method-assign]
    controller = Controller(
        _cluster(),
        profile(POLICY),
        store.journal,
        clock=FakeClock(10**13),
        run_as_submitter=False,
        epochs=store.epochs,
        accounting=MemoryAccounting() if full else store.accounting,
        record=_record,
    )
    replayed = controller.recover()
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    jobs = len(controller.engine.jobs)
    store.close()
    return seconds, cpu, replayed, jobs


def _stores(root: Path, keep: str | None) -> Iterator[tuple[str, str]]:
    yield "sqlite", sqlite_url(Path(keep).resolve() if keep else root / "state.db")
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        print("postgresql: initdb/pg_ctl not found (apt-get install postgresql): skipped")
        return
    server = TempPostgres(bin_dir, durable=True).start()
    try:
        yield "postgresql", server.new_database()
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--per-round", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also replay without the snapshot")
    parser.add_argument(
        "--keep",
        metavar="FILE",
        help="keep the built SQLite journal in FILE, and reuse it if FILE exists (the build "
        "takes minutes; a quiet moment is for the timing)",
    )
    args = parser.parse_args()
    print("$", " ".join([Path(sys.executable).name, *sys.argv]))
    root = Path(tempfile.mkdtemp(prefix="phx-restart-"))
    results: dict[str, float] = {}
    try:
        sqlite: Store | None = None
        for name, url in _stores(root, args.keep):
            store = open_store(url)
            if sqlite is None:
                if store.journal.count():
                    print(f"reusing {args.keep}: {store.journal.count():,} inputs")
                else:
                    print(f"building {args.inputs:,} inputs on SQLite (snapshot every "
                          f"{SNAPSHOT_EVERY:,})", flush=True)  # fmt: skip
                    jobs, seconds = build(store, args.inputs, args.per_round)
                    print(f"  {jobs:,} jobs, {store.journal.count():,} inputs in {seconds:.0f} s")
                sqlite = store
            else:
                t0 = time.perf_counter()
                copy(sqlite, store)
                print(f"  copied to {name} in {time.perf_counter() - t0:.0f} s")
                store.close()
            found = open_store(url)
            snap = found.journal.load_snapshot()
            count = found.journal.count()
            found.close()
            size = len(snap[1]) / 1e6 if snap else 0.0
            times, cpus = [], []
            for _ in range(args.repeat):
                seconds, cpu, replayed, known = restart(url)
                times.append(seconds)
                cpus.append(cpu)
            print(f"  load average {os.getloadavg()[0]:.1f}")
            print(
                f"{name:>10}: {count:,} inputs, snapshot {size:.1f} MB; restart min "
                f"{min(times):.2f} / median {statistics.median(times):.2f} / max "
                f"{max(times):.2f} s, CPU median {statistics.median(cpus):.2f} s (tail "
                f"replayed: {replayed:,} inputs, {known:,} jobs in memory)",
                flush=True,
            )
            results[name] = statistics.median(times)
            if args.full:
                seconds, cpu, replayed, known = restart(url, full=True)
                print(
                    f"{name:>10}: without the snapshot: {seconds:.1f} s, CPU {cpu:.1f} s "
                    f"({replayed:,} inputs replayed, {known:,} jobs in memory)",
                    flush=True,
                )
        if sqlite is not None:
            sqlite.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, median in results.items():
        print(verdict(median <= TARGET_S, f"restart on {name} after {args.inputs:,} inputs "
                      f"<= {TARGET_S:g} s"))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
