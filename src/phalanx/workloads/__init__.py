"""Workload reconcilers, sans-IO: a Kubernetes workload's desired state -> engine inputs;
engine decisions -> the workload's status and its pods.

One module per kind: ``job`` (batch/v1 Job: each pod its own engine job) and ``pytorchjob``
(kubeflow.org/v1 PyTorchJob: all pods one gang, one engine job with a task per pod),
``vcjob`` (Volcano Job: the first minAvailable pods one gang, the rest alone), ``jobset``
(JobSet: child batch/v1 Jobs, which ``job`` runs), ``replicaset`` (apps/v1 ReplicaSet: each pod
its own unlimited engine job, replaced when it ends) and ``deployment`` (apps/v1 Deployment:
child ReplicaSets rolled by ``rollout``'s arithmetic, status by ``deployment_status``). Each
has ``reconcile(obj, pods, engine_jobs, now, ctx, ...) -> Plan`` (``phalanx.workloads.plan``),
a pure function that a runner (``phalanx.kube``) carries out against the object store and the
live controller. Below them: ``podspec`` (a pod template as a task), ``specs`` (tasks as
``JobSpec``s), ``pods`` (pods and their status from engine state), ``conditions``, ``events``
and ``timestamps``.
"""

from phalanx.workloads.plan import Context, EngineJob, Plan, Submission

__all__ = ["Context", "EngineJob", "Plan", "Submission"]
