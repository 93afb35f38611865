"""Our declarations of the custom kinds' schemas: Kubeflow's PyTorchJob, Volcano's Job and
Queue, JobSet, Kueue's queue kinds and KServe's InferenceService.

Written here from those APIs' documented fields (names, types, enums, what is required), not
copied from their CRDs: enough for server-side field validation to accept every field the
projects' examples use and to name an unknown one. Embedded Kubernetes types (a pod template,
a label selector, a taint) are the built-in definitions, by reference. A ``status`` is not
modelled (the controllers write it): it takes any fields.
"""

from __future__ import annotations

import functools

from phalanx.kube.openapi.schema import (
    Schema,
    array,
    boolean,
    free,
    integer,
    kind,
    obj,
    quantity,
    quantity_map,
    ref,
    string,
    string_map,
    strings,
)

_CORE = "io.k8s.api.core.v1."
_POD_TEMPLATE = ref(_CORE + "PodTemplateSpec")
_SELECTOR = ref("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
_DURATION = string  # a Go duration ("30s"), a string on the wire


def _pytorchjob() -> Schema:
    replica = obj(
        replicas=integer(),
        template=_POD_TEMPLATE,
        restartPolicy=string("Always", "OnFailure", "Never", "ExitCode"),
    )
    run_policy = obj(
        cleanPodPolicy=string("All", "Running", "None"),
        ttlSecondsAfterFinished=integer(),
        activeDeadlineSeconds=integer("int64"),
        backoffLimit=integer(),
        schedulingPolicy=obj(
            minAvailable=integer(),
            queue=string(),
            minResources=quantity_map(),
            priorityClass=string(),
            scheduleTimeoutSeconds=integer(),
        ),
        suspend=boolean(),
        managedBy=string(),
    )
    elastic = obj(
        minReplicas=integer(),
        maxReplicas=integer(),
        rdzvBackend=string("c10d", "etcd", "etcd-v2"),
        rdzvPort=integer(),
        rdzvHost=string(),
        rdzvId=string(),
        rdzvConf=array(obj(key=string(), value=string())),
        standalone=boolean(),
        nProcPerNode=integer(),
        maxRestarts=integer(),
        metrics=array(ref("io.k8s.api.autoscaling.v2.MetricSpec")),
    )
    spec = obj(
        ("pytorchReplicaSpecs",),
        pytorchReplicaSpecs={"type": "object", "additionalProperties": replica},
        runPolicy=run_policy,
        elasticPolicy=elastic,
        nprocPerNode=string(),
    )
    return kind(spec)


def _volcano_policy() -> Schema:
    return obj(
        event=string(),
        events=strings(),
        action=string(),
        exitCode=integer(),
        timeout=_DURATION(),
    )


def _volcano_job() -> Schema:
    task = obj(
        name=string(),
        replicas=integer(),
        minAvailable=integer(),
        template=_POD_TEMPLATE,
        policies=array(_volcano_policy()),
        topologyPolicy=string("none", "best-effort", "restricted", "single-numa-node"),
        maxRetry=integer(),
        dependsOn=obj(name=strings(), iteration=string("any", "all")),
        partitionPolicy=free(),
    )
    volume = obj(
        ("mountPath",),
        mountPath=string(),
        volumeClaimName=string(),
        volumeClaim=ref(_CORE + "PersistentVolumeClaimSpec"),
    )
    spec = obj(
        schedulerName=string(),
        minAvailable=integer(),
        volumes=array(volume),
        tasks=array(task),
        policies=array(_volcano_policy()),
        plugins={"type": "object", "additionalProperties": strings()},
        runningEstimate=_DURATION(),
        queue=string(),
        maxRetry=integer(default=3),
        ttlSecondsAfterFinished=integer(),
        priorityClassName=string(),
        minSuccess=integer(minimum=1),
        networkTopology=obj(mode=string("hard", "soft"), highestTierAllowed=integer()),
    )
    return kind(spec)


def _volcano_queue() -> Schema:
    spec = obj(
        weight=integer(),
        capability=quantity_map(),
        deserved=quantity_map(),
        guarantee=obj(resource=quantity_map()),
        reclaimable=boolean(),
        extendClusters=array(obj(name=string(), weight=integer(), capacity=quantity_map())),
        affinity=free(),
        type=string(),
        parent=string(),
    )
    return kind(spec)


def _jobset() -> Schema:
    replicated = obj(
        ("name", "template"),
        name=string(),
        groupName=string(),
        template=ref("io.k8s.api.batch.v1.JobTemplateSpec"),
        replicas=integer(default=1),
        dependsOn=array(obj(("name", "status"), name=string(), status=string("Ready", "Complete"))),
    )
    rule = obj(
        ("action",),
        name=string(),
        action=string("FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts"),
        onJobFailureReasons=strings(),
        targetReplicatedJobs=strings(),
    )
    spec = obj(
        replicatedJobs=array(replicated, "map"),
        network=obj(
            enableDNSHostnames=boolean(), subdomain=string(), publishNotReadyAddresses=boolean()
        ),
        successPolicy=obj(
            ("operator",), operator=string("All", "Any"), targetReplicatedJobs=strings()
        ),
        failurePolicy=obj(
            maxRestarts=integer(),
            restartStrategy=string("Recreate", "BlockingRecreate"),
            rules=array(rule),
        ),
        startupPolicy=obj(
            ("startupPolicyOrder",), startupPolicyOrder=string("AnyOrder", "InOrder")
        ),
        suspend=boolean(),
        coordinator=obj(replicatedJob=string(), jobIndex=integer(), podIndex=integer()),
        managedBy=string(),
        ttlSecondsAfterFinished=integer(),
    )
    return kind(spec)


def _resource_groups() -> Schema:
    resource = obj(
        ("name", "nominalQuota"),
        name=string(),
        nominalQuota=quantity(),
        borrowingLimit=quantity(),
        lendingLimit=quantity(),
    )
    flavor = obj(("name", "resources"), name=string(), resources=array(resource))
    return array(
        obj(("coveredResources", "flavors"), coveredResources=strings(), flavors=array(flavor))
    )


_STOP_POLICY = ("None", "Hold", "HoldAndDrain")


def _fair_sharing() -> Schema:
    return obj(weight=quantity())


def _cluster_queue(version: str) -> Schema:
    cohort = {"cohort": string()} if version == "v1beta1" else {"cohortName": string()}
    rule = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")
    spec = obj(
        resourceGroups=_resource_groups(),
        queueingStrategy=string("StrictFIFO", "BestEffortFIFO", default="BestEffortFIFO"),
        namespaceSelector=_SELECTOR,
        flavorFungibility=obj(
            whenCanBorrow=string("Borrow", "MayStopSearch", "TryNextFlavor"),
            whenCanPreempt=string("Preempt", "MayStopSearch", "TryNextFlavor"),
        ),
        preemption=obj(
            reclaimWithinCohort=string("Never", "LowerPriority", "Any"),
            borrowWithinCohort=obj(
                policy=string("Never", "LowerPriority"), maxPriorityThreshold=integer()
            ),
            withinClusterQueue=string(*rule[:3]),
        ),
        admissionChecks=strings(),
        admissionChecksStrategy=obj(
            admissionChecks=array(obj(("name",), name=string(), onFlavors=strings()))
        ),
        stopPolicy=string(*_STOP_POLICY),
        fairSharing=_fair_sharing(),
        admissionScope=obj(admissionMode=string()),
        **cohort,
    )
    return kind(spec)


def _local_queue() -> Schema:
    spec = obj(clusterQueue=string(), stopPolicy=string(*_STOP_POLICY), fairSharing=_fair_sharing())
    return kind(spec)


def _resource_flavor() -> Schema:
    spec = obj(
        nodeLabels=string_map(),
        nodeTaints=array(ref(_CORE + "Taint")),
        tolerations=array(ref(_CORE + "Toleration")),
        topologyName=string(),
    )
    return kind(spec, status=False)


def _workload_priority_class() -> Schema:
    return kind(None, status=False, required=("value",), value=integer(), description=string())


def _workload() -> Schema:
    pod_set = obj(
        ("name", "count", "template"),
        name=string(),
        count=integer(minimum=0),
        minCount=integer(),
        template=_POD_TEMPLATE,
        topologyRequest=free(),
    )
    spec = obj(
        podSets=array(pod_set, "map"),
        queueName=string(),
        priorityClassName=string(),
        priority=integer(),
        priorityClassSource=string(),
        active=boolean(),
        maximumExecutionTimeSeconds=integer(),
    )
    return kind(spec)


def _cohort(version: str) -> Schema:
    parent = {"parentName": string()} if version == "v1beta2" else {"parent": string()}
    spec = obj(resourceGroups=_resource_groups(), fairSharing=_fair_sharing(), **parent)
    return kind(spec)


def _inference_service() -> Schema:
    # A component is a pod spec's fields inline plus KServe's ComponentExtensionSpec.
    extension = {
        "minReplicas": integer(minimum=0),
        "maxReplicas": integer(minimum=0),
        "scaleTarget": integer(),
        "scaleMetric": string("cpu", "memory", "concurrency", "rps"),
        "containerConcurrency": integer("int64", minimum=0),
        "timeout": integer("int64"),
        "canaryTrafficPercent": integer("int64"),
        "labels": string_map(),
        "annotations": string_map(),
        "logger": free(),
        "batcher": free(),
        "deploymentStrategy": free(),
        "autoScaling": free(),
    }
    pod = {
        "containers": array(ref(_CORE + "Container")),
        "initContainers": array(ref(_CORE + "Container")),
        "volumes": array(ref(_CORE + "Volume")),
        "nodeSelector": string_map(),
        "tolerations": array(ref(_CORE + "Toleration")),
        "affinity": ref(_CORE + "Affinity"),
        "serviceAccountName": string(),
        "priorityClassName": string(),
        "schedulerName": string(),
        "imagePullSecrets": array(ref(_CORE + "LocalObjectReference")),
        "securityContext": ref(_CORE + "PodSecurityContext"),
    }
    model = {
        "modelFormat": obj(("name",), name=string(), version=string()),
        "runtime": string(),
        "protocolVersion": string("v1", "v2", "grpc-v2"),
        "storageUri": string(),
        "name": string(),
        "image": string(),
        "command": strings(),
        "args": strings(),
        "env": array(ref(_CORE + "EnvVar")),
        "ports": array(ref(_CORE + "ContainerPort")),
        "resources": ref(_CORE + "ResourceRequirements"),
    }
    predictor = obj(model=obj(**model), **pod, **extension)
    component = obj(**pod, **extension)
    spec = obj(("predictor",), predictor=predictor, transformer=component, explainer=component)
    return kind(spec)


@functools.cache
def schemas() -> dict[tuple[str, str, str], Schema]:
    """(group, version, kind) -> the kind's schema, for every custom kind served."""
    kueue = "kueue.x-k8s.io"
    out: dict[tuple[str, str, str], Schema] = {
        ("kubeflow.org", "v1", "PyTorchJob"): _pytorchjob(),
        ("batch.volcano.sh", "v1alpha1", "Job"): _volcano_job(),
        ("scheduling.volcano.sh", "v1beta1", "Queue"): _volcano_queue(),
        ("jobset.x-k8s.io", "v1alpha2", "JobSet"): _jobset(),
        (kueue, "v1alpha1", "Cohort"): _cohort("v1alpha1"),
        ("serving.kserve.io", "v1beta1", "InferenceService"): _inference_service(),
    }
    for version in ("v1beta1", "v1beta2"):
        out[(kueue, version, "ResourceFlavor")] = _resource_flavor()
        out[(kueue, version, "ClusterQueue")] = _cluster_queue(version)
        out[(kueue, version, "LocalQueue")] = _local_queue()
        out[(kueue, version, "WorkloadPriorityClass")] = _workload_priority_class()
        out[(kueue, version, "Workload")] = _workload()
        out[(kueue, version, "Cohort")] = _cohort(version)
    return out
