"""Field readers shared by the queue kinds: quantities, resource lists, label selectors,
taints, tolerations and resource groups, each failing with the field's path."""

from __future__ import annotations

import enum
import re
from typing import TypeVar

import yaml

from phalanx.config.yamlfield import YamlField
from phalanx.domain.quantity import parse_quantity
from phalanx.domain.queues import (
    FlavorQuotas,
    LabelSelector,
    Requirement,
    ResourceGroup,
    ResourceQuota,
    SelectorOp,
    Taint,
    TaintEffect,
    Toleration,
)
from phalanx.errors import InputError

__all__ = [
    "NEGATIVE",
    "choice",
    "dns_name",
    "label_map",
    "label_selector",
    "quantity",
    "resource_groups",
    "resource_list",
    "resource_name",
    "taint",
    "toleration",
]

NEGATIVE = "must be greater than or equal to 0"
"""Kubernetes' message for a negative quantity (``IsNegativeErrorMsg``)."""
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_E = TypeVar("_E", bound=enum.Enum)
_RESOURCE = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def dns_name(field: YamlField) -> str:
    """An object or reference name: a DNS subdomain (RFC 1123), as Kubernetes requires."""
    name = field.as_str()
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise field.error(
            f"invalid name {name!r}: a lowercase RFC 1123 subdomain must consist of lower case "
            "alphanumeric characters, '-' or '.'"
        )
    return name


def quantity(field: YamlField, *, negative: bool = False) -> int:
    """A Kubernetes quantity (thousandths of its unit); negative ones refused unless asked."""
    try:
        value = parse_quantity(field.text())
    except InputError as exc:
        raise field.error(exc.message) from None
    if value < 0 and not negative:
        raise field.error(NEGATIVE)
    return value


def resource_name(field: YamlField) -> str:
    name = field.as_str()
    if not _RESOURCE.match(name):
        raise field.error(f"invalid resource name {name!r}")
    return name


def resource_list(field: YamlField) -> dict[str, int]:
    """A ``corev1.ResourceList``: resource name -> quantity."""
    out: dict[str, int] = {}
    for key, value in _pairs(field):
        out[resource_name(key)] = quantity(value)
    return out


def _pairs(field: YamlField) -> list[tuple[YamlField, YamlField]]:
    """The (key, value) fields of a mapping whose keys are free-form (labels, resources)."""
    if not isinstance(field.node, yaml.MappingNode):
        raise field.error(f"expected a mapping, got {field.kind()}")
    seen: set[str] = set()
    pairs = []
    for key_node, value_node in field.node.value:
        key = field.child(key_node, str(key_node.value))
        if key.text() in seen:
            raise key.error(f"duplicate key {key.text()!r}")
        seen.add(key.text())
        pairs.append((key, field.child(value_node, str(key_node.value))))
    return pairs


def label_map(field: YamlField) -> tuple[tuple[str, str], ...]:
    """Labels: string keys and values (a YAML ``true`` or ``8`` reads as its text)."""
    return tuple((key.as_str(), value.text()) for key, value in _pairs(field))


def label_selector(field: YamlField) -> LabelSelector:
    """A ``metav1.LabelSelector``; ``{}`` is the empty selector, which matches everything."""
    spec = field.mapping(("matchLabels", "matchExpressions"))
    labels = label_map(spec["matchLabels"]) if "matchLabels" in spec else ()
    expressions = []
    for item in spec["matchExpressions"].sequence() if "matchExpressions" in spec else []:
        expr = item.mapping(("key", "operator", "values"), required=("key", "operator"))
        op = choice(expr["operator"], SelectorOp)
        values = frozenset(expr["values"].as_str_list()) if "values" in expr else frozenset()
        if op in (SelectorOp.IN, SelectorOp.NOT_IN) and not values:
            raise expr.get("values", item).error(
                "must be specified when `operator` is 'In' or 'NotIn'"
            )
        if op in (SelectorOp.EXISTS, SelectorOp.DOES_NOT_EXIST) and values:
            raise expr["values"].error(
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        expressions.append(Requirement(expr["key"].as_str(), op, values))
    return LabelSelector(labels, tuple(expressions))


def choice(field: YamlField, kind: type[_E]) -> _E:
    value = field.as_str()
    for member in kind:
        if member.value == value:
            return member
    choices = ", ".join(repr(m.value) for m in kind)
    raise field.error(f"unsupported value {value!r}: supported values: {choices}")


def taint(field: YamlField) -> Taint:
    spec = field.mapping(("key", "value", "effect", "timeAdded"), required=("key", "effect"))
    value = spec["value"].text() if "value" in spec else ""
    return Taint(spec["key"].as_str(), choice(spec["effect"], TaintEffect), value)


def toleration(field: YamlField) -> Toleration:
    spec = field.mapping(("key", "operator", "value", "effect", "tolerationSeconds"))
    operator = spec["operator"].as_str() if "operator" in spec else "Equal"
    if operator not in ("Equal", "Exists"):
        raise spec["operator"].error(
            f"unsupported value {operator!r}: supported values: 'Equal', 'Exists'"
        )
    key = spec["key"].as_str() if "key" in spec else ""
    value = spec["value"].text() if "value" in spec else ""
    if operator == "Exists" and value:
        raise spec["value"].error("value must be empty when `operator` is 'Exists'")
    if not key and operator != "Exists":
        raise field.error("operator must be Exists when `key` is empty")
    effect = choice(spec["effect"], TaintEffect) if "effect" in spec else None
    return Toleration(key, operator, value, effect)


def resource_groups(field: YamlField, *, owner: str, has_parent: bool) -> tuple[ResourceGroup, ...]:
    """``spec.resourceGroups`` as Kueue's webhook validates it: each resource and each flavor
    in one group only; every flavor lists the group's resources in order; quantities not
    negative; borrowing and lending limits only with a parent (``owner`` names it: "cohort"
    for a ClusterQueue, "parent" for a Cohort); a ClusterQueue lends no more than its
    nominal quota."""
    groups = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for item in field.sequence():
        spec = item.mapping(
            ("coveredResources", "flavors"), required=("coveredResources", "flavors")
        )
        covered = []
        for res in spec["coveredResources"].sequence():
            name = resource_name(res)
            if name in seen_resources:
                raise res.error(f"Duplicate value: {name!r}")
            seen_resources.add(name)
            covered.append(name)
        if not covered:
            raise spec["coveredResources"].error("must have at least 1 item")
        flavors = []
        for fl in spec["flavors"].sequence():
            flavor = _flavor_quotas(fl, covered, owner=owner, has_parent=has_parent)
            if flavor.name in seen_flavors:
                raise fl.error(f"Duplicate value: {flavor.name!r}")
            seen_flavors.add(flavor.name)
            flavors.append(flavor)
        if not flavors:
            raise spec["flavors"].error("must have at least 1 item")
        groups.append(ResourceGroup(tuple(covered), tuple(flavors)))
    return tuple(groups)


def _flavor_quotas(
    field: YamlField, covered: list[str], *, owner: str, has_parent: bool
) -> FlavorQuotas:
    spec = field.mapping(("name", "resources"), required=("name", "resources"))
    items = spec["resources"].sequence()
    if len(items) != len(covered):
        raise spec["resources"].error(
            "flavors must have the same number of resources as the coveredResources"
        )
    quotas = []
    for res, expected in zip(items, covered, strict=True):
        q = res.mapping(
            ("name", "nominalQuota", "borrowingLimit", "lendingLimit"),
            required=("name", "nominalQuota"),
        )
        if q["name"].as_str() != expected:
            raise q["name"].error("must match the name in coveredResources")
        nominal = quantity(q["nominalQuota"])
        limits: list[int | None] = []
        for key in ("borrowingLimit", "lendingLimit"):
            if key not in q:
                limits.append(None)
                continue
            if not has_parent:
                raise q[key].error(f"must be nil when {owner} is empty")
            limits.append(quantity(q[key]))
        lending = limits[1]
        if owner == "cohort" and lending is not None and lending > nominal:
            raise q["lendingLimit"].error("must be less than or equal to the nominalQuota")
        quotas.append(ResourceQuota(expected, nominal, limits[0], lending))
    return FlavorQuotas(dns_name(spec["name"]), tuple(quotas))
