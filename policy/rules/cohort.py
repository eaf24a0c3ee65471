"""Cohort-wide rules: cohort-nominal-within-capacity and single-layout-per-cohort (stack policies).

Upstream: Kueue `nominalQuota` field doc (clusterqueue_types.go: "nominalQuota should represent the resources in
the cluster available for running jobs"; in a cohort the sum over (flavor, resource) is what the cohort can
allocate), Cohort `spec.resourceGroups` (cohort_types.go: a Cohort's nominalQuota is extra shared quota) and
`spec.parentName`; the "Sum of nominalQuota <= physical capacity" rule of the alauda preemption guide.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional

from .kueue import QuotaEntry, quota_entries
from .objects import KubeObject, cohort_of, cohort_parents, cohort_root, unknown_violation, violation
from .quantities import is_binary, parse, show
from .values import MISSING, UnknownValueError, Violation

CAPACITY_POLICY = "cohort-nominal-within-capacity"


_SHOWN = 5
"""How many reservations a message lists by name (the rest are counted)."""


@dataclass
class _Scope:
    """Quota reserved inside one cohort tree (or by one ClusterQueue that is in no cohort)."""

    label: str
    urn: Optional[str] = None
    totals: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    parts: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # the first _SHOWN reservations
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # resource -> how many reservations
    largest: dict[str, tuple[Decimal, KubeObject, Any]] = field(default_factory=dict)  # resource -> (value, owner,
    # entry): the biggest reservation
    binary: set[str] = field(default_factory=set)
    by_flavor: dict[tuple[str, str], Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    flavor_parts: dict[tuple[str, str], list[str]] = field(default_factory=lambda: defaultdict(list))  # first _SHOWN
    # (flavor, resource) -> (value, owner, entry): the biggest reservation in that flavor
    flavor_largest: dict[tuple[str, str], tuple[Decimal, Any, Any]] = field(default_factory=dict)


def _nominal(owner: KubeObject, entry: QuotaEntry, found: list[Violation]) -> Optional[Decimal]:
    raw = entry.field("nominalQuota")
    value = parse(raw) if raw is not MISSING else None
    if value is None:
        what = "missing" if raw is MISSING else f"{raw!r}, which is not a Kubernetes quantity"
        found.append(violation(
            owner, CAPACITY_POLICY, f"{entry.path}.nominalQuota", raw,
            "nominalQuota is required and must be a Kubernetes quantity", "write a quantity such as 4 or \"8Gi\"",
            message=f"The {owner.describe()} has {entry.path}.nominalQuota {what}; set nominalQuota for resource "
            f"'{entry.resource}' of flavor '{entry.flavor}' to a quantity such as \"4\" or \"8Gi\"."))
    return value


def check_cohort_nominal_within_capacity(objects: Iterable[KubeObject], capacity: Mapping[str, Any],
                                         flavor_capacity: Optional[Mapping[str, Mapping[str, Any]]] = None
                                         ) -> list[Violation]:
    """cohort-nominal-within-capacity: per cohort tree and resource, the nominalQuota of its ClusterQueues plus
    that of its Cohort objects stays within the physical capacity; with `flavor_capacity`, also per ResourceFlavor
    (the nominalQuota in a flavor within the node pools of that flavor).

    Args:
        objects: every Kubernetes object of the stack (ClusterQueues and Cohorts of any Kueue version are read;
            a ClusterQueue in no cohort is checked on its own).
        capacity: policy config `capacity`, resource name -> quantity (e.g. {"cpu": "8", "memory": "32Gi"}):
            the physical capacity of the cluster, summed over all flavors.
        flavor_capacity: policy config `flavorCapacity`, flavor -> resource -> quantity (the node pools of each
            flavor). Empty or None: only the total is checked (single-flavor stacks).
    Returns:
        Violations for: a sum above capacity; a resource with nominalQuota above 0 but no configured capacity
        (fails, it is not passed unchecked); an unparsable capacity or nominalQuota; a quota value unknown at
        preview (fail closed).
    """
    objects = list(objects)
    found: list[Violation] = []
    limits: dict[str, Decimal] = {}
    for resource, raw in capacity.items():
        value = parse(raw)
        if value is None:
            found.append(Violation(
                f"The {CAPACITY_POLICY} policy config sets capacity['{resource}'] to {raw!r}, which is not a "
                f"Kubernetes quantity; write it like \"8\", \"32Gi\" or \"500m\"."))
        else:
            limits[resource] = value

    cohorts = [o for o in objects if o.is_kueue("Cohort")]
    parents = cohort_parents(cohorts, found)

    scopes: dict[str, _Scope] = {}

    def scope_for(key: str, label: str, urn: str) -> _Scope:
        if key not in scopes:
            scopes[key] = _Scope(label=label, urn=urn or None)
        return scopes[key]

    owners = [o for o in objects if o.is_kueue("ClusterQueue")] + cohorts
    for owner in owners:
        try:
            # Read before any total is changed: an unknown name must leave the scope's sums, parts and largest
            # entries consistent (a sum without its largest entry was a KeyError below).
            described = f"{owner.kind} '{owner.name}'"
            if owner.kind == "Cohort":
                root = cohort_root(owner.name, parents)
                scope = scope_for(f"cohort/{root}", f"cohort '{root}'", owner.urn)
            else:
                cohort_name = cohort_of(owner)
                if cohort_name is None:
                    scope = scope_for(f"cq/{owner.name}", f"ClusterQueue '{owner.name}', which is in no cohort,",
                                      owner.urn)
                else:
                    root = cohort_root(cohort_name, parents)
                    scope = scope_for(f"cohort/{root}", f"cohort '{root}'", owner.urn)
            for entry in quota_entries(owner):
                try:
                    value = _nominal(owner, entry, found)
                except UnknownValueError as err:
                    found.append(unknown_violation(owner, err))
                    continue
                if value is None:
                    continue
                scope.totals[entry.resource] += value
                raw = entry.field("nominalQuota")
                if is_binary(raw):
                    scope.binary.add(entry.resource)
                if value != 0:
                    scope.counts[entry.resource] += 1
                    if len(scope.parts[entry.resource]) < _SHOWN:  # a message shows only these (and the count)
                        scope.parts[entry.resource].append(f"{described} {raw}")
                    best = scope.largest.get(entry.resource)
                    if best is None or value > best[0]:
                        scope.largest[entry.resource] = (value, owner, entry)
                    pair = (entry.flavor, entry.resource)
                    scope.by_flavor[pair] += value
                    if len(scope.flavor_parts[pair]) < _SHOWN:
                        scope.flavor_parts[pair].append(f"{described} {raw}")
                    best = scope.flavor_largest.get(pair)
                    if best is None or value > best[0]:
                        scope.flavor_largest[pair] = (value, owner, entry)
        except UnknownValueError as err:
            found.append(unknown_violation(owner, err))

    for scope in scopes.values():
        for resource, total in scope.totals.items():
            shown_parts = scope.parts[resource][:_SHOWN]
            more = scope.counts[resource] - len(shown_parts)
            parts = ", ".join(shown_parts) + (f" and {more} more" if more > 0 else "")
            if total <= 0:
                continue
            binary = resource in scope.binary or is_binary(capacity.get(resource))
            _, owner, entry = scope.largest[resource]
            where = f"{entry.path}.nominalQuota"
            if resource not in limits:
                if resource in capacity:
                    continue  # already reported as an unparsable capacity
                found.append(violation(
                    owner, CAPACITY_POLICY, where, entry.field("nominalQuota"),
                    f"the {scope.label} reserves {show(total, binary)} of '{resource}' in nominalQuota but no node "
                    f"pool declares '{resource}', so the reservation cannot be checked",
                    f"add '{resource}' to the capacity of a node pool (kueue-cohorts:nodePools), or drop the resource",
                    message=
                        f"The {scope.label} reserves {show(total, binary)} of resource '{resource}' in nominalQuota "
                    f"({parts}) but the policy config gives no physical capacity for '{resource}', so the reservation "
                    f"cannot be checked and fails; add capacity['{resource}'] to the {CAPACITY_POLICY} config "
                    f"(policy/config/<stack>.json)."))
            elif total > limits[resource]:
                found.append(violation(
                    owner, CAPACITY_POLICY, where, entry.field("nominalQuota"),
                    f"the {scope.label} sums to {show(total, binary)} of '{resource}' in nominalQuota, above the "
                    f"physical capacity {show(limits[resource], binary)}: reservations are guarantees and must exist",
                    f"lower the nominalQuota to at most {show(limits[resource], binary)} in total, or add nodes",
                    message=
                        f"The {scope.label} reserves {show(total, binary)} of resource '{resource}' in nominalQuota "
                    f"({parts}) but the physical capacity is {show(limits[resource], binary)}; lower the nominalQuota "
                    f"values, or raise capacity['{resource}'] in the {CAPACITY_POLICY} config if the cluster really "
                    f"grew."))
    if flavor_capacity:
        found += _per_flavor(scopes.values(), flavor_capacity, capacity)
    return found


def _per_flavor(scopes: Iterable[_Scope], flavor_capacity: Mapping[str, Mapping[str, Any]],
                capacity: Mapping[str, Any]) -> list[Violation]:
    """The per-flavor half of cohort-nominal-within-capacity: per scope, flavor and resource, the nominalQuota
    within the capacity of that flavor's node pools. A flavor or resource without capacity fails."""
    found: list[Violation] = []
    limits: dict[tuple[str, str], Optional[Decimal]] = {}
    for flavor, resources in flavor_capacity.items():
        for resource, raw in (resources or {}).items():
            limits[(flavor, resource)] = parse(raw)
    for scope in scopes:
        for (flavor, resource), total in scope.by_flavor.items():
            if total <= 0:
                continue
            _, owner, entry = scope.flavor_largest[(flavor, resource)]
            binary = resource in scope.binary or is_binary(capacity.get(resource))
            where = f"{entry.path}.nominalQuota"
            parts = ", ".join(scope.flavor_parts[(flavor, resource)][:_SHOWN])
            limit = limits.get((flavor, resource))
            if limit is None:
                if (flavor, resource) in limits:
                    rule = (f"the capacity of '{resource}' in flavor '{flavor}' is not a Kubernetes quantity, so "
                            f"the {scope.label}'s reservation cannot be checked")
                    fix = f"write flavorCapacity['{flavor}']['{resource}'] as a quantity such as \"8\""
                elif flavor not in flavor_capacity:
                    rule = (f"the {scope.label} reserves {show(total, binary)} of '{resource}' in flavor '{flavor}' "
                            f"but no node pool is of flavor '{flavor}', so the reservation has no nodes")
                    fix = f"set resourceFlavor: {flavor} on the node pools of those nodes, or drop the flavor"
                else:
                    rule = (f"the {scope.label} reserves {show(total, binary)} of '{resource}' in flavor '{flavor}' "
                            f"but no node pool of flavor '{flavor}' declares '{resource}'")
                    fix = f"add '{resource}' to the capacity of the '{flavor}' node pools, or drop it from the flavor"
            elif total > limit:
                rule = (f"the {scope.label} sums to {show(total, binary)} of '{resource}' in flavor '{flavor}' "
                        f"({parts}), above the capacity {show(limit, binary)} of the node pools of that flavor: "
                        "reservations are guarantees and must exist on nodes of their flavor")
                fix = f"lower the nominalQuota in flavor '{flavor}' to at most {show(limit, binary)} in total, or " \
                      f"add '{flavor}' nodes"
            else:
                continue
            found.append(violation(owner, CAPACITY_POLICY, where, entry.field("nominalQuota"), rule, fix))
    return found


def _layout_role(cq: KubeObject) -> Optional[str]:
    """'owner' (borrowingLimit 0 everywhere), 'floor-and-borrow' (some nominalQuota > 0 and may borrow some
    resource), or None (a pure borrower with nominalQuota 0, or no quota)."""
    entries = list(quota_entries(cq))
    if not entries:
        return None
    limits = [parse(e.field("borrowingLimit")) if e.field("borrowingLimit") is not MISSING else None for e in entries]
    if all(limit is not None and limit == 0 for limit in limits):
        return "owner"
    has_floor = any((parse(e.field("nominalQuota")) or 0) > 0 for e in entries)
    may_borrow = any(limit is None or limit > 0 for limit in limits)
    return "floor-and-borrow" if has_floor and may_borrow else None


def check_single_layout_per_cohort(objects: Iterable[KubeObject]) -> list[Violation]:
    """single-layout-per-cohort: a cohort does not mix an owner queue (borrowingLimit 0 on every resource, the
    asymmetric inference/training layout) with symmetric floor-and-borrow queues (nominalQuota above 0 and allowed
    to borrow).

    Args:
        objects: every Kubernetes object of the stack; ClusterQueues are grouped by their direct cohort.
    Returns:
        One Violation per mixed cohort, naming the queues of each kind; fail-closed violations for unknown quota.
    """
    found: list[Violation] = []
    by_cohort: dict[str, dict[str, list[KubeObject]]] = defaultdict(lambda: defaultdict(list))
    for cq in (o for o in objects if o.is_kueue("ClusterQueue")):
        try:
            cohort = cohort_of(cq)
            if cohort is None:
                continue
            role = _layout_role(cq)
        except UnknownValueError as err:
            found.append(unknown_violation(cq, err))
            continue
        if role is not None:
            by_cohort[cohort][role].append(cq)
    for cohort, roles in by_cohort.items():
        if roles["owner"] and roles["floor-and-borrow"]:
            owners = ", ".join(f"'{q.name}'" for q in roles["owner"])
            floors = ", ".join(f"'{q.name}'" for q in roles["floor-and-borrow"])
            found.append(violation(
                roles["floor-and-borrow"][0], "single-layout-per-cohort", "spec.cohortName", cohort,
                "a cohort uses one layout: it must not mix owner ClusterQueues (borrowingLimit 0) with symmetric "
                "floor-and-borrow ClusterQueues",
                "give each layout its own cohort",
                message=
                    f"The cohort '{cohort}' mixes owner ClusterQueues with borrowingLimit 0 ({owners}) and symmetric "
                f"floor-and-borrow ClusterQueues ({floors}); use one layout per cohort: either give the other queues "
                f"nominalQuota 0 so they only borrow (asymmetric), or let every queue borrow above its floor "
                f"(symmetric)."))
    return found
