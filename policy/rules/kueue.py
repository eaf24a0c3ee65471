"""Reading Kueue quota: the (flavor, resource) entries of a ClusterQueue's or Cohort's `spec.resourceGroups`.

Upstream: kubernetes-sigs/kueue `apis/kueue/v1beta2/clusterqueue_types.go` (ResourceGroup, FlavorQuotas,
ResourceQuota: `nominalQuota` required, `borrowingLimit`/`lendingLimit` optional, null = no limit). The same
shape is used by v1beta1 and by Cohort (`cohort_types.go`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

from .objects import KubeObject
from .values import as_list, format_path, get


@dataclass(frozen=True)
class QuotaEntry:
    """One `resources[]` entry of one flavor.

    Attributes:
        flavor: the ResourceFlavor name (flavors[].name).
        resource: the resource name ("cpu", "nvidia.com/gpucores").
        path: the entry's field path, e.g. "spec.resourceGroups[0].flavors[0].resources[2]".
        entry: the raw entry; read its fields with `field()` so that an unknown value raises only when needed.
    """

    flavor: str
    resource: str
    path: str
    entry: Mapping

    def field(self, name: str) -> Any:
        """The raw wire value of `nominalQuota`, `borrowingLimit` or `lendingLimit` (MISSING when not set).

        Raises UnknownValueError when the value is unknown at preview.
        """
        return get(self.entry, name)


def quota_entries(obj: KubeObject) -> Iterator[QuotaEntry]:
    """Yield every (flavor, resource) quota entry of a ClusterQueue or Cohort, in spec order.

    Raises UnknownValueError when a group, flavor or resource list (or a flavor/resource name) is unknown at
    preview.
    """
    for g, group in enumerate(as_list(get(obj.spec, "resourceGroups"))):
        for f, flavor in enumerate(as_list(get(group, "flavors"))):
            flavor_name = str(get(flavor, "name"))
            for r, res in enumerate(as_list(get(flavor, "resources"))):
                path = format_path(["spec", "resourceGroups", g, "flavors", f, "resources", r])
                yield QuotaEntry(flavor=flavor_name, resource=str(get(res, "name")), path=path, entry=res)
