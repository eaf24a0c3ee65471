"""Pure plans: validated Settings -> the typed Kueue objects of each cohort layout. No Pulumi here.

The same plans feed the components (components/resources/layouts.py), the PR summary's quota tables and the benchmarks.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping, Optional, Sequence

from kueue_cohorts.components.model.kueue import (
    BorrowWithinCohortSpec,
    ClusterQueueSpec,
    CohortSpec,
    FlavorFungibilitySpec,
    FlavorQuotas,
    LocalQueueSpec,
    NamespaceSpec,
    PreemptionSpec,
    ResourceFlavorSpec,
    ResourceGroup,
    ResourceQuota,
    WorkloadPriorityClassSpec,
)
from kueue_cohorts.components.settings import (
    CheckpointSettings,
    FlavorDeclaration,
    FlavorFungibility,
    InferenceTrainingSettings,
    NamespacePolicy,
    Preemption,
    PriorityClass,
    ResourceFlavorSettings,
    Settings,
    SharedPoolSettings,
    TenantSettings,
    quantity,
)
from kueue_cohorts.policy.rules.book.admission import kube_object
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import nominal_of
from kueue_cohorts.policy.rules.vocabulary.objects import INFERENCE_ROLE, TENANT_ROLE, TRAINING_ROLE
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL


@dataclass(frozen=True)
class CohortPlan:
    """Every object of one cohort, in creation order.

    layout: "inference-training" (asymmetric) or "shared-pool" (symmetric). namespace_policy: what to do with
    `namespaces`; namespace_policies: (namespace, policy) pairs that override it for one namespace (the layout's
    `namespacePolicies`). checkpoints: (namespace, CheckpointSettings) pairs for the training PVCs.
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
    namespace_policies: tuple[tuple[str, NamespacePolicy], ...] = ()

    def policy_of(self, namespace: str) -> NamespacePolicy:
        """What the stack does with tenant ``namespace``: its override in ``namespace_policies``, else
        ``namespace_policy``."""
        return dict(self.namespace_policies).get(namespace, self.namespace_policy)

    def cluster_queue(self, name: str) -> ClusterQueueSpec:
        """The ClusterQueueSpec called `name`. Raises KeyError."""
        for cq in self.cluster_queues:
            if cq.name == name:
                return cq
        raise KeyError(name)

    @property
    def inference_nominal(self) -> dict[str, str]:
        """The inference nominal, one definition for the rendered rollout strategy, the settings rules and the
        rollout guardrail (`LayoutScope.inference_nominal`): the pack's own reading of the planned inference
        ClusterQueue (`inference_rollout_fits_nominal.nominal_of`): per resource the largest nominalQuota over its
        flavors, a quantity string in base units ({} without one). Not the first flavor's: Kueue v0.19.2 tries the
        queue's flavors in order and takes the next when a workload does not fit (`pkg/scheduler/flavorassigner/
        flavorassigner.go` findFlavorForPodSets; whenCanPreempt TryNextFlavor by default), and each served replica is
        its own Workload. Approximate: a flavor is assigned whole per resource group, the maxima may come from
        different flavors; the exact reading is per flavor."""
        inference = [cq for cq in self.cluster_queues if cq.role == INFERENCE_ROLE]
        if not inference:
            return {}
        return {r: str(v) for r, v in nominal_of(kube_object(inference[0].manifest())).items()}


def flavor_spec(settings: ResourceFlavorSettings | FlavorDeclaration, node_labels: Optional[Mapping[str, str]] = None
                ) -> ResourceFlavorSpec:
    """A ResourceFlavor from `kueue-cohorts:resourceFlavor` (or one entry of `resourceFlavors`); `node_labels`
    stands in for settings whose nodeLabels are omitted (None)."""
    labels = settings.node_labels if settings.node_labels is not None else (node_labels or {})
    return ResourceFlavorSpec(
        name=settings.name,
        node_labels=dict(labels),
        node_taints=tuple(t.model_dump(by_alias=True, exclude_none=True) for t in settings.node_taints),
        tolerations=tuple(t.model_dump(by_alias=True, exclude_none=True) for t in settings.tolerations),
    )


def common_labels(settings: Settings, flavor: str) -> dict[str, str]:
    """The node labels every node pool of ResourceFlavor `flavor` has (same key and value), in the first pool's
    order; {} when the flavor has no pool."""
    pools = settings.pools_of(flavor)
    if not pools:
        return {}
    return {k: v for k, v in pools[0].labels.items() if all(p.labels.get(k) == v for p in pools[1:])}


def flavor_specs(settings: Settings) -> tuple[ResourceFlavorSpec, ...]:
    """Every ResourceFlavor of the stack in declared order: the entries of `resourceFlavors` (nodeLabels omitted:
    the labels its node pools share), else the one `resourceFlavor` as written."""
    if settings.resource_flavors:
        return tuple(flavor_spec(f, common_labels(settings, f.name)) for f in settings.resource_flavors)
    return (flavor_spec(settings.resource_flavor),)


@dataclass(frozen=True, slots=True)
class QueueFlavor:
    """One flavor of one queue's quota as planned: the flavor name and resource -> quantity maps (borrowing /
    lending None = not written)."""

    flavor: str
    nominal: Mapping[str, str]
    borrowing: Optional[Mapping[str, str]] = None
    lending: Optional[Mapping[str, str]] = None


def inference_flavors(layout: InferenceTrainingSettings, flavor: str) -> tuple[QueueFlavor, ...]:
    """The inference quota per flavor, in declared order: `inference.flavors`, else the single-flavor keys in
    `flavor` (the stack's one ResourceFlavor)."""
    inf = layout.inference
    if inf.flavors:
        return tuple(QueueFlavor(f.name, dict(f.nominal_quota), f.borrowing_limit, f.lending_limit)
                     for f in inf.flavors)
    return (QueueFlavor(flavor, dict(inf.nominal_quota or {}), inf.borrowing_limit, inf.lending_limit),)


def training_flavors(layout: InferenceTrainingSettings, flavor: str) -> tuple[QueueFlavor, ...]:
    """What training may borrow per flavor, in declared order: `training.flavors` (borrowingLimit omitted: the
    inference nominalQuota of that flavor), else the inference flavors, each borrowing up to the inference
    nominalQuota there (the single-flavor `training.borrowingLimit` overrides it)."""
    inference = {f.flavor: f for f in inference_flavors(layout, flavor)}
    trn = layout.training
    if trn.flavors:
        return tuple(QueueFlavor(f.name, {}, {**(inference[f.name].nominal if f.name in inference else {}),
                                                **(f.borrowing_limit or {})}) for f in trn.flavors)
    return tuple(QueueFlavor(f.flavor, {}, {**f.nominal, **(trn.borrowing_limit or {})})
                 for f in inference.values())


def tenant_flavors(tenant: TenantSettings, flavor: str) -> tuple[QueueFlavor, ...]:
    """A tenant's quota per flavor: `flavors`, else its floor / borrowingLimit / lendingLimit in `flavor`."""
    if tenant.flavors:
        return tuple(QueueFlavor(f.name, dict(f.nominal_quota), f.borrowing_limit, f.lending_limit)
                     for f in tenant.flavors)
    return (QueueFlavor(flavor, dict(tenant.floor or {}), tenant.borrowing_limit, tenant.lending_limit),)


def cohort_flavors(layout: InferenceTrainingSettings | SharedPoolSettings, flavor: str) -> tuple[QueueFlavor, ...]:
    """The Cohort object's nominalQuota per flavor: `cohortFlavors`, else `cohortQuota` in `flavor`; () for none."""
    if layout.cohort_flavors:
        return tuple(QueueFlavor(f.name, dict(f.nominal_quota)) for f in layout.cohort_flavors)
    if layout.cohort_quota:
        return (QueueFlavor(flavor, dict(layout.cohort_quota)),)
    return ()


def _fungibility(*choices: Optional[FlavorFungibility]) -> Optional[FlavorFungibilitySpec]:
    """The first flavorFungibility set (queue's, then layout's), or None (not written: Kueue's defaults)."""
    for choice in choices:
        if choice is not None:
            return FlavorFungibilitySpec(choice.when_can_borrow.value, choice.when_can_preempt.value)
    return None


def _preemption(p: Preemption) -> PreemptionSpec:
    bwc = p.borrow_within_cohort
    return PreemptionSpec(
        reclaim_within_cohort=p.reclaim_within_cohort.value,
        within_cluster_queue=p.within_cluster_queue.value,
        borrow_within_cohort=None
        if bwc is None
        else BorrowWithinCohortSpec(policy=bwc.policy.value, max_priority_threshold=bwc.max_priority_threshold),
    )


def _group(covered: tuple[str, ...], flavors: Sequence[QueueFlavor]) -> ResourceGroup:
    """One resource group: `covered` resources, and per flavor (in the given order) a quota for each of them
    (nominalQuota 0 where a flavor leaves a resource out; limits only where given)."""
    return ResourceGroup(covered_resources=covered, flavors=tuple(
        FlavorQuotas(flavor=f.flavor, resources=tuple(
            ResourceQuota(
                name=r,
                nominal_quota=f.nominal.get(r, "0"),
                borrowing_limit=None if f.borrowing is None else f.borrowing.get(r),
                lending_limit=None if f.lending is None else f.lending.get(r),
            )
            for r in covered
        ))
        for f in flavors
    ))


def _covered(*flavor_lists: Sequence[QueueFlavor]) -> tuple[str, ...]:
    """The union of the nominalQuota keys of every flavor, in first-seen order."""
    return tuple(dict.fromkeys(r for flavors in flavor_lists for f in flavors for r in f.nominal))


"""The immutable label the API server puts on every Namespace (its name): the selectors pin it."""


def _selector(label: str, tenant: str, namespaces: Sequence[str]) -> dict[str, Any]:
    """The namespaceSelector of a ClusterQueue: the tenant label AND the declared namespace names. The name pin makes
    a copied tenant label on any other namespace select nothing (a namespace owner may edit its labels, never its
    kubernetes.io/metadata.name)."""
    return {
        "matchLabels": {label: tenant},
        "matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": sorted(set(namespaces))}],
    }


def _cluster_queue(layout: InferenceTrainingSettings | SharedPoolSettings, name: str, role: str, tenant: str,
                   namespaces: Sequence[str], group: ResourceGroup, preemption: Preemption | PreemptionSpec,
                   fungibility: Optional[FlavorFungibility]) -> ClusterQueueSpec:
    """A ClusterQueue of `layout`'s cohort: its one resource `group`, `preemption` (as configured, or already planned
    to share one spec among many queues), the namespaceSelector of `tenant`
    (the layout's namespace label) pinned to `namespaces`, the layout's queueingStrategy and stopPolicy, and the
    queue's own flavorFungibility `fungibility`, else the layout's (None: Kueue's defaults, not written)."""
    return ClusterQueueSpec(
        name=name,
        cohort_name=layout.cohort,
        resource_groups=(group,),
        preemption=preemption if isinstance(preemption, PreemptionSpec) else _preemption(preemption),
        namespace_selector=_selector(layout.namespace_label, tenant, namespaces),
        role=role,
        queueing_strategy=layout.queueing_strategy.value if layout.queueing_strategy else None,
        stop_policy=layout.stop_policy.value if layout.stop_policy else None,
        flavor_fungibility=_fungibility(fungibility, layout.flavor_fungibility),
    )


def _cohort_object(layout: InferenceTrainingSettings | SharedPoolSettings, flavor: str,
                   covered: tuple[str, ...]) -> Optional[CohortSpec]:
    """The layout's Cohort object (its cohortFlavors or cohortQuota as nominalQuota over `covered`), or None when
    the layout declares no Cohort quota. `flavor`: the stack's one ResourceFlavor (the single-flavor keys')."""
    cohort = cohort_flavors(layout, flavor)
    return CohortSpec(name=layout.cohort, resource_groups=(_group(covered, cohort),)) if cohort else None


def _priority(pc: PriorityClass) -> WorkloadPriorityClassSpec:
    return WorkloadPriorityClassSpec(name=pc.name, value=pc.value, description=pc.description)


def _q(value: Optional[str]) -> Decimal:
    return quantity.parse(value) if value is not None else Decimal(0)




def shared_pool_totals(layout: SharedPoolSettings, flavor: str = "") -> dict[str, dict[str, Decimal]]:
    """Pool total per flavor and resource of the symmetric cohort (base units): the tenants' nominalQuota (floor)
    in that flavor + the Cohort object's, flavors and resources in first-seen order. Linear in the number of
    tenants. `flavor`: the stack's one ResourceFlavor (the single-flavor keys' flavor)."""
    totals: dict[str, dict[str, Decimal]] = {}
    entries = [e for tenant in layout.tenants for e in tenant_flavors(tenant, flavor)]
    for entry in entries + list(cohort_flavors(layout, flavor)):
        total = totals.setdefault(entry.flavor, {})
        for resource, amount in entry.nominal.items():
            total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    return totals




def plan_inference_training(layout: InferenceTrainingSettings, flavor: str) -> CohortPlan:
    """Plan the asymmetric cohort of our guide.

    Inference owns the nominalQuota of every covered resource with an explicit borrowingLimit 0 on each; training
    has nominalQuota 0 and a borrowingLimit defaulting to the inference nominalQuota. Covered resources are the
    keys of inference.nominalQuota, in config order. With `flavors`, each flavor is planned that way, in the
    declared order (`resourceGroups[0].flavors[]`). `flavor`: the stack's one ResourceFlavor, which the
    single-flavor keys mean.
    """
    inf, trn = layout.inference, layout.training
    inference = inference_flavors(layout, flavor)
    covered = _covered(inference)
    zero = {r: "0" for r in covered}
    inference = tuple(QueueFlavor(f.flavor, f.nominal, {**zero, **(f.borrowing or {})}, f.lending)
                      for f in inference)
    training = tuple(QueueFlavor(f.flavor, {}, {**zero, **(f.borrowing or {})})
                     for f in training_flavors(layout, flavor))
    inf_tenant = inf.tenant or inf.cluster_queue
    trn_tenant = trn.tenant or trn.cluster_queue
    inference_cq = _cluster_queue(layout, inf.cluster_queue, INFERENCE_ROLE, inf_tenant, inf.namespaces,
                                  _group(covered, inference), inf.preemption, inf.flavor_fungibility)
    training_cq = _cluster_queue(layout, trn.cluster_queue, TRAINING_ROLE, trn_tenant, trn.namespaces,
                                 _group(covered, training), trn.preemption, trn.flavor_fungibility)
    namespaces = tuple(NamespaceSpec(ns, {layout.namespace_label: inf_tenant}) for ns in inf.namespaces) + tuple(
        NamespaceSpec(ns, {layout.namespace_label: trn_tenant}) for ns in trn.namespaces
    )
    local_queues = tuple(LocalQueueSpec(inf.local_queue, ns, inference_cq) for ns in inf.namespaces) + tuple(
        LocalQueueSpec(trn.local_queue, ns, training_cq) for ns in trn.namespaces
    )
    return CohortPlan(
        cohort=layout.cohort,
        layout="inference-training",
        namespace_policy=layout.namespace_policy,
        namespace_policies=tuple(layout.namespace_policies.items()),
        namespaces=namespaces,
        cluster_queues=(inference_cq, training_cq),
        local_queues=local_queues,
        priority_classes=(_priority(inf.priority_class), _priority(trn.priority_class)),
        cohort_object=_cohort_object(layout, flavor, covered),
        checkpoints=tuple((ns, trn.checkpoint) for ns in trn.namespaces) if trn.checkpoint else (),
    )


def plan_shared_pool(layout: SharedPoolSettings, flavor: str) -> CohortPlan:
    """Plan the symmetric cohort: per tenant a floor (nominalQuota), a borrowingLimit defaulting to pool total minus
    floor, an optional lendingLimit. Covered resources: the union of the floors' keys, in first-seen order. With
    `flavors`, each flavor is planned that way against the pool total of that flavor, in the tenant's declared
    order. `flavor`: the stack's one ResourceFlavor, which the single-flavor keys mean."""
    pools = shared_pool_totals(layout, flavor)
    covered = tuple(dict.fromkeys(r for total in pools.values() for r in total))
    cluster_queues, namespaces, local_queues = [], [], []
    # Computed once (not per tenant): planning stays linear in the number of tenants.
    entries = {tenant.name: tenant_flavors(tenant, flavor) for tenant in layout.tenants}
    binary = {(f.flavor, r): False for es in entries.values() for f in es for r in covered}
    for es in entries.values():
        for f in es:
            for r in covered:
                binary[(f.flavor, r)] = binary[(f.flavor, r)] or quantity.is_binary(f.nominal.get(r, ""))
    # Pool total minus floor, per (flavor, resource, floor as written): tenants with the same floor (most of a big
    # pool) share one computation.
    remainder: dict[tuple[str, str, str], str] = {}

    def default_borrowing(flavor_name: str, resource: str, floor: str) -> str:
        key = (flavor_name, resource, floor)
        if key not in remainder:
            total = pools.get(flavor_name, {}).get(resource, Decimal(0))
            remainder[key] = quantity.canonical(total - quantity.parse(floor), binary=binary[(flavor_name, resource)])
        return remainder[key]

    preemption = _preemption(layout.preemption)  # the layout's, the same for every tenant
    for tenant in layout.tenants:
        cq_name = tenant.cluster_queue_name
        planned = []
        for f in entries[tenant.name]:
            borrowing = {r: default_borrowing(f.flavor, r, f.nominal.get(r, "0")) for r in covered}
            borrowing.update(f.borrowing or {})
            planned.append(QueueFlavor(f.flavor, f.nominal, borrowing, f.lending))
        cq = _cluster_queue(layout, cq_name, TENANT_ROLE, tenant.name, tenant.namespace_names,
                            _group(covered, planned), preemption, tenant.flavor_fungibility)
        cluster_queues.append(cq)
        for ns in tenant.namespace_names:
            namespaces.append(NamespaceSpec(ns, {layout.namespace_label: tenant.name}))
            local_queues.append(LocalQueueSpec(tenant.local_queue_name, ns, cq))
    return CohortPlan(
        cohort=layout.cohort,
        layout="shared-pool",
        namespace_policy=layout.namespace_policy,
        namespace_policies=tuple(layout.namespace_policies.items()),
        namespaces=tuple(namespaces),
        cluster_queues=tuple(cluster_queues),
        local_queues=tuple(local_queues),
        priority_classes=tuple(_priority(pc) for pc in layout.priority_classes),
        cohort_object=_cohort_object(layout, flavor, covered),
    )


def stack_plans(settings: Settings) -> list[CohortPlan]:
    """The stack's cohort plans in layout order (inferenceTraining, then sharedPool; absent layouts skipped). The
    single-flavor keys of a layout mean the stack's first ResourceFlavor (`Settings.flavor_names()[0]`), as in the
    rendered objects. Pure."""
    flavor = settings.flavor_names()[0]
    plans = []
    if settings.inference_training is not None:
        plans.append(plan_inference_training(settings.inference_training, flavor))
    if settings.shared_pool is not None:
        plans.append(plan_shared_pool(settings.shared_pool, flavor))
    return plans
