"""The spec of each queue kind, read and validated as Kueue's and Volcano's webhooks do
(``phalanx.config.queues`` reads the documents and checks them together)."""

from __future__ import annotations

from phalanx.config.queues_fields import (
    choice,
    dns_name,
    label_map,
    label_selector,
    quantity,
    resource_groups,
    resource_list,
    taint,
    toleration,
)
from phalanx.config.yamlfield import YamlField, optional
from phalanx.domain.quantity import MILLI_UNITS
from phalanx.domain.queues import (
    BorrowWithinCohort,
    ClusterQueue,
    Cohort,
    FairSharing,
    FairSharingStrategy,
    FlavorFungibility,
    FungibilityPolicy,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    StopPolicy,
    VolcanoQueue,
)

__all__ = ["cluster_queue", "cohort", "fair_sharing", "resource_flavor", "volcano_queue"]


def _spec(field: YamlField | None, allowed: tuple[str, ...]) -> dict[str, YamlField]:
    return field.mapping(allowed) if field is not None else {}


def resource_flavor(name: str, field: YamlField | None) -> ResourceFlavor:
    spec = _spec(field, ("nodeLabels", "nodeTaints", "tolerations"))
    return ResourceFlavor(
        name,
        node_labels=label_map(spec["nodeLabels"]) if "nodeLabels" in spec else (),
        node_taints=tuple(map(taint, spec["nodeTaints"].sequence()))
        if "nodeTaints" in spec
        else (),
        tolerations=(
            tuple(map(toleration, spec["tolerations"].sequence())) if "tolerations" in spec else ()
        ),
    )


def _one_of(spec: dict[str, YamlField], old: str, new: str) -> YamlField | None:
    """The field spelled ``old`` (v1beta1) or ``new`` (later versions); both is an error."""
    if old in spec and new in spec:
        raise spec[new].error(f"give {old!r} or {new!r}, not both")
    return spec.get(old, spec.get(new))


def _weight(spec: dict[str, YamlField]) -> float:
    if "fairSharing" not in spec:
        return 1.0
    fair = spec["fairSharing"].mapping(("weight",))
    if "weight" not in fair:
        return 1.0
    weight = quantity(fair["weight"])
    return weight / MILLI_UNITS


def fair_sharing(field: YamlField) -> FairSharing:
    """A Configuration's ``fairSharing``: ``enable`` (default false) and
    ``preemptionStrategies`` (default both, LessThanOrEqualToFinalShare first)."""
    spec = field.mapping(("enable", "preemptionStrategies"))
    enable = spec["enable"].as_bool() if "enable" in spec else False
    if "preemptionStrategies" not in spec:
        return FairSharing(enable)
    items = spec["preemptionStrategies"].sequence()
    strategies = tuple(choice(f, FairSharingStrategy) for f in items)
    if not strategies:
        raise spec["preemptionStrategies"].error("expected at least one strategy")
    if len(set(strategies)) != len(strategies):
        raise spec["preemptionStrategies"].error("a strategy is listed twice")
    return FairSharing(enable, strategies)


def cluster_queue(name: str, field: YamlField | None) -> ClusterQueue:
    spec = _spec(
        field,
        (
            "resourceGroups",
            "cohort",
            "cohortName",
            "namespaceSelector",
            "queueingStrategy",
            "preemption",
            "flavorFungibility",
            "fairSharing",
            "stopPolicy",
        ),
    )
    cohort_field = _one_of(spec, "cohort", "cohortName")
    cohort = dns_name(cohort_field) if cohort_field is not None else None
    groups = (
        resource_groups(spec["resourceGroups"], owner="cohort", has_parent=cohort is not None)
        if "resourceGroups" in spec
        else ()
    )
    selector = None
    if field is not None and "namespaceSelector" in spec:
        selector = label_selector(spec["namespaceSelector"])
    return ClusterQueue(
        name,
        resource_groups=groups,
        cohort=cohort,
        namespace_selector=selector,
        queueing_strategy=optional(
            spec,
            "queueingStrategy",
            lambda f: choice(f, QueueingStrategy),
            QueueingStrategy.BEST_EFFORT_FIFO,
        ),
        preemption=_preemption(spec["preemption"]) if "preemption" in spec else Preemption(),
        flavor_fungibility=(
            _fungibility(spec["flavorFungibility"])
            if "flavorFungibility" in spec
            else FlavorFungibility()
        ),
        fair_sharing_weight=_weight(spec),
        stop_policy=optional(spec, "stopPolicy", lambda f: choice(f, StopPolicy), StopPolicy.NONE),
    )


def _policy(field: YamlField, allowed: tuple[PreemptionPolicy, ...]) -> PreemptionPolicy:
    value = choice(field, PreemptionPolicy)
    if value not in allowed:
        choices = ", ".join(repr(p.value) for p in allowed)
        raise field.error(f"unsupported value {value.value!r}: supported values: {choices}")
    return value


def _preemption(field: YamlField) -> Preemption:
    spec = field.mapping(("reclaimWithinCohort", "borrowWithinCohort", "withinClusterQueue"))
    never, lower = PreemptionPolicy.NEVER, PreemptionPolicy.LOWER_PRIORITY
    reclaim = optional(
        spec,
        "reclaimWithinCohort",
        lambda f: _policy(f, (never, lower, PreemptionPolicy.ANY)),
        never,
    )
    within = optional(
        spec,
        "withinClusterQueue",
        lambda f: _policy(f, (never, lower, PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)),
        never,
    )
    borrow = BorrowWithinCohort()
    if "borrowWithinCohort" in spec:
        b = spec["borrowWithinCohort"].mapping(("policy", "maxPriorityThreshold"))
        borrow = BorrowWithinCohort(
            optional(b, "policy", lambda f: _policy(f, (never, lower)), never),
            optional(b, "maxPriorityThreshold", lambda f: f.as_int(minimum=-(2**31)), None),
        )
        if reclaim is never and borrow.policy is not never:
            raise field.error("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
    return Preemption(reclaim, borrow, within)


_FUNGIBILITY_OLD = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}


def _fungibility_policy(field: YamlField, old: str) -> FungibilityPolicy:
    value = field.as_str()
    if value == old:
        value = _FUNGIBILITY_OLD[old]
    for policy in FungibilityPolicy:
        if policy.value == value:
            return policy
    raise field.error(
        f"unsupported value {value!r}: supported values: 'MayStopSearch', 'TryNextFlavor', {old!r}"
    )


def _fungibility(field: YamlField) -> FlavorFungibility:
    spec = field.mapping(("whenCanBorrow", "whenCanPreempt"))
    default = FlavorFungibility()
    return FlavorFungibility(
        optional(
            spec,
            "whenCanBorrow",
            lambda f: _fungibility_policy(f, "Borrow"),
            default.when_can_borrow,
        ),
        optional(
            spec,
            "whenCanPreempt",
            lambda f: _fungibility_policy(f, "Preempt"),
            default.when_can_preempt,
        ),
    )


def cohort(name: str, field: YamlField | None) -> Cohort:
    spec = _spec(field, ("parent", "parentName", "resourceGroups", "fairSharing"))
    parent_field = _one_of(spec, "parent", "parentName")
    parent = dns_name(parent_field) if parent_field is not None else None
    if parent_field is not None and parent == name:
        raise parent_field.error(f"Cohort {name} cannot be its own parent")
    groups = (
        resource_groups(spec["resourceGroups"], owner="parent", has_parent=parent is not None)
        if "resourceGroups" in spec
        else ()
    )
    return Cohort(name, parent, groups, _weight(spec))


def volcano_queue(name: str, field: YamlField | None) -> VolcanoQueue:
    spec = _spec(field, ("weight", "capability", "guarantee", "deserved", "reclaimable", "parent"))
    weight = spec["weight"].as_int(minimum=0) if "weight" in spec else 0
    guarantee: dict[str, int] = {}
    if "guarantee" in spec:
        g = spec["guarantee"].mapping(("resource",))
        guarantee = resource_list(g["resource"]) if "resource" in g else {}
    capability = resource_list(spec["capability"]) if "capability" in spec else {}
    for resource, amount in guarantee.items():
        cap = capability.get(resource)
        if cap is not None and amount > cap:
            raise spec["guarantee"].error(f"guarantee of {resource} is greater than its capability")
    return VolcanoQueue(
        name,
        weight=weight or 1,  # Volcano's mutating webhook sets an unset (0) weight to 1
        capability=capability,
        guarantee=guarantee,
        deserved=resource_list(spec["deserved"]) if "deserved" in spec else None,
        reclaimable=optional(spec, "reclaimable", YamlField.as_bool, True),
        parent=dns_name(spec["parent"]) if "parent" in spec else None,
    )
