"""`kueue-cohorts:inferenceTraining`: the asymmetric layout (an inference ClusterQueue that owns the GPU
nominalQuota and never borrows, a training ClusterQueue that borrows it).
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
from kueue_cohorts.components.settings.queues import CheckpointSettings, Preemption, PriorityClass
from kueue_cohorts.components.settings.runtime import WholeNumber
from kueue_cohorts.components.settings.services import InferenceServiceSettings
from kueue_cohorts.policy.rules.vocabulary.reclaim import DEFAULT_BUDGET_SECONDS

# --- asymmetric layout -----------------------------------------------------------------------------------------------


class InferenceQueueSettings(Model):
    """The inference side of `kueue-cohorts:inferenceTraining`."""

    cluster_queue: DnsSubdomain
    """The inference ClusterQueue name."""
    local_queue: DnsLabel
    """The LocalQueue name made in each inference namespace."""
    namespaces: list[DnsLabel] = Field(min_length=1)
    """Inference namespaces (>= 1); a namespace belongs to one ClusterQueue only."""
    tenant: Optional[DnsLabel] = None
    """Value of the namespace selector label. Omitted: the ClusterQueue name."""
    nominal_quota: Optional[ResourceList] = Field(default=None, min_length=1)
    """The quota inference owns in the stack's one flavor (resource -> quantity, each > 0). Its keys are the
    cohort's covered resources. Required unless `flavors` is given (then refused)."""
    borrowing_limit: Optional[ResourceList] = None
    """Must be 0 on every covered resource (Kueue reads a missing borrowingLimit as unlimited). Omitted: the
    component writes 0."""
    lending_limit: Optional[ResourceList] = None
    """At most nominalQuota per resource. Omitted: lend all idle quota."""
    flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The quota per ResourceFlavor, in the order Kueue tries them (instead of nominalQuota / borrowingLimit /
    lendingLimit). Every flavor names every covered resource with a nominalQuota > 0; borrowingLimit 0."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of the inference ClusterQueue. Omitted: the layout's, else Kueue's defaults."""
    preemption: Preemption = Preemption()
    """Preemption of the inference ClusterQueue; reclaimWithinCohort must be Any."""
    priority_class: PriorityClass
    """The inference WorkloadPriorityClass."""
    services: list[InferenceServiceSettings] = Field(default_factory=list)
    """KServe InferenceServices (serving.kserve.io/v1beta1) on the inference LocalQueue. Default none."""
    reclaim_budget_seconds: WholeNumber = Field(default=DEFAULT_BUDGET_SECONDS, ge=1)
    """The reclaim budget, in seconds: the longest inference may wait, after it reclaims its quota, for a borrowing
    trainer pod to give its node back. Kueue admits inference at once (the victim's quota is released when its pods
    start terminating) and the inference pod then waits for the kubelet to stop the trainer: up to its
    terminationGracePeriodSeconds, preStop hook included (the kubelet still gives a container 2 s after a hook). Every
    TrainingRuntime and TrainJob that can borrow inference's quota must fit it (grace period, preStop hook, declared
    checkpoint save: the rule book's RECLAIM_WITHIN_BUDGET, in the settings check, the pack, the cluster's admission
    policies and `kueue-cohorts verify`); the what-if reads the same figure. Default 60: the guide's
    terminationGracePeriodSeconds, in which its 30 s checkpoint save and one 5 s step fit."""


class TrainingQueueSettings(Model):
    """The training side of `kueue-cohorts:inferenceTraining`: nominalQuota 0, borrows idle inference quota."""

    cluster_queue: DnsSubdomain
    """The training ClusterQueue name."""
    local_queue: DnsLabel
    """The LocalQueue name made in each training namespace."""
    namespaces: list[DnsLabel] = Field(min_length=1)
    """Training namespaces (>= 1)."""
    tenant: Optional[DnsLabel] = None
    """Value of the namespace selector label. Omitted: the ClusterQueue name."""
    borrowing_limit: Optional[ResourceList] = None
    """How much training may borrow, per covered resource. Omitted: the inference nominalQuota."""
    flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """What training may borrow per ResourceFlavor, in the order Kueue tries them (each entry: name,
    borrowingLimit; nominalQuota stays 0). Omitted: the inference flavors in their order, each borrowing up to the
    inference nominalQuota of that flavor."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of the training ClusterQueue. Omitted: the layout's, else Kueue's defaults."""
    preemption: Preemption = Preemption()
    """Preemption of the training ClusterQueue."""
    priority_class: PriorityClass
    """The training WorkloadPriorityClass; its value must be below the inference one."""
    checkpoint: Optional[CheckpointSettings] = None
    """The ReadWriteMany checkpoint PVC made in every training namespace. Omitted: none (needed by
    trainingRuntime)."""


class InferenceTrainingSettings(Model):
    """`kueue-cohorts:inferenceTraining`: the asymmetric cohort of our guide."""

    cohort: DnsSubdomain
    """The cohortName both ClusterQueues share."""
    cohort_quota: Optional[ResourceList] = None
    """nominalQuota of a Cohort object: shared quota added on top, never guaranteed to inference; counts toward
    capacity. Omitted: no Cohort object."""
    namespace_policy: NamespacePolicy = NamespacePolicy.CREATE
    """What the stack does with the tenant namespaces. Create: it creates each one with the selector label and its
    mark `kueue-cohorts/owner: <project>/<stack>`, and owns it (destroy, or removing it from the config, deletes it
    with everything in it); a namespace that exists without this stack's mark is refused before any change. Label:
    the namespace must exist; the stack only adds the selector label, and destroy (or removing the namespace) removes
    only that label. External: the namespace must exist; the stack leaves it and its label alone. Create -> Label
    hands the stack's namespaces over in place (kept, mark dropped); Create -> External is refused (it would delete
    them): go through Label. Default Create."""
    namespace_policies: dict[DnsLabel, NamespacePolicy] = Field(default_factory=dict)
    """Per tenant namespace (inference's or training's), a namespacePolicy for that namespace alone, in place of
    namespacePolicy: adopt one existing namespace with Label (or leave it External) while the stack creates the
    others. Each key is one of the layout's namespaces. Default none: namespacePolicy for every one."""

    def policy_of(self, namespace: str) -> NamespacePolicy:
        """The namespacePolicy of tenant ``namespace``: its ``namespacePolicies`` entry, else ``namespacePolicy``."""
        return self.namespace_policies.get(namespace, self.namespace_policy)

    def namespace_names(self) -> list[str]:
        """Every tenant namespace of the layout: inference's, then training's, in config order."""
        return [*self.inference.namespaces, *self.training.namespaces]
    namespace_label: LabelKey = "kueue.x-k8s.io/queue"
    """The label key the namespaceSelectors match, besides the pinned kubernetes.io/metadata.name. Default
    kueue.x-k8s.io/queue."""
    queueing_strategy: Optional[QueueingStrategy] = None
    """StrictFIFO or BestEffortFIFO on both ClusterQueues. Omitted: Kueue's (BestEffortFIFO)."""
    stop_policy: Optional[StopPolicy] = None
    """None, Hold or HoldAndDrain on both ClusterQueues. Omitted: Kueue's (None)."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of both ClusterQueues (a queue's own flavorFungibility wins). Omitted: Kueue's
    defaults (whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor), not written."""
    cohort_flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The Cohort object's nominalQuota per ResourceFlavor (instead of cohortQuota; only nominalQuota is used).
    Omitted: cohortQuota."""
    inference: InferenceQueueSettings
    """The inference side: owns the quota, never borrows, reclaims with Any."""
    training: TrainingQueueSettings
    """The training side: owns nothing, borrows the idle inference quota."""

