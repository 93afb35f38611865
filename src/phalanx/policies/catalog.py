"""Every built-in plugin under its id, and the baseline profiles built from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.domain.time import DAY, HOUR, MINUTE, SECOND
from phalanx.errors import ConfigError
from phalanx.policies.backfill import BackfillScheduler, FifoScheduler, GreedyScheduler
from phalanx.policies.clusterqueue import ClusterQueueAdmission, ClusterQueuePreempt, KueueOrder
from phalanx.policies.filter_fit import FitFilter
from phalanx.policies.k8s_default import PodGroupPermit
from phalanx.policies.preempt_checkpoint import CheckpointPreempt
from phalanx.policies.priority_multifactor import MultifactorPriority
from phalanx.policies.priority_simple import BasicPriority, LasPriority
from phalanx.policies.proportion import ProportionAdmission, ProportionOrder, ProportionReclaim
from phalanx.policies.quota import QuotaAdmission
from phalanx.policies.select_simple import BinpackSelect, SpreadSelect
from phalanx.policies.select_topology import TopologySelect
from phalanx.policies.tiresias import LasPreempt, TiresiasStep
from phalanx.policies.volcano import DrfOrder
from phalanx.sched.profile import Profile
from phalanx.sched.registry import Registry

__all__ = ["POLICIES", "REGISTRY", "profile"]

REGISTRY = Registry()
# queue sort
REGISTRY.register("priority/basic", BasicPriority)
REGISTRY.register("priority/multifactor", MultifactorPriority)
REGISTRY.register("priority/las", LasPriority)
REGISTRY.register("priority/drf", DrfOrder)
REGISTRY.register("priority/kueue", KueueOrder)
REGISTRY.register("priority/proportion", ProportionOrder)
# pre-filter, filter, score
REGISTRY.register("admit/quota", QuotaAdmission)
REGISTRY.register("admit/clusterqueue", ClusterQueueAdmission)
REGISTRY.register("admit/proportion", ProportionAdmission)
REGISTRY.register("filter/fit", FitFilter)
REGISTRY.register("select/topology", TopologySelect)
REGISTRY.register("select/spread", SpreadSelect)
REGISTRY.register("select/binpack", BinpackSelect)
# permit, post-filter
REGISTRY.register("permit/pod-group", PodGroupPermit)
REGISTRY.register("preempt/checkpoint", CheckpointPreempt)
REGISTRY.register("preempt/las", LasPreempt)
REGISTRY.register("preempt/clusterqueue", ClusterQueuePreempt)
REGISTRY.register("preempt/proportion", ProportionReclaim)
# reservation and backfill
REGISTRY.register("sched/builtin", FifoScheduler)
REGISTRY.register("sched/backfill", BackfillScheduler)
REGISTRY.register("sched/greedy", GreedyScheduler)
REGISTRY.register("sched/tiresias", TiresiasStep)

if TYPE_CHECKING:  # every built-in plugin satisfies its point's Protocol (mypy checks it)
    from phalanx.sched import points

    _queue_sort: list[type[points.QueueSortPlugin]] = [
        BasicPriority,
        MultifactorPriority,
        LasPriority,
        DrfOrder,
        ProportionOrder,
        KueueOrder,
    ]
    _pre_filter: list[type[points.PreFilterPlugin]] = [
        QuotaAdmission,
        ClusterQueueAdmission,
        ProportionAdmission,
    ]
    _reserve: list[type[points.ReservePlugin]] = [ClusterQueueAdmission]
    _filter: list[type[points.FilterPlugin]] = [FitFilter]
    _score: list[type[points.ScorePlugin]] = [TopologySelect, SpreadSelect, BinpackSelect]
    _permit: list[type[points.PermitPlugin]] = [PodGroupPermit]
    _post_filter: list[type[points.PostFilterPlugin]] = [
        CheckpointPreempt,
        LasPreempt,
        ClusterQueuePreempt,
        ProportionReclaim,
    ]
    _reservation: list[type[points.ReservationPlugin]] = [
        BackfillScheduler,
        FifoScheduler,
        GreedyScheduler,
        TiresiasStep,
    ]

# Baselines that skip what does not fit say Resources for every such job (no "Priority"
# queue position in Kubernetes, Volcano or Tiresias).
_SKIP: dict[str, object] = {"reason": "Resources"}

# The reference Slurm's configuration (shared/slurm/start_slurm.sh): multifactor weights,
# a 7-day half-life, Fair Tree; backfill reserves the top job within bf_window (1 day).
# It sets no SchedulerParameters, so its backfill runs with Slurm 22.05's defaults (slurm.conf
# man page): bf_interval=30 s, bf_max_job_test=500, bf_window=1440 min, bf_resolution=60 s,
# bf_continue off (a pass here is never interrupted to release locks, so it has nothing to do).
_SLURM_BACKFILL: dict[str, object] = {
    "depth": 1,
    "window_ms": 1 * DAY,
    "max_job_test": 500,
    "resolution_ms": 60 * SECOND,
    "interval_ms": 30 * SECOND,
}
_SLURM_WEIGHTS: dict[str, object] = {
    "weight_age": 1000,
    "weight_fairshare": 10000,
    "weight_jobsize": 1000,
    "weight_partition": 1000,
    "weight_qos": 1000,
    "fairshare": "fair_tree",
}

POLICIES: dict[str, Profile] = {
    "fifo": Profile(
        name="fifo",
        queue_sort="priority/basic",
        score="select/topology",
        reservation="sched/builtin",
        calc_period=0,  # submit order never changes
        description="Strict FIFO with gangs: the first job that does not fit blocks the rest.",
    ),
    "slurm": Profile(
        name="slurm",
        queue_sort="priority/multifactor",
        # Association and QOS limits (sacctmgr's GrpTRES, MaxJobs, ...) held as quotas; no
        # quota of its own where none are set, and Kueue's ClusterQueues are not Slurm's.
        pre_filter=("admit/clusterqueue",),
        score="select/topology",
        post_filter="preempt/checkpoint",
        reservation="sched/backfill",
        params={
            "sched/backfill": _SLURM_BACKFILL,
            "priority/multifactor": _SLURM_WEIGHTS,
            "admit/clusterqueue": {"without_queues": "none", "cluster_queues": False},
        },
        description="Multifactor priority, EASY backfill, topology-aware placement.",
    ),
    "k8s-default": Profile(
        name="k8s-default",
        queue_sort="priority/basic",
        score="select/spread",
        permit="permit/pod-group",
        reservation="sched/greedy",
        members="pods",
        params={
            "permit/pod-group": {"hold_timeout_ms": 10 * MINUTE},
            "sched/greedy": {**_SKIP, "rest": "Resources"},
        },
        calc_period=0,  # submit order never changes
        description="Vanilla Kubernetes: pods placed one by one, spread, no gang.",
    ),
    "kueue": Profile(
        name="kueue",
        queue_sort="priority/kueue",
        # ClusterQueues, cohorts and flavors where the cluster has them (--queues); else
        # admit/quota's per-account quota in one cohort.
        pre_filter=("admit/clusterqueue",),
        reserve=("admit/clusterqueue",),
        score="select/spread",
        # Kueue's preemption and reclaim (the ClusterQueues' policies), freeing quota only,
        # victims in Kueue's order.
        post_filter="preempt/clusterqueue",
        reservation="sched/greedy",
        params={"preempt/clusterqueue": {"order": "kueue", "placement": False, "top_up": False}},
        calc_period=0,  # submit order never changes
        description="Kueue: gang admission against quota with cohort borrowing, BestEffortFIFO.",
    ),
    "volcano": Profile(
        name="volcano",
        # Volcano's proportion plugin over the cluster's Volcano Queues (queue order by share,
        # allocation within each queue's deserved share); without them, DRF between accounts.
        queue_sort="priority/proportion",
        pre_filter=("admit/proportion",),
        score="select/binpack",
        post_filter="preempt/proportion",
        reservation="sched/greedy",
        params={"sched/greedy": {**_SKIP, "rest": "none"}},
        calc_period=0,  # submit order never changes
        description="Volcano: gangs, DRF between accounts, binpack, no backfill.",
    ),
    "tiresias": Profile(
        name="tiresias",
        queue_sort="priority/las",
        score="select/topology",
        post_filter="preempt/las",
        reservation="sched/tiresias",
        pass_on_recalc=True,
        # Tiresias suspends a preempted job with a checkpoint taken at preemption: every victim
        # is asked to save at the signal and gets a minute for it before the kill
        # (docs/baselines.md).
        suspend_grace=1 * MINUTE,
        description=(
            "Tiresias: discretised 2D-LAS (3 queues by GPU-time, PromoteKnob), preemption that "
            "suspends victims with a checkpoint."
        ),
    ),
    "phalanx": Profile(
        name="phalanx",
        queue_sort="priority/multifactor",
        # ClusterQueues where the cluster has them (--queues): quota that knows placement,
        # and preemption and reclaim whose victims free a placement (preempt/clusterqueue:
        # preempt/checkpoint's search with the quota as its budget, and its parameters).
        pre_filter=("admit/clusterqueue",),
        reserve=("admit/clusterqueue",),
        score="select/topology",
        post_filter="preempt/clusterqueue",
        reservation="sched/backfill",
        params={
            "admit/clusterqueue": {"without_queues": "none"},
            # Up to 8 blocked jobs a pass may look for cheap victims (below). No Slurm bounds
            # (bf_max_job_test, bf_interval): every pass backfills over the whole queue, since
            # a short job deep in a long queue is what favouring short jobs is for, and the
            # pass already stops early on a full cluster and skips shapes that failed.
            "sched/backfill": {"depth": 1, "victim_search_depth": 8},
            # A multi-node gang waits up to 30 minutes for the fewest leaf switches that hold
            # it, then takes any (Slurm's --switches=N@wait, as a default). Measured on Philly
            # hours 2000-2300 on 64 x 8 GPUs (8,285 jobs): 0, 10, 30 and 120 minutes gave 13,
            # 6, 6 and 6 gangs on extra leaves and 0.65, 0.97, 0.93 and 1.05 h mean wait for
            # 9-64 GPUs (slurm: 15 gangs, 2.83 h); 30 minutes also left the fewest GPUs idle
            # while jobs waited (0.46 % against 0.79 % at 0).
            "select/topology": {"gang_switches_wait_ms": 30 * MINUTE},
            # Checkpoint-aware least-attained-service preemption, only where it costs next to
            # nothing: a job with under 1 GPU-hour of service may preempt one with over 10 that
            # checkpointed in the last 3 minutes and was never requeued before, holding no more
            # GPUs than the job asks. Without that bound 1-GPU jobs displaced 8-GPU runs whose
            # other 7 GPUs then stood idle while the victim waited for a whole node: on the full
            # Philly trace on 512 GPUs it took idle-while-pending from 3.15 % to 3.51 % and the
            # mean wait (requeues included) of 9-64 GPU gangs from 83.7 h to 94.3 h (slurm:
            # 75.6 h). Victims could save at the signal as Tiresias' do (suspend_grace 1 min):
            # on 1,024 GPUs that moves the mean JCT from 13,150.7 s to 13,149.8 s and the 5-8
            # GPU wait from 10.8 s to 9.9 s (tiresias: 13,143.8 s, slurm 3.5 s); opening every
            # such victim at any time (max_loss_ms 30 minutes) as well raised the mean JCT on
            # 512 GPUs to 31,495 s (its requeued victims wait again). Only victims of more GPUs
            # than the job (no max_victim_gpu_ratio) brought the 1-GPU wait on 1,024 GPUs down
            # (11.4 s -> 3.5 s, mean JCT 13,145.0 s), at the cost of the 2-4 and 5-8 GPU jobs
            # (30 s and 66 s against slurm's 0.1 s and 3.5 s). Not measured on its own on 512
            # GPUs in time, so not the default yet.
            # These preemptions, mostly between jobs of one size (on 512 GPUs: 8 by 8 GPUs
            # 823 times, 1 by 1 665, 4 by 4 381), are what the mean JCT is made of: sparing
            # every victim of more than one GPU (max_victim_gpus 1) on the first 30,000 jobs
            # on 512 GPUs raised the mean JCT from 27,820 s to 34,215 s and the mean wait of 1,
            # 2-4, 5-8 GPU jobs from 2.6, 6.1, 78.7 h to 4.4, 9.4, 76.1 h (slurm: 39,177 s;
            # 5.5, 7.0, 99.8 h). Yet they are also what the 5-8 GPU jobs wait for on 1,024
            # GPUs: they wait 72 s in all before their first starts there (slurm 5,798 s), and
            # the 9.1 s are the requeue waits of 10 whole-node victims (of 16-GPU gangs 6
            # times, of 8-GPU jobs 4; 14,930 s).
            # There the mean JCT behind tiresias' (6.9 s) is all 1-GPU wait (10.6 s of the
            # mean against 0.8 s), 75 % of it from four bursts (hours 813, 1140, 710, 1148)
            # on a full cluster. On the first 17,500 jobs more 1-GPU victims (max_victim_gpus
            # 1 with suspend_grace 1 min, max_loss_ms 30 min, victim_attained 1 GPU-hour) left
            # the 1-GPU wait at 31.0-31.6 s (31.0 s as is, slurm 32.1 s): a full cluster has
            # too few 1-GPU runs. Tiresias' 0.1 s come from 1-GPU jobs preempting 2-, 4- and
            # 8-GPU runs, whose requeue waits give its 2-4 and 5-8 GPU jobs 297 s and 47 s
            # (slurm 0.4 s, 16.4 s).
            # Two rules against the requeue waits of whole-node victims, measured for issue 9
            # and left off: a job may displace cheap victims only once it has waited
            # job_min_wait_ms (one that finds room within minutes passes no wait on), and
            # victims of more GPUs than covered_victim_gpus go only where they can start again
            # at once beside the job (moved, not queued). Full trace on 1,024 GPUs (mean JCT;
            # mean wait of 1, 2-4, 5-8, 9-64 GPUs): as is 13,150.7 s; 11.4, 0.0, 9.1, 1.4 s;
            # job_min_wait 10 min 13,150.2 s; 11.5, 0.2, 5.9, 6.8 s; 30 min 13,150.2 s; 11.7,
            # 0.2, 5.0, 19.0 s; covered_victim_gpus 1 13,150.9 s; 11.6, 0.2, 3.8, 19.7 s
            # (slurm 13,150.1 s; 11.8, 0.1, 3.5, 18.1 s). Sparing whole-node victims turns
            # their requeue waits back into first waits: with covered_victim_gpus 1 the 5-8 GPU
            # jobs wait 5,693 s in all before their first starts (72 s as is, slurm 5,798 s)
            # and 548 s after requeues (14,930 s as is). On 512 GPUs a full cluster has no room
            # for the victim, so it is max_victim_gpus 1 again: on the first 30,000 jobs
            # 37,260 s; 5.4, 10.3, 73.1, 58.0 h (as is 27,820 s; 2.6, 6.1, 78.7, 61.2 h).
            # job_min_wait 10 min on the full trace on 512 GPUs: 30,177 s; 2.6, 5.2, 98.7,
            # 28.7 h, 65+ 9.8 h (as is 29,435 s; 2.3, 5.1, 100.6, 31.3, 12.8 h). No ratio with
            # suspend_grace 1 min on 1,024 GPUs: 13,145.2 s; 3.3, 41.5, 56.1, 14.8 s; with
            # max_loss_ms 30 min as well 13,144.9 s; 3.4, 29.5, 65.2, 10.2 s (tiresias
            # 13,143.8 s).
            # Runs of 2 to 4 GPUs are never cheap victims (spared_victim_gpus): on the full
            # trace on 512 GPUs their requeue waits were 0.5 h of the 2-4 GPU class's 5.1 h
            # (slurm 4.0 h; 618 such victims), and sparing them leaves the mean JCT as it was
            # (29,434.7 -> 29,430.8 s; 1, 2-4, 5-8, 9-64, 65+ GPU waits 2.3, 4.6, 104.6, 29.6,
            # 13.7 h). Sparing whole-node victims too ([2, 8]) cost the gangs (with the age
            # weight below: 28,802 s; 9-64 GPUs 72.6 h against 31.3 h) and, on 1,024 GPUs,
            # raised the 2-4 and 9-64 GPU waits above slurm's (0.2 s, 20.8 s).
            # Tried for issue 9 on 1,024 GPUs, where phalanx's mean JCT trails tiresias' by
            # 6.7 s: 1-GPU victims only, suspended with a checkpoint at the signal (suspend_grace
            # 1 min, max_loss_ms 30 min, victim_attained 2 GPU-h), moved 1-GPU wait from the
            # jobs of the bursts to their victims without shortening it (victims +172.7 h,
            # preemptors -169.8 h; 1-GPU wait 11.4 -> 11.5 s): the bursts are of 3-hour jobs,
            # no shorter than what is left of the runs they displace. tiresias' lead comes from
            # 1-GPU jobs displacing 2-8 GPU runs (its 2-4 and 5-8 GPU jobs wait 63.5 s and 43.1 s
            # against slurm's 0.1 s and 3.5 s), which the size classes leave no room for.
            "preempt/clusterqueue": {
                "opportunistic": True,
                "job_attained_gpu_ms": 1 * HOUR,
                "victim_attained_gpu_ms": 10 * HOUR,
                "max_loss_ms": 3 * MINUTE,
                "max_victim_restarts": 1,
                "lease_ms": 5 * MINUTE,
                "max_victim_gpu_ratio": 1,
                "spared_victim_gpus": [2, 4],
            },
            # Small and short jobs first (what lowers mean JCT), but a job that has waited a
            # day outranks any newcomer, so long jobs are not pushed to the end of the trace.
            # weight_age 22,500 (25,000 until issue 9's size classes were measured): with the
            # spared victims above, full trace on 512 GPUs, mean JCT 27,572.1 s; 1, 2-4, 5-8,
            # 9-64, 65+ GPU waits 1.6, 3.4, 112.6, 31.3, 12.4 h, utilisation 72.12 % (slurm
            # 37,060 s; 3.5, 4.0, 145.5, 84.6, 38.2 h; 71.59 %); first 30,000 jobs 24,858 s;
            # 1.8, 4.0, 80.7, 65.4 h (25,000: 27,820 s; 2.6, 6.1, 78.7, 61.2 h; slurm 39,177 s;
            # 5.5, 7.0, 99.8, 99.9 h). 20,000 gave 28,128 s; 1.7, 3.2, 116.4, 31.6, 9.3 h but
            # utilisation 71.12 % (weight_short 25,000 instead: 27,967 s, 71.06 %): the last
            # job to end, a 12-day 8-GPU run submitted at hour 2011, starts later, and with it
            # the makespan. Aging faster is worse for every class (37,500 over 1.5 days:
            # 36,779 s; 50,000 over 2 days: 52,698 s), as is a smaller weight_short (15,000:
            # 35,414 s; 2-4 GPUs 7.1 h).
            # The age weight grows slightly with the GPUs asked (age_size_exponent 0.01: a
            # 64-GPU gang ages 4 % faster than a 1-GPU job), which settles who goes first among
            # jobs that have all waited the day out, in the big gangs' favour. Measured on the
            # full Philly trace on 512 GPUs (mean JCT; mean wait of 1, 2-4, 5-8, 9-64, 65+
            # GPUs): 0 gave 30,432 s; 2.7, 4.7, 89.8, 89.3, 11.4 h; 0.01 gives 29,647 s; 2.4,
            # 5.0, 100.0, 28.5, 9.4 h (slurm: 37,060 s; 3.5, 4.0, 145.5, 84.6, 38.2 h). More is
            # worse on every count but the gangs': 0.03 gave 31,938 s; 3.1, 6.3, 98.8, 33.0,
            # 7.5 h; 0.05 gave 32,716 s; 3.4, 5.7, 97.0, 25.8, 4.5 h; 0.5 (with requeued_full_age)
            # 72,402 s with 14.0 h for 1-GPU jobs: a gang that outranks every small job holds
            # the one reservation. On 1,024 GPUs the exponent (0.01 to 0.15) changes nothing.
            # With weight_age 25,000 and no spared victims the 2-4 GPU jobs waited longer than
            # under slurm (5.0 h against 4.0 h). Per-job records of the full run on 512 GPUs
            # said why (5.1 h since nominations):
            # 4.6 h are first waits, and those are the long jobs' (the 738 4-GPU and 228 2-GPU
            # jobs with time limits of 48 h or more wait 13.0 h and 12.6 h; 1-GPU jobs that
            # long 5.3 h, 4-GPU jobs under 2 h 3.0 h): weight_short keeps a 3-day job behind
            # fresh 1-hour jobs until it has waited about 8 h, and 40 % of the 4-GPU jobs ask
            # for 48 h or more (3.5 % of the 1-GPU jobs). The other 0.5 h are requeue waits of
            # cheap victims (472 of the 1,870 4-GPU jobs, 381 times for another 4-GPU job).
            # Reserving for the first blocked job of each size class as well (sched/backfill
            # class_reserve [1, 4, 8, 64]) changed nothing on 1,024 GPUs and, on hours
            # 2000-2300 of the trace on 512, cut the 5-8 and 9-64 GPU waits (1.50 -> 1.18 h,
            # 1.45 -> 1.25 h) but raised the 1 and 2-4 GPU ones and the mean JCT (+0.5 %).
            # On the first 30,000 jobs on 512 GPUs it gave 32,806 s against 27,820 s, and 1,
            # 2-4, 5-8, 9-64 GPU waits of 4.1, 6.5, 79.8, 58.0 h against 2.6, 6.1, 78.7, 61.2 h.
            # Putting requeued jobs first (requeued_full_age), so that victims wait less after
            # their requeues: on the first 30,000 jobs on 512 GPUs it cut the 9-64 GPU wait
            # (61.2 -> 51.7 h) but hardly the 2-4 GPU one (6.06 -> 5.99 h), and raised the
            # mean JCT from 27,820 s to 31,783 s and the 1-GPU wait from 2.6 h to 3.8 h. On
            # 1,024 GPUs (full trace) 13,150.7 s; 1, 2-4, 5-8, 9-64 GPUs 11.4, 0.0, 8.1, 0.6 s:
            # put first, the 10 whole-node victims still wait 1,326 s each for a node to drain.
            # Capping the time limit the short factor sees (short_cap_ms, off), so that a 3-day
            # job is held behind fresh 1-hour jobs for at most 2.6 h (24 h cap) or 1.3 h (12 h)
            # of waiting instead of 8 h: full trace on 512 GPUs (mean JCT; 1, 2-4, 5-8, 9-64,
            # 65+ GPUs) 24 h gave 48,917 s; 7.5, 12.3, 114.0, 35.2, 0.5 h; 12 h 51,119 s; 8.2,
            # 12.4, 110.5, 43.4, 0.5 h. Jobs over the cap then tie on it, so a 7-day job no
            # longer waits behind 2-day ones and holds its GPUs for days while the queue is
            # deep: every class but the 65+ GPU gangs waits longer, the 2-4 GPU jobs too.
            "priority/multifactor": {
                **_SLURM_WEIGHTS,
                "queues_first": True,  # under ClusterQueues only
                "favor_small": True,
                "weight_jobsize": 4000,
                "weight_short": 20000,
                "weight_age": 22500,
                "max_age_ms": 1 * DAY,
                "age_size_exponent": 0.01,
            },
        },
        # Ages are measured in hours and usage decays over a week: recalculating every 15
        # minutes loses nothing and costs a third of Slurm's default 5.
        calc_period=15 * MINUTE,
        description=(
            "Multifactor priority favouring small and short jobs with a one-day aging bound, "
            "EASY backfill, topology-aware best fit that "
            "waits up to 30 minutes for the fewest leaf switches, checkpoint-aware preemption "
            "that also lets new jobs displace long runs of no more GPUs right after their "
            "checkpoints."
        ),
    ),
}


def profile(name: str) -> Profile:
    found = POLICIES.get(name)
    if found is None:
        raise ConfigError(
            f"unknown policy {name!r}; choose from {', '.join(POLICIES)}", field="--policy"
        )
    return found
