"""apimachinery's messages: meta/v1 (ObjectMeta, Status, DeleteOptions, ...), runtime (Unknown,
RawExtension), resource (Quantity) and intstr (IntOrString). See declare.py for the notation."""

from __future__ import annotations

from phalanx.kube.pb.declare import BOOL, BYTES, I32, I64, STR, F, L, M, message

TIME = "meta.Time"
MICRO_TIME = "meta.MicroTime"
QUANTITY = "resource.Quantity"
INT_OR_STRING = "intstr.IntOrString"
OBJECT_META = "meta.ObjectMeta"
LABEL_SELECTOR = "meta.LabelSelector"

# The kinds meta/v1 registers in every group version.
KINDS = frozenset({"Status", "DeleteOptions"})

MESSAGES = (
    # Time and MicroTime: seconds and nanos since the Unix epoch; JSON is RFC 3339 (gojson.py).
    message(TIME, F(1, "seconds", I64), F(2, "nanos", I32)),
    message(MICRO_TIME, F(1, "seconds", I64), F(2, "nanos", I32)),
    message("meta.Duration", F(1, "duration", I64)),
    # FieldsV1: the managed-fields set as raw JSON bytes.
    message("meta.FieldsV1", F(1, "raw", BYTES)),
    message(
        OBJECT_META,
        F(1, "name", STR, "o"), F(2, "generateName", STR, "o"), F(3, "namespace", STR, "o"),
        F(4, "selfLink", STR, "o"), F(5, "uid", STR, "o"), F(6, "resourceVersion", STR, "o"),
        F(7, "generation", I64, "o"), F(8, "creationTimestamp", TIME, "o"),
        F(9, "deletionTimestamp", TIME, "op"), F(10, "deletionGracePeriodSeconds", I64, "op"),
        M(11, "labels", STR, "o"), M(12, "annotations", STR, "o"),
        L(13, "ownerReferences", "meta.OwnerReference", "o"), L(14, "finalizers", STR, "o"),
        L(17, "managedFields", "meta.ManagedFieldsEntry", "o"),
    ),
    message(
        "meta.OwnerReference",
        F(5, "apiVersion", STR), F(1, "kind", STR), F(3, "name", STR), F(4, "uid", STR),
        F(6, "controller", BOOL, "op"), F(7, "blockOwnerDeletion", BOOL, "op"),
    ),
    message(
        "meta.ManagedFieldsEntry",
        F(1, "manager", STR, "o"), F(2, "operation", STR, "o"), F(3, "apiVersion", STR, "o"),
        F(4, "time", TIME, "op"), F(6, "fieldsType", STR, "o"),
        F(7, "fieldsV1", "meta.FieldsV1", "op"), F(8, "subresource", STR, "o"),
    ),
    message(
        LABEL_SELECTOR,
        M(1, "matchLabels", STR, "o"),
        L(2, "matchExpressions", "meta.LabelSelectorRequirement", "o"),
    ),
    message(
        "meta.LabelSelectorRequirement",
        F(1, "key", STR), F(2, "operator", STR), L(3, "values", STR, "o"),
    ),
    message("meta.TypeMeta", F(1, "kind", STR, "o"), F(2, "apiVersion", STR, "o")),
    message(
        "meta.ListMeta",
        F(1, "selfLink", STR, "o"), F(2, "resourceVersion", STR, "o"),
        F(3, "continue", STR, "o"), F(4, "remainingItemCount", I64, "op"),
    ),
    message(
        "meta.Status",
        F(1, "metadata", "meta.ListMeta", "o"), F(2, "status", STR, "o"),
        F(3, "message", STR, "o"), F(4, "reason", STR, "o"),
        F(5, "details", "meta.StatusDetails", "op"), F(6, "code", I32, "o"),
    ),
    message(
        "meta.StatusDetails",
        F(1, "name", STR, "o"), F(2, "group", STR, "o"), F(3, "kind", STR, "o"),
        F(6, "uid", STR, "o"), L(4, "causes", "meta.StatusCause", "o"),
        F(5, "retryAfterSeconds", I32, "o"),
    ),
    message(
        "meta.StatusCause",
        F(1, "reason", STR, "o"), F(2, "message", STR, "o"), F(3, "field", STR, "o"),
    ),
    message(
        "meta.DeleteOptions",
        F(1, "gracePeriodSeconds", I64, "op"), F(2, "preconditions", "meta.Preconditions", "op"),
        F(3, "orphanDependents", BOOL, "op"), F(4, "propagationPolicy", STR, "op"),
        L(5, "dryRun", STR, "o"),
        F(6, "ignoreStoreReadErrorWithClusterBreakingPotential", BOOL, "op"),
    ),
    message("meta.Preconditions", F(1, "uid", STR, "op"), F(2, "resourceVersion", STR, "op")),
    message(
        "meta.Condition",
        F(1, "type", STR), F(2, "status", STR), F(3, "observedGeneration", I64, "o"),
        F(4, "lastTransitionTime", TIME), F(5, "reason", STR), F(6, "message", STR),
    ),
    # runtime: the envelope of every body, and an embedded object kept as raw JSON.
    message("runtime.TypeMeta", F(1, "apiVersion", STR, "o"), F(2, "kind", STR, "o")),
    message(
        "runtime.Unknown",
        F(1, "typeMeta", "runtime.TypeMeta", "i"), F(2, "raw", BYTES),
        F(3, "contentEncoding", STR), F(4, "contentType", STR),
    ),
    message("runtime.RawExtension", F(1, "raw", BYTES)),
    # Quantity travels as its canonical string; IntOrString as a tagged pair.
    message(QUANTITY, F(1, "string", STR)),
    message(INT_OR_STRING, F(1, "type", I64), F(2, "intVal", I32), F(3, "strVal", STR)),
)
