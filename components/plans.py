"""Pure plans: validated Settings -> the typed Kueue objects of each cohort layout. No Pulumi here.

The same plans feed the components (components/layouts.py), the PR summary's quota tables and the benchmarks.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Mapping, Optional, Sequence

from components import quantity
from components.kueue import (
    BorrowWithinCohortSpec,
    ClusterQueueSpec,
    CohortSpec,
    FlavorQuotas,
    LocalQueueSpec,
    NamespaceSpec,
    PreemptionSpec,
    ResourceFlavorSpec,
    ResourceGroup,
    ResourceQuota,
    WorkloadPriorityClassSpec,
)
from components.settings import (
    CheckpointSettings,
    InferenceTrainingSettings,
    NamespacePolicy,
    Preemption,
    PriorityClass,
    ResourceFlavorSettings,
    SharedPoolSettings,
)

ROLE_INFERENCE = "inference"
ROLE_TRAINING = "training"
ROLE_TENANT = "tenant"


@dataclass(frozen=True)
class CohortPlan:
    """Every object of one cohort, in creation order.

    layout: "inference-training" (asymmetric) or "shared-pool" (symmetric). namespace_policy: what to do with
    `namespaces`. checkpoints: (namespace, CheckpointSettings) pairs for the training PVCs.
    """

    cohort: str
    layout: str
    namespace_policy: NamespacePolicy
    namespaces: tuple[NamespaceSpec, ...]
    cluster_queues: tuple[ClusterQueueSpec, ...]
    local_queues: tuple[LocalQueueSpec, ...]
    priority_classes: tuple[WorkloadPriorityClassSpec, ...]
    cohort_object: Optional[CohortSpec] = None
    checkpoints: tuple[tuple[str, CheckpointSettings], ...] = ()

    def cluster_queue(self, name: str) -> ClusterQueueSpec:
        """The ClusterQueueSpec called `name`. Raises KeyError."""
        for cq in self.cluster_queues:
            if cq.name == name:
                return cq
        raise KeyError(name)


def flavor_spec(settings: ResourceFlavorSettings) -> ResourceFlavorSpec:
    """The stack's ResourceFlavor from `kueue-cohorts:resourceFlavor`."""
    return ResourceFlavorSpec(
        name=settings.name,
        node_labels=dict(settings.node_labels),
        node_taints=tuple(t.model_dump(by_alias=True, exclude_none=True) for t in settings.node_taints),
        tolerations=tuple(t.model_dump(by_alias=True, exclude_none=True) for t in settings.tolerations),
    )


def _preemption(p: Preemption) -> PreemptionSpec:
    bwc = p.borrow_within_cohort
    return PreemptionSpec(
        reclaim_within_cohort=p.reclaim_within_cohort.value,
        within_cluster_queue=p.within_cluster_queue.value,
        borrow_within_cohort=None
        if bwc is None
        else BorrowWithinCohortSpec(policy=bwc.policy.value, max_priority_threshold=bwc.max_priority_threshold),
    )


def _group(
    flavor: str,
    covered: tuple[str, ...],
    nominal: Mapping[str, str],
    borrowing: Optional[Mapping[str, str]] = None,
    lending: Optional[Mapping[str, str]] = None,
) -> ResourceGroup:
    resources = tuple(
        ResourceQuota(
            name=r,
            nominal_quota=nominal.get(r, "0"),
            borrowing_limit=None if borrowing is None else borrowing.get(r),
            lending_limit=None if lending is None else lending.get(r),
        )
        for r in covered
    )
    return ResourceGroup(covered_resources=covered, flavors=(FlavorQuotas(flavor=flavor, resources=resources),))


NAME_LABEL = "kubernetes.io/metadata.name"
"""The immutable label the API server puts on every Namespace (its name): the selectors pin it."""


def _selector(label: str, tenant: str, namespaces: Sequence[str]) -> dict:
    """The namespaceSelector of a ClusterQueue: the tenant label AND the declared namespace names. The name pin makes
    a copied tenant label on any other namespace select nothing (a namespace owner may edit its labels, never its
    kubernetes.io/metadata.name)."""
    return {
        "matchLabels": {label: tenant},
        "matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": sorted(set(namespaces))}],
    }


def _priority(pc: PriorityClass) -> WorkloadPriorityClassSpec:
    return WorkloadPriorityClassSpec(name=pc.name, value=pc.value, description=pc.description)


def _q(value: Optional[str]) -> Decimal:
    return quantity.parse(value) if value is not None else Decimal(0)


def inference_training_nominal(layout: InferenceTrainingSettings) -> dict[str, Decimal]:
    """Total nominalQuota of the asymmetric cohort per resource (base units): inference + the Cohort object's
    cohortQuota (training owns 0)."""
    total = {resource: _q(amount) for resource, amount in layout.inference.nominal_quota.items()}
    for resource, amount in (layout.cohort_quota or {}).items():
        total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    return total


def shared_pool_total(layout: SharedPoolSettings) -> dict[str, Decimal]:
    """Pool total per resource of the symmetric cohort (base units): sum of the tenants' floors + the Cohort object's
    cohortQuota, in first-seen resource order. Linear in the number of tenants."""
    total: dict[str, Decimal] = {}
    for tenant in layout.tenants:
        for resource, amount in tenant.floor.items():
            total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    for resource, amount in (layout.cohort_quota or {}).items():
        total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    return total


def plan_inference_training(layout: InferenceTrainingSettings, flavor: str) -> CohortPlan:
    """Plan the asymmetric cohort of our guide.

    Inference owns the nominalQuota of every covered resource with an explicit borrowingLimit 0 on each; training
    has nominalQuota 0 and a borrowingLimit defaulting to the inference nominalQuota. Covered resources are the
    keys of inference.nominalQuota, in config order.
    """
    inf, trn = layout.inference, layout.training
    covered = tuple(inf.nominal_quota)
    zero = {r: "0" for r in covered}
    inf_tenant = inf.tenant or inf.cluster_queue
    trn_tenant = trn.tenant or trn.cluster_queue
    inference_cq = ClusterQueueSpec(
        name=inf.cluster_queue,
        cohort_name=layout.cohort,
        resource_groups=(_group(flavor, covered, inf.nominal_quota, {**zero, **(inf.borrowing_limit or {})},
                                inf.lending_limit),),
        preemption=_preemption(inf.preemption),
        namespace_selector=_selector(layout.namespace_label, inf_tenant, inf.namespaces),
        role=ROLE_INFERENCE,
        queueing_strategy=layout.queueing_strategy.value if layout.queueing_strategy else None,
        stop_policy=layout.stop_policy.value if layout.stop_policy else None,
    )
    borrowing = dict(inf.nominal_quota)
    borrowing.update(trn.borrowing_limit or {})
    training_cq = ClusterQueueSpec(
        name=trn.cluster_queue,
        cohort_name=layout.cohort,
        resource_groups=(_group(flavor, covered, zero, borrowing),),
        preemption=_preemption(trn.preemption),
        namespace_selector=_selector(layout.namespace_label, trn_tenant, trn.namespaces),
        role=ROLE_TRAINING,
        queueing_strategy=layout.queueing_strategy.value if layout.queueing_strategy else None,
        stop_policy=layout.stop_policy.value if layout.stop_policy else None,
    )
    namespaces = tuple(NamespaceSpec(ns, {layout.namespace_label: inf_tenant}) for ns in inf.namespaces) + tuple(
        NamespaceSpec(ns, {layout.namespace_label: trn_tenant}) for ns in trn.namespaces
    )
    local_queues = tuple(LocalQueueSpec(inf.local_queue, ns, inference_cq) for ns in inf.namespaces) + tuple(
        LocalQueueSpec(trn.local_queue, ns, training_cq) for ns in trn.namespaces
    )
    cohort_object = None
    if layout.cohort_quota:
        cohort_object = CohortSpec(
            name=layout.cohort, resource_groups=(_group(flavor, covered, layout.cohort_quota),)
        )
    return CohortPlan(
        cohort=layout.cohort,
        layout="inference-training",
        namespace_policy=layout.namespace_policy,
        namespaces=namespaces,
        cluster_queues=(inference_cq, training_cq),
        local_queues=local_queues,
        priority_classes=(_priority(inf.priority_class), _priority(trn.priority_class)),
        cohort_object=cohort_object,
        checkpoints=tuple((ns, trn.checkpoint) for ns in trn.namespaces) if trn.checkpoint else (),
    )


def plan_shared_pool(layout: SharedPoolSettings, flavor: str) -> CohortPlan:
    """Plan the symmetric cohort: per tenant a floor (nominalQuota), a borrowingLimit defaulting to pool total minus
    floor, an optional lendingLimit. Covered resources: the union of the floors' keys, in first-seen order."""
    pool = shared_pool_total(layout)
    covered = tuple(pool)
    cluster_queues, namespaces, local_queues = [], [], []
    # Computed once (not per tenant): planning stays linear in the number of tenants.
    binary = {r: any(quantity.is_binary(t.floor.get(r, "")) for t in layout.tenants) for r in covered}
    for tenant in layout.tenants:
        cq_name = tenant.cluster_queue or f"{tenant.name}-cq"
        borrowing = {
            r: quantity.canonical(pool[r] - quantity.parse(tenant.floor.get(r, "0")), binary=binary[r])
            for r in covered
        }
        borrowing.update(tenant.borrowing_limit or {})
        cq = ClusterQueueSpec(
            name=cq_name,
            cohort_name=layout.cohort,
            resource_groups=(_group(flavor, covered, tenant.floor, borrowing, tenant.lending_limit),),
            preemption=_preemption(layout.preemption),
            namespace_selector=_selector(layout.namespace_label, tenant.name, tenant.namespaces or [tenant.name]),
            role=ROLE_TENANT,
            queueing_strategy=layout.queueing_strategy.value if layout.queueing_strategy else None,
            stop_policy=layout.stop_policy.value if layout.stop_policy else None,
        )
        cluster_queues.append(cq)
        for ns in tenant.namespaces or [tenant.name]:
            namespaces.append(NamespaceSpec(ns, {layout.namespace_label: tenant.name}))
            local_queues.append(LocalQueueSpec(tenant.local_queue or f"{tenant.name}-lq", ns, cq))
    cohort_object = None
    if layout.cohort_quota:
        cohort_object = CohortSpec(name=layout.cohort, resource_groups=(_group(flavor, covered, layout.cohort_quota),))
    return CohortPlan(
        cohort=layout.cohort,
        layout="shared-pool",
        namespace_policy=layout.namespace_policy,
        namespaces=tuple(namespaces),
        cluster_queues=tuple(cluster_queues),
        local_queues=tuple(local_queues),
        priority_classes=tuple(_priority(pc) for pc in layout.priority_classes),
        cohort_object=cohort_object,
    )


def max_usage(cq: ClusterQueueSpec) -> dict[str, Decimal]:
    """What a ClusterQueue can ever use per resource: nominalQuota + borrowingLimit (None counts as unbounded,
    returned as Decimal('Infinity')). Used to refuse requests that could never be admitted."""
    out: dict[str, Decimal] = {}
    for group in cq.resource_groups:
        for rq in group.flavors[0].resources:
            limit = Decimal("Infinity") if rq.borrowing_limit is None else quantity.parse(rq.borrowing_limit)
            out[rq.name] = quantity.parse(rq.nominal_quota) + limit
    return out
