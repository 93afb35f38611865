"""Kueue and Volcano queues for the Philly trace: one queue per virtual cluster (the trace's
``cluster`` column, which is each job's account and so its namespace), each guaranteed a share
of the GPUs proportional to its virtual cluster's GPU-hours in the trace (largest remainders,
summing to the cluster's GPUs), free to borrow what others leave idle, and reclaiming it when
its own jobs need it. The same intent, written as each system's users write it:

- Kueue: a ClusterQueue per virtual cluster with that share as its ``nominalQuota``, all in
  one cohort (borrowing without limit) with ``reclaimWithinCohort: Any``, and a LocalQueue
  ``default`` in the virtual cluster's namespace pointing at it;
- Volcano (``scheduling.volcano.sh/v1beta1`` Queue, read by the ``volcano`` profile's
  proportion plugin): a Queue named as the virtual cluster with ``weight`` = that share (1
  where the share is 0 GPUs: Volcano's webhook turns weight 0 into 1), ``reclaimable: true``,
  no ``capability`` (borrowing without limit) and no ``guarantee``. Volcano's weight is the
  share: the proportion plugin water-fills the cluster over the weights of the queues that
  have jobs, capped by what each asks, so an idle queue's share goes to the others and comes
  back by reclaim (the ``reclaim`` action evicts from queues above their deserved share).
  ``guarantee`` is not that: it reserves resources no other queue may use even while idle
  (every other queue's real capability is the cluster less the others' guarantees), so
  guarantees equal to these shares, which sum to the whole cluster, would forbid borrowing.
  A job goes to the Queue named as its account (namespace), as a PodGroup's ``spec.queue``
  set per namespace would (``policies/proportion.py``).

    .venv/bin/python examples/philly_queues.py ../shared/traces/philly/philly.csv \\
        --gpus 512 > philly-queues.yaml
    .venv/bin/phalanx simulate --trace ../shared/traces/philly/philly.csv --queues \\
        philly-queues.yaml --nodes 64 --gpus-per-node 8 --nodes-per-switch 8 ...

``--table RESULT.json`` prints, from ``phalanx simulate --json``, the README's table: per
policy, mean JCT and wait and the ``queues`` figures summed over the queues.

CPU and memory are covered with quotas no job reaches (Kueue admits only resources a
ClusterQueue covers); GPUs are what the queues share. Bad input: a message naming the file
and line, exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

COHORT = "philly"
API = "apiVersion: kueue.x-k8s.io/v1beta1\n"
VOLCANO_API = "apiVersion: scheduling.volcano.sh/v1beta1\n"


def gpu_hours(path: str) -> dict[str, float]:
    """GPU-hours per virtual cluster (``num_gpus`` x ``duration``), by the ``cluster`` column."""
    hours: dict[str, float] = {}
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            try:
                vc = row["cluster"].strip()
                amount = float(row["num_gpus"]) * float(row["duration"]) / 3600.0
            except (KeyError, TypeError, ValueError) as exc:
                raise SystemExit(_bad(f"{path}:{line}: not a Philly row ({exc})")) from None
            if vc:
                hours[vc] = hours.get(vc, 0.0) + amount
    if not hours:
        raise SystemExit(_bad(f"{path}: no jobs"))
    return hours


def _bad(message: str) -> int:
    print(f"philly_queues: {message}", file=sys.stderr)
    return 2


def nominal_quotas(hours: Mapping[str, float], gpus: int) -> dict[str, int]:
    """``gpus`` split in proportion to ``hours`` by largest remainders (ties by name)."""
    total = sum(hours.values()) or 1.0
    exact = {vc: gpus * h / total for vc, h in hours.items()}
    quotas = {vc: int(x) for vc, x in exact.items()}
    left = gpus - sum(quotas.values())
    for vc in sorted(exact, key=lambda v: (-(exact[v] - quotas[v]), v))[:left]:
        quotas[vc] += 1
    return quotas


def queues_yaml(quotas: Mapping[str, int]) -> str:
    """The Kueue objects and the Volcano Queues for ``quotas`` (GPUs by virtual cluster)."""
    docs = [API + "kind: ResourceFlavor\nmetadata: {name: gpu}\n"]
    for vc in sorted(quotas):
        docs.append(
            API + f"kind: ClusterQueue\nmetadata: {{name: {vc}}}\nspec:\n"
            "  namespaceSelector: {}\n"
            f"  cohort: {COHORT}\n"
            "  preemption: {reclaimWithinCohort: Any}\n"
            "  resourceGroups:\n"
            "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n"
            "    flavors:\n"
            "    - name: gpu\n"
            "      resources:\n"
            f"      - {{name: nvidia.com/gpu, nominalQuota: {quotas[vc]}}}\n"
            "      - {name: cpu, nominalQuota: 1000000}\n"
            "      - {name: memory, nominalQuota: 1Ei}\n"
        )
        docs.append(
            API + f"kind: LocalQueue\nmetadata: {{name: default, namespace: {vc}}}\n"
            f"spec: {{clusterQueue: {vc}}}\n"
        )
    for vc in sorted(quotas):
        # weight >= 1: Volcano's webhook sets an unset (0) weight to 1 (module docstring).
        docs.append(
            VOLCANO_API + f"kind: Queue\nmetadata: {{name: {vc}}}\n"
            f"spec: {{weight: {max(quotas[vc], 1)}, reclaimable: true}}\n"
        )
    return "---\n".join(docs)


def table(result: Mapping[str, Any]) -> str:
    """A markdown table of a ``phalanx simulate --json`` result's per-queue figures."""
    lines = [
        "| policy | JCT mean | wait mean | guarantee violation GPU-h | borrowed GPU-h "
        "| reclaims | queues violated |",
        "|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in result["policies"].items():
        queues = figures.get("queues", {})
        violation = sum(q["guarantee_violation_gpu_hours"] for q in queues.values())
        borrowed = sum(q["borrowed_gpu_hours"] for q in queues.values())
        reclaims = sum(q["reclaims"] for q in queues.values())
        violated = sum(1 for q in queues.values() if q["guarantee_violation_gpu_hours"] > 0.5)
        lines.append(
            f"| {name} | {figures['jct_mean_s']:,.1f} s | {figures['wait_mean_s'] / 60:,.1f} min "
            f"| {violation:,.1f} | {borrowed:,.1f} | {reclaims:,} | {violated} of {len(queues)} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "trace", nargs="?", help="the Philly CSV (timestamp,duration,num_gpus,...,cluster)"
    )
    parser.add_argument("--gpus", type=int, help="the simulated cluster's GPUs")
    parser.add_argument("--table", metavar="RESULT.json", help="print the figures' table")
    args = parser.parse_args(argv)
    if args.table:
        try:
            with open(args.table) as f:
                print(table(json.load(f)))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return _bad(f"{args.table}: not a phalanx simulate --json result ({exc})")
        return 0
    if args.trace is None or args.gpus is None:
        return _bad("give the trace and --gpus (or --table RESULT.json)")
    if args.gpus <= 0:
        return _bad("--gpus must be positive")
    try:
        hours = gpu_hours(args.trace)
    except OSError as exc:
        return _bad(f"{args.trace}: {exc.strerror}")
    sys.stdout.write(
        f"# One ClusterQueue and one Volcano Queue per Philly virtual cluster, GPU shares by "
        f"GPU-hours ({args.gpus} GPUs)\n" + queues_yaml(nominal_quotas(hours, args.gpus))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
