"""ClusterQueue behaviour shared by both layouts: `preemption` (reclaimWithinCohort, withinClusterQueue,
borrowWithinCohort), WorkloadPriorityClasses and the training checkpoint plan.
"""
from __future__ import annotations

from typing import Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import (
    BorrowWithinCohortPolicy,
    DnsSubdomain,
    Model,
    Quantity,
    ReclaimWithinCohort,
    WithinClusterQueue,
)
from kueue_cohorts.components.settings.runtime import (
    OptionalWholeNumber,
    WholeNumber,
)


class BorrowWithinCohort(Model):
    """`preemption.borrowWithinCohort`: preempt while borrowing, only below maxPriorityThreshold (int32)."""

    policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    """Never or LowerPriority: whether a borrowing workload may preempt in the cohort (needs reclaimWithinCohort
    other than Never)."""
    max_priority_threshold: OptionalWholeNumber = Field(default=None, ge=-(2**31), lt=2**31)
    """Only workloads at or below this priority (int32) may be preempted while borrowing. Omitted: no threshold."""


class Preemption(Model):
    """ClusterQueue `spec.preemption`. Defaults here are our guide's, not Kueue's (Kueue defaults to Never)."""

    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.ANY
    """ClusterQueue spec.preemption.reclaimWithinCohort: Never, LowerPriority or Any. Default Any (the guide's;
    Kueue's own default is Never). Inference must use Any."""
    borrow_within_cohort: Optional[BorrowWithinCohort] = None
    """spec.preemption.borrowWithinCohort. Omitted: Kueue's default (Never)."""
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    """spec.preemption.withinClusterQueue: Never, LowerPriority or LowerOrNewerEqualPriority. Default
    LowerPriority."""


class PriorityClass(Model):
    """A WorkloadPriorityClass: `value` (int32, higher wins) and `description` (at most 2048 characters)."""

    name: DnsSubdomain
    """WorkloadPriorityClass name (DNS-1123 subdomain)."""
    value: WholeNumber = Field(ge=-(2**31), lt=2**31)
    """Priority (int32, higher wins). Training must stay below inference."""
    description: str = Field(default="", max_length=2048)
    """Free text (at most 2048 characters)."""


class CheckpointSettings(Model):
    """The ReadWriteMany PVC that training checkpoints go to, one per training namespace."""

    claim_name: DnsSubdomain
    """Name of the ReadWriteMany PVC made in every training namespace."""
    storage_class_name: Optional[str] = None
    """A StorageClass that supports ReadWriteMany (cephfs, nfs). Omitted: the cluster's default class."""
    size: Quantity = "5Gi"
    """Requested storage (Kubernetes quantity). Default 5Gi."""
    retain_on_delete: bool = True
    """Keep the PVC and its checkpoints when the stack is destroyed. Default true."""

