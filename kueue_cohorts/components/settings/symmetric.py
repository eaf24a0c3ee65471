"""`kueue-cohorts:sharedPool`: the symmetric layout (tenants that each keep a floor, nominalQuota, and borrow the
rest of the pool while their neighbours are idle).
"""
from __future__ import annotations

from typing import Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import (
    DnsLabel,
    DnsSubdomain,
    LabelKey,
    Model,
    NamespacePolicy,
    QueueingStrategy,
    ResourceList,
    StopPolicy,
)
from kueue_cohorts.components.settings.flavors import FlavorFungibility, FlavorQuota
from kueue_cohorts.components.settings.queues import Preemption, PriorityClass

# --- symmetric layout ------------------------------------------------------------------------------------------------


class TenantSettings(Model):
    """One tenant of `kueue-cohorts:sharedPool`."""

    name: DnsLabel
    """Tenant name (DNS-1123 label): the selector label's value."""
    cluster_queue: Optional[DnsSubdomain] = None
    """ClusterQueue name. Omitted: <name>-cq."""
    local_queue: Optional[DnsLabel] = None
    """LocalQueue name. Omitted: <name>-lq."""
    namespaces: Optional[list[DnsLabel]] = None
    """The tenant's namespaces. Omitted: [<name>]."""
    floor: Optional[ResourceList] = Field(default=None, min_length=1)
    """The tenant's nominalQuota in the stack's one flavor (guaranteed; reclaimed with reclaimWithinCohort Any).
    Every tenant names the same resources. Required unless `flavors` is given (then refused)."""
    borrowing_limit: Optional[ResourceList] = None
    """At most pool total minus floor per resource. Omitted: pool total minus floor."""
    lending_limit: Optional[ResourceList] = None
    """At most the floor. Omitted: lend all idle quota."""
    flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The tenant's quota per ResourceFlavor, in the order Kueue tries them (instead of floor / borrowingLimit /
    lendingLimit): nominalQuota is the floor in that flavor. Every tenant names the same resources."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of the tenant's ClusterQueue. Omitted: the layout's, else Kueue's defaults."""
    priority_class: Optional[DnsSubdomain] = None
    """One of sharedPool.priorityClasses. Omitted: none."""

    # The defaults of the names, resolved here once: every layer reads these, none recomputes them.

    @property
    def cluster_queue_name(self) -> str:
        """The tenant's ClusterQueue name: `clusterQueue`, else `<name>-cq`."""
        return self.cluster_queue or f"{self.name}-cq"

    @property
    def local_queue_name(self) -> str:
        """The name of the tenant's LocalQueue in each of its namespaces: `localQueue`, else `<name>-lq`."""
        return self.local_queue or f"{self.name}-lq"

    @property
    def namespace_names(self) -> list[str]:
        """The tenant's namespaces, in the stack file's order: `namespaces`, else `[<name>]`."""
        return list(self.namespaces) if self.namespaces else [self.name]


class SharedPoolSettings(Model):
    """`kueue-cohorts:sharedPool`: the symmetric cohort, each tenant a floor plus borrowing."""

    cohort: DnsSubdomain
    """The cohortName of every tenant ClusterQueue."""
    cohort_quota: Optional[ResourceList] = None
    """nominalQuota of a Cohort object, part of the pool total. Omitted: none."""
    namespace_policy: NamespacePolicy = NamespacePolicy.CREATE
    """Create, Label or External, as for inferenceTraining (Create refuses a namespace that exists without this
    stack's mark; Label and External need the namespace to exist). Default Create."""
    namespace_policies: dict[DnsLabel, NamespacePolicy] = Field(default_factory=dict)
    """Per tenant namespace, a namespacePolicy for that namespace alone, in place of namespacePolicy (adopt one
    existing namespace while the stack creates the others). Each key is one of the tenants' namespaces. Default
    none: namespacePolicy for every one."""

    def policy_of(self, namespace: str) -> NamespacePolicy:
        """The namespacePolicy of tenant ``namespace``: its ``namespacePolicies`` entry, else ``namespacePolicy``."""
        return self.namespace_policies.get(namespace, self.namespace_policy)

    def namespace_names(self) -> list[str]:
        """Every tenant namespace of the layout, tenant by tenant, in config order."""
        return [ns for tenant in self.tenants for ns in tenant.namespace_names]
    namespace_label: LabelKey = "kueue.x-k8s.io/queue"
    """The label key the namespaceSelectors match. Default kueue.x-k8s.io/queue."""
    preemption: Preemption = Preemption()
    """Preemption of every tenant ClusterQueue."""
    queueing_strategy: Optional[QueueingStrategy] = None
    """StrictFIFO or BestEffortFIFO. Omitted: Kueue's."""
    stop_policy: Optional[StopPolicy] = None
    """None, Hold or HoldAndDrain. Omitted: Kueue's."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of every tenant ClusterQueue (a tenant's own wins). Omitted: Kueue's defaults, not
    written."""
    cohort_flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The Cohort object's nominalQuota per ResourceFlavor (instead of cohortQuota; only nominalQuota is used),
    part of the pool total of each flavor. Omitted: cohortQuota."""
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    """WorkloadPriorityClasses the tenants may reference. Default none."""
    tenants: list[TenantSettings] = Field(min_length=1)
    """The tenants (>= 1, names unique). Pool total = sum of floors + cohortQuota, within capacity."""

