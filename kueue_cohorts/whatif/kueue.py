"""The Kueue objects the simulator reads (kueue.x-k8s.io/v1beta2), typed, and what it refuses to simulate.

`setup_from_objects` takes manifests as the API server holds them (a stack's rendered objects, or a live cluster's)
and the Kueue manager Configuration, and returns a frozen `KueueSetup`; anything the simulator does not model is
refused with its reason (`Unsupported`, every reason at once) rather than guessed:

- Fair Sharing (Configuration `fairSharing`, ClusterQueue/Cohort `spec.fairSharing`): admission order by dominant
  resource share and the fair-sharing preemption strategies (pkg/scheduler/fair_sharing_iterator.go,
  preemption.go fairPreemptions) are not modelled;
- Admission Fair Sharing (Configuration `admissionFairSharing`, ClusterQueue `spec.admissionScope`);
- Topology-Aware Scheduling (ResourceFlavor `spec.topologyName`);
- admission checks (ClusterQueue `spec.admissionChecks`, `spec.admissionChecksStrategy`): ProvisioningRequests and
  MultiKueue admit on an outside answer;
- concurrent admission (`spec.concurrentAdmissionPolicy`), `waitForPodsReady.blockAdmission` (admission waits on pod
  readiness) and feature gates set away from their v0.19.2 default when they change the scheduler's decisions.

Quantities are kept as Kueue keeps them (pkg/resources: `ResourceValue`): cpu in millicores, every other resource
in its base unit, rounded up. Upstream: kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/*_types.go,
pkg/cache/scheduler/{clusterqueue,cohort}.go.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from kueue_cohorts.components.settings.errors import Problem, problems_message
from kueue_cohorts.components.settings.quantity import parse as parse_quantity

FlavorResource = tuple[str, str]
"""(flavor, resource): Kueue's resources.FlavorResource."""

SCHEDULER_GATES: dict[str, bool] = {
    "PrioritySortingWithinCohort": True, "FlavorFungibility": True, "PrioritizePreemptorWorkloads": False,
    "FlavorFungibilityPreserveScanProgress": True, "RecomputeAssignmentUponPreemptionTargetsOverlap": False,
    "SchedulerTimestampPreemptionBuffer": False, "PriorityBoost": False, "ConcurrentAdmission": False,
    "AdmissionFairSharing": True, "PartialAdmission": True, "QuotaCheckStrategy": True,
}
"""Kueue 0.19.2 feature gates that change what the scheduler decides, with their default (pkg/features/
kube_features.go). The simulator follows the defaults; a stack that sets one of them otherwise is refused
(AdmissionFairSharing, PartialAdmission and QuotaCheckStrategy matter only with settings the simulator refuses or
never sees, so their value does not matter)."""

_GATES_THAT_MATTER = {name for name in SCHEDULER_GATES
                      if name not in ("AdmissionFairSharing", "PartialAdmission", "QuotaCheckStrategy")}


GPU_NAMES = ("nvidia.com/gpu", "amd.com/gpu", "intel.com/gpu", "nvidia.com/gpualloc")
"""Device-count resources, in the order `gpu_resource` prefers them (nvidia.com/gpualloc: HAMi's device count)."""


def gpu_resource(resources: Sequence[str]) -> str:
    """The resource that counts GPUs among `resources`: the first of GPU_NAMES present, else the first resource
    ending in `/gpu`, else the first extended resource (with a `/`), else the first one ("" for none)."""
    for name in GPU_NAMES:
        if name in resources:
            return name
    for name in resources:
        if name.endswith("/gpu"):
            return name
    return next((name for name in resources if "/" in name), resources[0] if resources else "")


def amount(resource: str, value: Any) -> int:
    """A quantity as Kueue counts it (pkg/resources ResourceValue, v0.19.2): millicores for `cpu`, the base unit
    (bytes, devices) rounded up for every other resource. Raises ValueError for a text that is no quantity."""
    number = parse_quantity(value)
    return math.ceil(number * 1000) if resource == "cpu" else math.ceil(number)


@dataclass(frozen=True, slots=True)
class Quota:
    """One resource's quota in one flavor of a ClusterQueue or Cohort: nominalQuota, borrowingLimit (None: no
    limit) and lendingLimit (None: lend everything), in Kueue's units (`amount`)."""

    nominal: int = 0
    borrowing_limit: Optional[int] = None
    lending_limit: Optional[int] = None


@dataclass(frozen=True, slots=True)
class Flavor:
    """A ResourceFlavor: its nodeLabels and the NoSchedule/NoExecute taints a pod must tolerate."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """`spec.resourceGroups[]`: the covered resources and the flavors in the order Kueue tries them."""

    covered: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Preemption:
    """`spec.preemption` with Kueue's defaults (Never, LowerPriority for withinClusterQueue is ours; Kueue's own
    default is Never for all three)."""

    reclaim_within_cohort: str = "Never"
    within_cluster_queue: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: Optional[int] = None


@dataclass(frozen=True, slots=True)
class Fungibility:
    """`spec.flavorFungibility` with Kueue's defaults (whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor,
    preference unset: BorrowingOverPreemption)."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: Optional[str] = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """A ClusterQueue as the scheduler sees it (pkg/cache/scheduler/clusterqueue_snapshot.go ClusterQueueSnapshot).

    cohort: spec.cohortName (None: alone). quotas: (flavor, resource) -> Quota for every flavor of every group.
    active: false when stopPolicy is Hold or HoldAndDrain (no new admission).
    """

    name: str
    cohort: Optional[str]
    groups: tuple[ResourceGroup, ...]
    quotas: Mapping[FlavorResource, Quota]
    preemption: Preemption = Preemption()
    fungibility: Fungibility = Fungibility()
    queueing_strategy: str = "BestEffortFIFO"
    active: bool = True

    def group_of(self, resource: str) -> Optional[ResourceGroup]:
        """The resource group covering `resource` (Kueue RGByResource), or None."""
        for group in self.groups:
            if resource in group.covered:
                return group
        return None


@dataclass(frozen=True, slots=True)
class Cohort:
    """A Cohort object (or one only named by a cohortName: no quota, no parent)."""

    name: str
    parent: Optional[str] = None
    quotas: Mapping[FlavorResource, Quota] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KueueSetup:
    """Everything the simulator needs from a cluster: flavors, ClusterQueues, Cohorts, LocalQueues
    ((namespace, name) -> ClusterQueue name), WorkloadPriorityClass values, and the resource prefixes Kueue leaves
    out of quota accounting (Configuration resources.excludeResourcePrefixes)."""

    flavors: Mapping[str, Flavor]
    cluster_queues: Mapping[str, ClusterQueue]
    cohorts: Mapping[str, Cohort]
    local_queues: Mapping[tuple[str, str], str]
    priorities: Mapping[str, int]
    excluded_prefixes: tuple[str, ...] = ()

    def queue_of(self, namespace: str, local_queue: str) -> Optional[str]:
        """The ClusterQueue of LocalQueue `local_queue` in `namespace`, or None when there is none."""
        return self.local_queues.get((namespace, local_queue))


class Unsupported(ValueError):
    """The objects use what the simulator does not model. `problems` lists every reason (object, field, value,
    why, what to do)."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        super().__init__(problems_message("the what-if simulator cannot model this stack", self.problems))


def _quotas(obj: Mapping[str, Any], where: str, problems: list[Problem]) -> tuple[tuple[ResourceGroup, ...],
                                                                                 dict[FlavorResource, Quota]]:
    groups, quotas = [], {}
    for g, group in enumerate((obj.get("spec") or {}).get("resourceGroups") or []):
        covered = tuple(str(r) for r in group.get("coveredResources") or [])
        flavors = []
        for f, flavor in enumerate(group.get("flavors") or []):
            flavors.append(str(flavor["name"]))
            for r, res in enumerate(flavor.get("resources") or []):
                name = str(res["name"])
                try:
                    quotas[(flavor["name"], name)] = Quota(
                        amount(name, res.get("nominalQuota", 0)),
                        None if res.get("borrowingLimit") is None else amount(name, res["borrowingLimit"]),
                        None if res.get("lendingLimit") is None else amount(name, res["lendingLimit"]))
                except ValueError as exc:
                    problems.append(Problem(f"{where} spec.resourceGroups[{g}].flavors[{f}].resources[{r}]", res,
                                            str(exc), "write Kubernetes quantities"))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups), quotas


_REFUSED_CQ_FIELDS = {
    "fairSharing": ("Fair Sharing weights are not modelled (admission order by dominant resource share, "
                    "pkg/scheduler/fair_sharing_iterator.go)", "remove spec.fairSharing to simulate"),
    "admissionChecks": ("admission checks admit on an outside answer (ProvisioningRequest, MultiKueue) the "
                        "simulator cannot know", "simulate without the checks"),
    "admissionChecksStrategy": ("admission checks admit on an outside answer the simulator cannot know",
                                "simulate without the checks"),
    "admissionScope": ("Admission Fair Sharing orders LocalQueues by their past usage, which is not modelled",
                       "remove spec.admissionScope to simulate"),
    "concurrentAdmissionPolicy": ("concurrent admission (workload variants per flavor) is not modelled",
                                  "remove spec.concurrentAdmissionPolicy to simulate"),
}


def _cluster_queue(obj: Mapping[str, Any], problems: list[Problem]) -> ClusterQueue:
    name = str(obj["metadata"]["name"])
    where = f"ClusterQueue {name}"
    spec = obj.get("spec") or {}
    for key, (rule, fix) in _REFUSED_CQ_FIELDS.items():
        if spec.get(key):
            problems.append(Problem(f"{where} spec.{key}", spec[key], rule, fix))
    groups, quotas = _quotas(obj, where, problems)
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}
    fung = spec.get("flavorFungibility") or {}
    stop = spec.get("stopPolicy") or "None"
    return ClusterQueue(
        name=name, cohort=spec.get("cohortName") or None, groups=groups, quotas=quotas,
        preemption=Preemption(pre.get("reclaimWithinCohort", "Never"), pre.get("withinClusterQueue", "Never"),
                              bwc.get("policy", "Never"), bwc.get("maxPriorityThreshold")),
        fungibility=Fungibility(fung.get("whenCanBorrow", "MayStopSearch"), fung.get("whenCanPreempt", "TryNextFlavor"),
                                fung.get("preference")),
        queueing_strategy=spec.get("queueingStrategy", "BestEffortFIFO"),
        active=stop == "None")


def _configuration(config: Optional[Mapping[str, Any]], problems: list[Problem]) -> tuple[str, ...]:
    """Refusals of the manager Configuration; returns resources.excludeResourcePrefixes."""
    if not config:
        return ()
    fair = config.get("fairSharing")
    if fair and fair.get("enable", True) is not False:
        problems.append(Problem("Configuration fairSharing", fair, "Fair Sharing is not modelled",
                                "simulate with fairSharing off"))
    if config.get("admissionFairSharing"):
        problems.append(Problem("Configuration admissionFairSharing", config["admissionFairSharing"],
                                "Admission Fair Sharing is not modelled", "simulate without it"))
    wait = config.get("waitForPodsReady") or {}
    if wait.get("blockAdmission"):
        problems.append(Problem("Configuration waitForPodsReady.blockAdmission", True,
                                "admission that waits for every admitted workload's pods to be ready is not "
                                "modelled (pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded)",
                                "simulate with blockAdmission false"))
    for gate, value in (config.get("featureGates") or {}).items():
        if gate in _GATES_THAT_MATTER and bool(value) != SCHEDULER_GATES[gate]:
            problems.append(Problem(f"Configuration featureGates.{gate}", value,
                                    f"the simulator follows Kueue 0.19.2's default ({SCHEDULER_GATES[gate]}) of this "
                                    "scheduler gate", "simulate with the gate at its default"))
    if (config.get("resources") or {}).get("transformations"):
        problems.append(Problem("Configuration resources.transformations", config["resources"]["transformations"],
                                "resource transformations are not modelled", "simulate without them"))
    return tuple(str(p) for p in (config.get("resources") or {}).get("excludeResourcePrefixes") or [])


def setup_from_objects(objects: Iterable[Mapping[str, Any]],
                       configuration: Optional[Mapping[str, Any]] = None) -> KueueSetup:
    """The KueueSetup of `objects` (manifests: ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
    WorkloadPriorityClass of kueue.x-k8s.io; every other kind is ignored) and the manager `configuration`.

    Raises:
        Unsupported: listing every object and field the simulator does not model (see the module doc).
    """
    problems: list[Problem] = []
    flavors: dict[str, Flavor] = {}
    cqs: dict[str, ClusterQueue] = {}
    cohorts: dict[str, Cohort] = {}
    lqs: dict[tuple[str, str], str] = {}
    priorities: dict[str, int] = {}
    for obj in objects:
        if not str(obj.get("apiVersion", "")).startswith("kueue.x-k8s.io/"):
            continue
        kind, meta, spec = obj.get("kind"), obj.get("metadata") or {}, obj.get("spec") or {}
        name = str(meta.get("name"))
        if kind == "ResourceFlavor":
            if spec.get("topologyName"):
                problems.append(Problem(f"ResourceFlavor {name} spec.topologyName", spec["topologyName"],
                                        "Topology-Aware Scheduling is not modelled",
                                        "simulate without topologyName"))
            taints = tuple(t for t in spec.get("nodeTaints") or [] if t.get("effect") in ("NoSchedule", "NoExecute"))
            flavors[name] = Flavor(name, dict(spec.get("nodeLabels") or {}), taints)
        elif kind == "ClusterQueue":
            cqs[name] = _cluster_queue(obj, problems)
        elif kind == "Cohort":
            if spec.get("fairSharing"):
                problems.append(Problem(f"Cohort {name} spec.fairSharing", spec["fairSharing"],
                                        "Fair Sharing weights are not modelled", "remove spec.fairSharing"))
            _, quotas = _quotas(obj, f"Cohort {name}", problems)
            cohorts[name] = Cohort(name, spec.get("parentName") or None, quotas)
        elif kind == "LocalQueue":
            lqs[(str(meta.get("namespace")), name)] = str(spec.get("clusterQueue"))
        elif kind == "WorkloadPriorityClass":
            priorities[name] = int(obj.get("value", 0))
    for cq in cqs.values():
        if cq.cohort and cq.cohort not in cohorts:
            cohorts[cq.cohort] = Cohort(cq.cohort)
        for group in cq.groups:
            for flavor in group.flavors:
                if flavor not in flavors:
                    problems.append(Problem(f"ClusterQueue {cq.name} spec.resourceGroups", flavor,
                                            "names a ResourceFlavor that does not exist (Kueue keeps the queue "
                                            "inactive)", "add the ResourceFlavor"))
    for cohort in list(cohorts.values()):
        if cohort.parent and cohort.parent not in cohorts:
            cohorts[cohort.parent] = Cohort(cohort.parent)
    for name in cohorts:
        seen, node = [name], cohorts[name].parent
        while node is not None and node not in seen:
            seen.append(node)
            node = cohorts[node].parent
        if node is not None:
            problems.append(Problem(f"Cohort {name} spec.parentName", cohorts[name].parent,
                                    f"the cohorts form a cycle ({' -> '.join([*seen, node])}): Kueue admits nothing "
                                    "in them", "break the cycle"))
    excluded = _configuration(configuration, problems)
    if problems:
        raise Unsupported(problems)
    return KueueSetup(flavors, cqs, cohorts, lqs, priorities, excluded)
