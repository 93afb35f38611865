"""Workload reconcilers, sans-IO: a Kubernetes workload's desired state -> engine inputs;
engine decisions -> the workload's status and its pods.

One module per kind: ``job`` (batch/v1 Job: each pod its own engine job) and ``pytorchjob``
(kubeflow.org/v1 PyTorchJob: all pods one gang, one engine job with a task per pod). Each
has ``reconcile(obj, pods, engine_jobs, now, ctx, ...) -> Plan`` (``phalanx.workloads.plan``),
a pure function that a runner (``phalanx.kube``) carries out against the object store and the
live controller. Below them: ``podspec`` (a pod template as a task), ``specs`` (tasks as
``JobSpec``s), ``pods`` (pods and their status from engine state), ``conditions``, ``events``
and ``timestamps``.
"""

from phalanx.workloads.plan import Context, EngineJob, Plan, Submission

__all__ = ["Context", "EngineJob", "Plan", "Submission"]
