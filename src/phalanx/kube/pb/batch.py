"""batch/v1's Job and CronJob. See declare.py for the notation. JobSpec's podFailurePolicy and
successPolicy are not declared (no generator sets them)."""

from __future__ import annotations

from phalanx.kube.pb.declare import BOOL, I32, I64, STR, F, L, message
from phalanx.kube.pb.meta import LABEL_SELECTOR, OBJECT_META, TIME

API_VERSION = "batch/v1"
KINDS = frozenset({"Job", "CronJob"})

MESSAGES = (
    message("batch.Job", F(1, "metadata", OBJECT_META, "o"), F(2, "spec", "batch.JobSpec", "o"),
            F(3, "status", "batch.JobStatus", "o")),
    message(
        "batch.JobSpec",
        F(1, "parallelism", I32, "op"), F(2, "completions", I32, "op"),
        F(3, "activeDeadlineSeconds", I64, "op"), F(7, "backoffLimit", I32, "op"),
        F(12, "backoffLimitPerIndex", I32, "op"), F(13, "maxFailedIndexes", I32, "op"),
        F(4, "selector", LABEL_SELECTOR, "op"), F(5, "manualSelector", BOOL, "op"),
        F(6, "template", "core.PodTemplateSpec"), F(8, "ttlSecondsAfterFinished", I32, "op"),
        F(9, "completionMode", STR, "op"), F(10, "suspend", BOOL, "op"),
        F(14, "podReplacementPolicy", STR, "op"), F(15, "managedBy", STR, "op"),
    ),
    message(
        "batch.JobStatus",
        L(1, "conditions", "batch.JobCondition", "o"), F(2, "startTime", TIME, "op"),
        F(3, "completionTime", TIME, "op"), F(4, "active", I32, "o"),
        F(5, "succeeded", I32, "o"), F(6, "failed", I32, "o"), F(11, "terminating", I32, "op"),
        F(7, "completedIndexes", STR, "o"), F(10, "failedIndexes", STR, "op"),
        F(8, "uncountedTerminatedPods", "batch.UncountedTerminatedPods", "op"),
        F(9, "ready", I32, "op"),
    ),
    message("batch.JobCondition", F(1, "type", STR), F(2, "status", STR),
            F(3, "lastProbeTime", TIME, "o"), F(4, "lastTransitionTime", TIME, "o"),
            F(5, "reason", STR, "o"), F(6, "message", STR, "o")),
    message("batch.UncountedTerminatedPods", L(1, "succeeded", STR, "o"),
            L(2, "failed", STR, "o")),
    message("batch.JobTemplateSpec", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "batch.JobSpec", "o")),
    message("batch.CronJob", F(1, "metadata", OBJECT_META, "o"),
            F(2, "spec", "batch.CronJobSpec", "o"), F(3, "status", "batch.CronJobStatus", "o")),
    message(
        "batch.CronJobSpec",
        F(1, "schedule", STR), F(8, "timeZone", STR, "op"),
        F(2, "startingDeadlineSeconds", I64, "op"), F(3, "concurrencyPolicy", STR, "o"),
        F(4, "suspend", BOOL, "op"), F(5, "jobTemplate", "batch.JobTemplateSpec"),
        F(6, "successfulJobsHistoryLimit", I32, "op"), F(7, "failedJobsHistoryLimit", I32, "op"),
    ),
    message("batch.CronJobStatus", L(1, "active", "core.ObjectReference", "o"),
            F(4, "lastScheduleTime", TIME, "op"), F(5, "lastSuccessfulTime", TIME, "op")),
)
