"""ResourceFlavors and their quotas: `kueue-cohorts:flavors` and each queue's `flavors[]` (Kueue v1beta2
ResourceFlavor, ClusterQueue `spec.resourceGroups[].flavors[]`, `flavorFungibility`).
"""
from __future__ import annotations

from typing import Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import DnsSubdomain, FlavorFungibilityPolicy, Model, ResourceList
from kueue_cohorts.components.settings.cluster import Taint, Toleration


class ResourceFlavorSettings(Model):
    """`kueue-cohorts:resourceFlavor`: the one ResourceFlavor every ClusterQueue of the stack uses."""

    name: DnsSubdomain = "default-flavor"
    """The ResourceFlavor every ClusterQueue of the stack uses (DNS-1123 subdomain)."""
    node_labels: dict[str, str] = Field(default_factory=dict, max_length=8)
    """ResourceFlavor spec.nodeLabels: the nodes this flavor stands for (Kueue: at most 8)."""
    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.nodeTaints (at most 8)."""
    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.tolerations, added to admitted pods (at most 8)."""


class FlavorDeclaration(Model):
    """One entry of `kueue-cohorts:resourceFlavors`: a ResourceFlavor of a stack with several GPU types
    (kueue.x-k8s.io/v1beta2 ResourceFlavor, resourceflavor_types.go)."""

    name: DnsSubdomain
    """ResourceFlavor name (DNS-1123 subdomain); node pools name it in their resourceFlavor."""
    node_labels: Optional[dict[str, str]] = Field(default=None, max_length=8)
    """ResourceFlavor spec.nodeLabels: Kueue puts them on the nodeSelector of the pods it admits in this flavor
    (at most 8). Omitted: the labels every node pool of this flavor has in common."""
    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.nodeTaints (at most 8)."""
    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.tolerations, added to admitted pods (at most 8)."""


class FlavorFungibility(Model):
    """ClusterQueue `spec.flavorFungibility` (kueue.x-k8s.io/v1beta2 FlavorFungibility): whether a workload tries
    the next flavor before borrowing or preempting in the current one."""

    when_can_borrow: FlavorFungibilityPolicy = FlavorFungibilityPolicy.MAY_STOP_SEARCH
    """MayStopSearch (stop at the first flavor where the workload fits, borrowing if needed) or TryNextFlavor
    (try the next flavor before borrowing). Default MayStopSearch (Kueue's)."""
    when_can_preempt: FlavorFungibilityPolicy = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    """MayStopSearch (stop at the first flavor where the workload fits by preempting) or TryNextFlavor (try the
    next flavor before preempting). Default TryNextFlavor (Kueue's)."""


class FlavorQuota(Model):
    """One flavor of a ClusterQueue's quota (`resourceGroups[].flavors[]`): the flavor and, per resource, its
    nominalQuota, borrowingLimit and lendingLimit. The list order is the order Kueue tries the flavors in."""

    name: DnsSubdomain
    """The ResourceFlavor (a name of resourceFlavors)."""
    nominal_quota: ResourceList = Field(default_factory=dict)
    """The quota the ClusterQueue owns in this flavor (resource -> quantity). Its keys, over every flavor, are the
    covered resources; a resource a flavor leaves out gets 0 there. Default none (training)."""
    borrowing_limit: Optional[ResourceList] = None
    """How much the queue may borrow in this flavor, per resource. Inference: 0 on every resource (omitted: the
    component writes 0). Training: omitted means the inference nominalQuota of this flavor. Tenants: omitted
    means the pool total of this flavor minus the tenant's nominalQuota."""
    lending_limit: Optional[ResourceList] = None
    """At most nominalQuota per resource. Omitted: lend all idle quota of this flavor."""

