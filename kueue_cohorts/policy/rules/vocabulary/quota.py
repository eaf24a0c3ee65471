"""Reading Kueue quota: the (flavor, resource) entries of a ClusterQueue's or Cohort's `spec.resourceGroups`.

Upstream: kubernetes-sigs/kueue `apis/kueue/v1beta2/clusterqueue_types.go` (ResourceGroup, FlavorQuotas,
ResourceQuota: `nominalQuota` required, `borrowingLimit`/`lendingLimit` optional, null = no limit). The same
shape is used by v1beta1 and by Cohort (`cohort_types.go`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Iterator, Optional

from . import memo
from .objects import KubeObject
from .values import as_list, format_path, get


@dataclass(frozen=True, slots=True)
class QuotaEntry:
    """One `resources[]` entry of one flavor.

    Attributes:
        flavor: the ResourceFlavor name (flavors[].name).
        resource: the resource name ("cpu", "nvidia.com/gpucores").
        path: the entry's field path, e.g. "spec.resourceGroups[0].flavors[0].resources[2]".
        group: the index of its resource group.
        entry: the raw entry; read its fields with `field()` so that an unknown value raises only when needed.
    """

    flavor: str
    resource: str
    path: str
    entry: Mapping[str, Any]
    group: int = 0

    def field(self, name: str) -> Any:
        """The raw wire value of `nominalQuota`, `borrowingLimit` or `lendingLimit` (MISSING when not set).

        Raises UnknownValueError when the value is unknown at preview.
        """
        return get(self.entry, name)


def quota_entries(obj: KubeObject) -> Iterator[QuotaEntry]:
    """Yield every (flavor, resource) quota entry of a ClusterQueue or Cohort, in spec order.

    Walked once per object within a judgement of the stack (`memo.replay`: most quota rules read them); the
    entries are shared there, so callers must not modify them.
    Raises UnknownValueError when a group, flavor or resource list (or a flavor/resource name) is unknown at
    preview.
    """
    return memo.replay("quota_entries", obj.props, lambda: _quota_entries(obj))


def _quota_entries(obj: KubeObject) -> Iterator[QuotaEntry]:
    """`quota_entries`, walked."""
    for g, group in enumerate(as_list(get(obj.spec, "resourceGroups"))):
        for f, flavor in enumerate(as_list(get(group, "flavors"))):
            flavor_name = str(get(flavor, "name"))
            for r, res in enumerate(as_list(get(flavor, "resources"))):
                path = format_path(["spec", "resourceGroups", g, "flavors", f, "resources", r])
                yield QuotaEntry(flavor=flavor_name, resource=str(get(res, "name")), path=path, entry=res, group=g)


@dataclass(frozen=True)
class FlavorFit:
    """Where a workload's requests fit in one ClusterQueue (Kueue's flavor assignment: per resource group, every
    requested resource of the group from one flavor; `pkg/scheduler/flavorassigner`).

    Attributes:
        fits: True when every requested resource is covered and, in each resource group, some flavor holds all of
            the group's requested resources.
        uncovered: requested resources no resource group covers.
        short: resource -> (quota, flavor) for the resources that do not fit in the closest flavor of their group
            (the flavor with the fewest misfits, first in order on a tie); empty when `fits`.
        flavors: group index -> the first flavor that holds the group's requests (the one Kueue tries first).
    """

    fits: bool
    uncovered: frozenset[str]
    short: Mapping[str, tuple[Decimal, str]]
    flavors: Mapping[int, str]


def flavor_fit(cq: KubeObject, requests: Mapping[str, Decimal],
               quota: Callable[[QuotaEntry], Optional[Decimal]]) -> FlavorFit:
    """Whether `requests` (resource -> amount, base units) fit some flavor of each resource group of `cq`.

    Args:
        cq: a ClusterQueue. requests: what one workload (pod set) asks for; 0 amounts are ignored.
        quota: per entry, what the workload may use there (nominalQuota for inference, nominalQuota +
            borrowingLimit for training); None when unparsable (the entry then holds 0).
    Returns:
        A FlavorFit. Raises UnknownValueError when a quota value is unknown at preview.
    """
    groups: dict[int, dict[str, dict[str, Decimal]]] = {}  # group -> flavor -> resource -> quota (flavor order)
    covered: dict[str, int] = {}
    for entry in quota_entries(cq):
        value = quota(entry)
        groups.setdefault(entry.group, {}).setdefault(entry.flavor, {})[entry.resource] = \
            value if value is not None else Decimal(0)
        covered.setdefault(entry.resource, entry.group)
    wanted = {r: a for r, a in requests.items() if a > 0}
    uncovered = frozenset(r for r in wanted if r not in covered)
    short: dict[str, tuple[Decimal, str]] = {}
    chosen: dict[int, str] = {}
    for g, flavors in groups.items():
        asked = {r: a for r, a in wanted.items() if covered.get(r) == g}
        if not asked or not flavors:
            continue
        best: Optional[dict[str, tuple[Decimal, str]]] = None
        for flavor, quotas in flavors.items():
            misses = {r: (quotas.get(r, Decimal(0)), flavor) for r, a in asked.items() if a > quotas.get(r, Decimal(0))}
            if not misses:
                chosen[g] = flavor
                best = {}
                break
            if best is None or len(misses) < len(best):
                best = misses
        short.update(best or {})
    return FlavorFit(fits=not uncovered and not short, uncovered=uncovered, short=short, flavors=chosen)
