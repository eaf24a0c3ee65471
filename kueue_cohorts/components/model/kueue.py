"""Typed Kueue objects (kueue.x-k8s.io/v1beta2) and their manifests, in Kueue's exact JSON field names.

Pure Python: no Pulumi here. Each spec's `manifest()` returns the dict the API server receives; `None` means "not
set" (for borrowingLimit and lendingLimit Kueue then means "unlimited" / "lend everything"), never 0.
Upstream: kubernetes-sigs/kueue apis/kueue/v1beta2/{clusterqueue,cohort,localqueue,resourceflavor,
workloadpriorityclass}_types.go at v0.19.2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL, ROLE_LABEL

API_VERSION = "kueue.x-k8s.io/v1beta2"


OWNER_ANNOTATION = "kueue-cohorts/owner"
"""Annotation on every Namespace a stack creates (namespacePolicy Create): the stack's `namespace_owner` name. The
namespace preflight (components/stack/preflight.py) lets a stack create, or keep creating, only a namespace that is
absent
or carries its own name here: the kubernetes provider 4.25.0 creates by server-side apply, which would take any
existing namespace over silently."""


def namespace_owner(project: str, stack: str) -> str:
    """The value of OWNER_ANNOTATION for stack `stack` of Pulumi project `project`: `<project>/<stack>` (unambiguous:
    neither a project nor a stack name may contain '/'). E.g. `kueue-cohorts/dev`."""
    return f"{project}/{stack}"


RELEASE_WAIT_S = 60
"""Seconds an `up` or `destroy` waits for Kueue to release a ClusterQueue or ResourceFlavor it deletes, before the
delete fails (the delete timeout of those resources, components/resources/). Kueue v0.19.2 holds both behind the
finalizer `kueue.x-k8s.io/resource-in-use` while they are in use (a workload reserves quota in the queue, a
ClusterQueue lists the flavor: pkg/controller/core/clusterqueue_controller.go, resourceflavor_controller.go) and
releases them within a reconcile once nothing does; without a bound, the kubernetes provider would wait its own
default. `deploy` checks the holders before it starts (deploy/queue_holders.py); this bounds the race after."""

PATCH_FORCE = {"pulumi.com/patchForce": "true"}
"""pulumi-kubernetes annotation: on server-side apply, take back fields another manager (kubectl edit) changed, so
that `pulumi up` restores a hand-edited quota instead of failing on a field conflict. The stack owns these objects."""


def _metadata(name: str, labels: Mapping[str, str], namespace: Optional[str] = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {MANAGED_BY_LABEL: MANAGED_BY, **labels},
        "annotations": dict(PATCH_FORCE),
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """`resourceGroups[].flavors[].resources[]`: one resource's quota in one flavor.

    nominal_quota: canonical quantity, required (>= 0). borrowing_limit: None = no limit (Kueue default);
    lending_limit: None = lend all idle nominal quota. Quantities are canonical Kubernetes quantity strings.
    """

    name: str
    nominal_quota: str
    borrowing_limit: Optional[str] = None
    lending_limit: Optional[str] = None

    def manifest(self) -> dict[str, Any]:
        """Return `{"name", "nominalQuota", ["borrowingLimit"], ["lendingLimit"]}`."""
        out: dict[str, Any] = {"name": self.name, "nominalQuota": self.nominal_quota}
        if self.borrowing_limit is not None:
            out["borrowingLimit"] = self.borrowing_limit
        if self.lending_limit is not None:
            out["lendingLimit"] = self.lending_limit
        return out


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    """`resourceGroups[].flavors[]`: the quotas of one ResourceFlavor, in coveredResources order."""

    flavor: str
    resources: tuple[ResourceQuota, ...]

    def manifest(self) -> dict[str, Any]:
        """Return `{"name": <flavor>, "resources": [...]}`."""
        return {"name": self.flavor, "resources": [r.manifest() for r in self.resources]}


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """`spec.resourceGroups[]`: coveredResources and, per flavor, a quota for each of them (same order)."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]

    def manifest(self) -> dict[str, Any]:
        """Return `{"coveredResources": [...], "flavors": [...]}`. Raises ValueError if a flavor's resources differ
        from coveredResources (Kueue's CEL rule: same resources, same count)."""
        for flavor in self.flavors:
            if tuple(r.name for r in flavor.resources) != self.covered_resources:
                raise ValueError(f"flavor {flavor.flavor} must list exactly {self.covered_resources}")
        return {"coveredResources": list(self.covered_resources), "flavors": [f.manifest() for f in self.flavors]}

    def quota(self, resource: str, flavor: Optional[str] = None) -> ResourceQuota:
        """The ResourceQuota of `resource` in `flavor` (default: the first flavor). Raises KeyError."""
        for fq in self.flavors:
            if flavor is None or fq.flavor == flavor:
                for rq in fq.resources:
                    if rq.name == resource:
                        return rq
        raise KeyError(resource)


@dataclass(frozen=True, slots=True)
class BorrowWithinCohortSpec:
    """`spec.preemption.borrowWithinCohort`: {policy: Never|LowerPriority, maxPriorityThreshold: int32 | None}."""

    policy: str
    max_priority_threshold: Optional[int] = None

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy}
        if self.max_priority_threshold is not None:
            out["maxPriorityThreshold"] = self.max_priority_threshold
        return out


@dataclass(frozen=True, slots=True)
class PreemptionSpec:
    """`spec.preemption`: reclaimWithinCohort (Never|LowerPriority|Any), borrowWithinCohort, withinClusterQueue."""

    reclaim_within_cohort: str
    within_cluster_queue: str
    borrow_within_cohort: Optional[BorrowWithinCohortSpec] = None

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reclaimWithinCohort": self.reclaim_within_cohort}
        if self.borrow_within_cohort is not None:
            out["borrowWithinCohort"] = self.borrow_within_cohort.manifest()
        out["withinClusterQueue"] = self.within_cluster_queue
        return out


@dataclass(frozen=True, slots=True)
class FlavorFungibilitySpec:
    """`spec.flavorFungibility`: whenCanBorrow and whenCanPreempt, each MayStopSearch or TryNextFlavor (Kueue's
    defaults: MayStopSearch and TryNextFlavor). Both are written when the stack sets the block."""

    when_can_borrow: str
    when_can_preempt: str

    def manifest(self) -> dict[str, Any]:
        """Return `{"whenCanBorrow", "whenCanPreempt"}`."""
        return {"whenCanBorrow": self.when_can_borrow, "whenCanPreempt": self.when_can_preempt}


@dataclass(frozen=True, slots=True)
class ResourceFlavorSpec:
    """ResourceFlavor (cluster-scoped): nodeLabels, nodeTaints, tolerations (each at most 8)."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Mapping[str, Any], ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()

    def manifest(self) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if self.node_labels:
            spec["nodeLabels"] = dict(self.node_labels)
        if self.node_taints:
            spec["nodeTaints"] = [dict(t) for t in self.node_taints]
        if self.tolerations:
            spec["tolerations"] = [dict(t) for t in self.tolerations]
        return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": _metadata(self.name, {}), "spec": spec}


@dataclass(frozen=True, slots=True)
class ClusterQueueSpec:
    """ClusterQueue (cluster-scoped).

    namespace_selector: a LabelSelector dict; never `{}` (which admits every namespace); None is rejected too,
    since Kueue then admits no namespace at all. role: value of the `kueue-cohorts/role` label. admission_checks:
    AdmissionCheck names written as `spec.admissionChecksStrategy.admissionChecks[].name` for every flavor (a
    MultiKueue check must not name onFlavors: Kueue then makes the queue inactive,
    MultiKueueAdmissionCheckAppliedPerFlavor); empty: the field is not written.
    """

    name: str
    cohort_name: str
    resource_groups: tuple[ResourceGroup, ...]
    preemption: PreemptionSpec
    namespace_selector: Mapping[str, Any]
    role: str
    queueing_strategy: Optional[str] = None
    stop_policy: Optional[str] = None
    flavor_fungibility: Optional[FlavorFungibilitySpec] = None
    admission_checks: tuple[str, ...] = ()

    def manifest(self) -> dict[str, Any]:
        """Return the ClusterQueue manifest. Raises ValueError on an empty namespaceSelector."""
        if not self.namespace_selector:
            raise ValueError(f"ClusterQueue {self.name}: an empty namespaceSelector admits every namespace")
        spec: dict[str, Any] = {
            "cohortName": self.cohort_name,
            "namespaceSelector": dict(self.namespace_selector),
            "resourceGroups": [g.manifest() for g in self.resource_groups],
            "preemption": self.preemption.manifest(),
        }
        if self.queueing_strategy is not None:
            spec["queueingStrategy"] = self.queueing_strategy
        if self.stop_policy is not None:
            spec["stopPolicy"] = self.stop_policy
        if self.flavor_fungibility is not None:
            spec["flavorFungibility"] = self.flavor_fungibility.manifest()
        if self.admission_checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in self.admission_checks]}
        return {
            "apiVersion": API_VERSION,
            "kind": "ClusterQueue",
            "metadata": _metadata(self.name, {ROLE_LABEL: self.role}),
            "spec": spec,
        }

    def quota(self, resource: str, flavor: Optional[str] = None) -> ResourceQuota:
        """The ResourceQuota for `resource` in the first group that covers it, in `flavor` (default: the group's
        first flavor). Raises KeyError."""
        for group in self.resource_groups:
            if resource in group.covered_resources:
                return group.quota(resource, flavor)
        raise KeyError(resource)

    def flavor_names(self) -> tuple[str, ...]:
        """The ResourceFlavor names of every resource group, in declared order, each once."""
        return tuple(dict.fromkeys(f.flavor for g in self.resource_groups for f in g.flavors))


@dataclass(frozen=True, slots=True)
class CohortSpec:
    """Cohort (cluster-scoped): its own nominalQuota is added on top of its ClusterQueues' as shared quota."""

    name: str
    resource_groups: tuple[ResourceGroup, ...]
    parent_name: Optional[str] = None

    def manifest(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"resourceGroups": [g.manifest() for g in self.resource_groups]}
        if self.parent_name is not None:
            spec["parentName"] = self.parent_name
        return {"apiVersion": API_VERSION, "kind": "Cohort", "metadata": _metadata(self.name, {}), "spec": spec}


@dataclass(frozen=True, slots=True)
class LocalQueueSpec:
    """LocalQueue (namespaced): points at a ClusterQueue (spec.clusterQueue is immutable)."""

    name: str
    namespace: str
    cluster_queue: ClusterQueueSpec

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": "LocalQueue",
            "metadata": _metadata(self.name, {}, self.namespace),
            "spec": {"clusterQueue": self.cluster_queue.name},
        }


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClassSpec:
    """WorkloadPriorityClass (cluster-scoped): top-level `value` (int32) and `description`; there is no spec."""

    name: str
    value: int
    description: str = ""

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": _metadata(self.name, {}),
            "value": self.value,
        }
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class NamespaceSpec:
    """A tenant Namespace and the label that its ClusterQueue's namespaceSelector matches."""

    name: str
    labels: Mapping[str, str]

    def manifest(self, owner: Optional[str] = None) -> dict[str, Any]:
        """The Namespace a stack creates (namespacePolicy Create): the managed-by and selector labels and, with
        `owner` (`namespace_owner(project, stack)`), the OWNER_ANNOTATION mark the namespace preflight reads. No
        patchForce: a Namespace is never taken back from another field manager."""
        metadata: dict[str, Any] = {"name": self.name, "labels": {MANAGED_BY_LABEL: MANAGED_BY, **self.labels}}
        if owner is not None:
            metadata["annotations"] = {OWNER_ANNOTATION: owner}
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}

    def patch_manifest(self) -> dict[str, Any]:
        """The part of an existing Namespace a stack owns under namespacePolicy Label: its selector labels only
        (registered as a server-side apply patch, `NamespacePatch`; deleting it relinquishes the labels)."""
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.name, "labels": dict(self.labels)}}
