"""Who reclaims from whom with ClusterQueues: the reclaim log of one ``phalanx`` replay.

Runs the Philly trace (a slice) on the README's 64 x 8 GPUs with ``--queues FILE``, logs
every victim search that ``preempt/clusterqueue`` commits (its mode: ``reclaim`` for a job
within its nominal quota, ``top-up``, ``borrow``, ``own``), and prints per queue how often
it reclaimed in each mode and lost jobs, how the reclaims chain (a queue reclaiming back
from the queue that reclaimed from it, a victim that had itself just started by
reclaiming), the run's figures, and optionally the figures as JSON
(``--json``, as ``phalanx simulate --json``, for ``examples/philly_queues.py --table``).

    python bench/reclaim_log.py --trace philly.csv --queues philly-queues-512.yaml \
        --limit 20000 [--param preempt/clusterqueue.top_up=false] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import shlex
import sys
import time
from typing import Any

from phalanx.config.queues import queues_from_file
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine.decisions import Preempted
from phalanx.errors import InputError
from phalanx.policies.catalog import profile
from phalanx.policies.clusterqueue import preemption as cqp
from phalanx.sim.experiment import (
    Experiment,
    PolicyResult,
    trace_workload,
    uniform_cluster,
    write_results,
)
from phalanx.sim.metrics import summarize
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces.options import TraceOptions

GPU_FR = ("gpu", "nvidia.com/gpu")


@dataclasses.dataclass
class Commit:
    at: int
    job: int
    queue: str
    mode: str
    gpus: int
    victims: list[tuple[int, str, int, int]]  # id, queue, gpus, ran ms
    usage: dict[str, tuple[int, int]]  # queue -> (used, nominal) before


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", required=True)
    p.add_argument("--queues", required=True)
    p.add_argument("--limit", type=int)
    p.add_argument("--window", help="START:END hours")
    p.add_argument("--param", action="append", default=[], help="PLUGIN.KEY=JSON value")
    p.add_argument("--policy", default="phalanx")
    p.add_argument("--json")
    p.add_argument("--log", help="write every commit as JSON lines")
    p.add_argument("--per-account", action="store_true")
    return p.parse_args()


def main() -> int:
    args = _args()
    print("$", shlex.join(sys.argv))
    window = None
    if args.window:
        a, b = args.window.split(":")
        window = (int(float(a) * HOUR), int(float(b) * HOUR))
    options = TraceOptions(limit=args.limit, window=window)
    try:
        workload = trace_workload(args.trace, "philly", options)
        queues = queues_from_file(args.queues)
    except InputError as exc:
        print(f"reclaim_log: {exc}", file=sys.stderr)
        return 2
    choice = uniform_cluster(64, 8, 8)
    cluster = dataclasses.replace(choice.cluster, queues=queues)
    choice = dataclasses.replace(choice, cluster=cluster)
    prof = profile(args.policy)
    params = {k: dict(v) for k, v in prof.params.items()}
    for item in args.param:
        key, value = item.split("=", 1)
        plugin, name = key.rsplit(".", 1)
        params.setdefault(plugin, {})[name] = json.loads(value)
    prof = dataclasses.replace(prof, params=params)

    commits: list[Commit] = []
    original = cqp._QuotaBudget.commit

    def logged(self: Any, victims: list[Any], current: Any) -> None:
        tree = self.static.tree.queues
        usage = {}
        for name in {self.cq.name, *(self.queue_of[v.id].name for v in victims)}:
            node = tree[name]
            usage[name] = (node.usage.get(GPU_FR, 0) // 1000, node.nominal(GPU_FR) // 1000)
        commits.append(
            Commit(
                self.ctx.now,
                self.job.id,
                self.cq.name,
                self.mode,
                int(self.job.shape.nodes_min * self.job.shape.gpus),
                [
                    (
                        v.id,
                        self.queue_of[v.id].name,
                        int(v.alloc.gpus) if v.alloc else 0,
                        self.ctx.now - (v.start or 0),
                    )
                    for v in victims
                ],
                usage,
            )
        )
        original(self, victims, current)

    cqp._QuotaBudget.commit = logged  # type: ignore[method-assign]
    sim = Simulator(choice.cluster, prof, workload.jobs, keep_segments=args.per_account)
    c0 = time.process_time()
    record = sim.run()
    cpu = time.process_time() - c0
    metrics = summarize(record)
    print(f"jobs {len(record.jobs):,}  cpu {cpu:.1f} s  passes {record.passes:,}")
    _report(metrics, commits, sim)
    if args.log:
        with open(args.log, "w") as f:
            for c in commits:
                f.write(json.dumps(dataclasses.asdict(c)) + "\n")
    if args.json:
        from phalanx.sim.experiment import rejected_examples
        from phalanx.sim.metrics import per_account

        exp = Experiment(workload, choice, [prof], per_account=args.per_account)
        result = PolicyResult(
            metrics=metrics,
            rejected_examples=rejected_examples(record, workload.jobs),
            accounts=per_account(record) if args.per_account else {},
            run=None,
        )
        write_results(args.json, exp, {prof.name: result})
    return 0


def _report(metrics: Any, commits: list[Commit], sim: Simulator) -> None:
    queues = metrics.queues or {}
    violation = sum(q["guarantee_violation_gpu_hours"] for q in queues.values())
    reclaims = sum(q["reclaims"] for q in queues.values())
    print(
        f"JCT mean {metrics.jct_mean_s:,.1f} s  wait mean {metrics.wait_mean_s / 60:,.1f} min  "
        f"violation {violation:,.1f} GPU-h  reclaims {reclaims:,}  "
        f"preemptions {metrics.preemptions:,}  lost {metrics.lost_gpu_hours:,.1f} GPU-h  "
        f"util {metrics.utilization * 100:.2f} %"
    )
    by_mode = collections.Counter(c.mode for c in commits)
    print("commits by mode:", dict(by_mode))
    # Per queue: commits as reclaimer by mode, jobs lost to other queues, violation.
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    pairs: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for c in commits:
        rows[c.queue][c.mode] += 1
        for _, vq, _, _ in c.victims:
            if vq != c.queue:
                rows[vq]["lost"] += 1
                rows[c.queue]["victims_" + c.mode] += 1
                pairs[(c.queue, vq, c.mode)] += 1
    print(
        f"{'queue':8} {'nom':>4} {'viol GPU-h':>10} {'reclaim':>7} {'top-up':>6} "
        f"{'borrow':>6} {'own':>5} {'v_recl':>6} {'v_top':>6} {'lost':>6}"
    )
    for name, q in sorted(queues.items(), key=lambda kv: -kv[1]["guarantee_violation_gpu_hours"]):
        r = rows.get(name, collections.Counter())
        print(
            f"{name:8} {q['nominal_gpus']:>4.0f} {q['guarantee_violation_gpu_hours']:>10.1f} "
            f"{r['reclaim']:>7} {r['top-up']:>6} {r['borrow']:>6} {r['own']:>5} "
            f"{r['victims_reclaim']:>6} {r['victims_top-up']:>6} {r['lost']:>6}"
        )
    print("top pairs (reclaimer <- victim queue, mode): victims")
    for (a, b, m), n in pairs.most_common(12):
        print(f"  {a} <- {b} {m}: {n}")
    # Chains: the victim had started at most 1 h before; the victim job had itself been the
    # reclaimer of a commit (started by reclaiming); a reverse reclaim within 1 h.
    reclaimer_jobs = {c.job: c for c in commits}
    last_from: dict[tuple[str, str], int] = {}
    young = self_made = reverse = 0
    ran: list[int] = []
    for c in commits:
        for vid, vq, _, ran_ms in c.victims:
            if vq == c.queue:
                continue
            ran.append(ran_ms)
            if ran_ms < HOUR:
                young += 1
            if vid in reclaimer_jobs and reclaimer_jobs[vid].at < c.at:
                self_made += 1
            t = last_from.get((vq, c.queue))
            if t is not None and c.at - t < HOUR:
                reverse += 1
            last_from[(c.queue, vq)] = c.at
    ran.sort()
    if ran:
        med = ran[len(ran) // 2] / MINUTE
        print(
            f"other-queue victims {len(ran):,}: ran < 1 h before {young:,}; "
            f"victim had itself preempted to start {self_made:,}; "
            f"reverse within 1 h {reverse:,}; median run before {med:,.1f} min"
        )
    # Requeued victims that preempt again to restart.
    victims_ever = {vid for c in commits for vid, vq, _, _ in c.victims if vq != c.queue}
    again = sum(1 for c in commits if c.job in victims_ever)
    print(f"commits by a job that had been a victim: {again:,} of {len(commits):,}")
    preempted = [d for d in sim.engine.decisions.entries if type(d) is Preempted]
    per_job = collections.Counter(d.job_id for d in preempted)
    often = sum(1 for n in per_job.values() if n >= 3)
    print(
        f"preempted jobs {len(per_job):,}; preempted >= 3 times {often:,}; "
        f"max {max(per_job.values(), default=0)}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
