"""The simulated cluster: the workloads (Kueue's workload.Info) and the admitted ones per ClusterQueue on the quota
tree (Kueue's scheduler cache and its Snapshot).

Upstream: kubernetes-sigs/kueue v0.19.2 pkg/workload/workload.go (Info, TotalRequests), pkg/cache/scheduler/
snapshot.go (AddWorkload, RemoveWorkload, SimulateWorkloadUsageRemoval).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Optional

from kueue_cohorts.whatif.kueue import FlavorResource, KueueSetup, amount
from kueue_cohorts.whatif.quota import CQNode, Tree, add_usage, remove_usage
from kueue_cohorts.whatif.trace import TraceWorkload


@dataclass(eq=False)
class Workload:
    """One workload of the trace while it is simulated.

    spec: its trace line. cq: the ClusterQueue of its LocalQueue (None: no such LocalQueue, never admitted).
    priority: its WorkloadPriorityClass value (0 without one). requests: per pod, in Kueue's units, without the
    resources Kueue leaves out (excludeResourcePrefixes). While admitted: `flavors` (resource -> flavor), `usage`
    ((flavor, resource) -> amount) and `reserved_at` (when its quota was reserved: the candidate ordering's "admitted
    more recently first"); `evicted` from its preemption until its quota is released.
    Work: `saved` seconds of work kept by checkpoints, `started_at` of the current run.
    equivalence: its scheduling equivalence class (`scheduling_hash`), computed once when the workload is made, as
    Kueue keeps it on the workload (workload.Info.SchedulingHash, set by UpdateSchedulingHash when the object
    changes, never per scheduling attempt: pkg/workload/workload.go l.269 and l.350, pkg/cache/queue/manager.go
    l.534, v0.19.2).
    """

    spec: TraceWorkload
    cq: Optional[str]
    priority: int
    requests: dict[str, int]
    equivalence: tuple[object, ...] = ()
    flavors: dict[str, str] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    reserved_at: Optional[float] = None
    evicted: bool = False
    started_at: Optional[float] = None
    saved: float = 0.0
    finished: bool = False
    victims: tuple[Workload, ...] = ()
    evicted_at: Optional[float] = None
    run: int = 0

    name: str = field(init=False)
    """The trace name."""
    created: float = field(init=False)
    """Its creation time (the FIFO timestamp: Kueue workload.Ordering GetQueueOrderTimestamp with
    PrioritySortingWithinCohort on): the trace's submitSeconds."""
    count: int = field(init=False)
    """Pod count."""

    def __post_init__(self) -> None:
        # plain attributes, not properties: the scheduler reads them millions of times in a week of 10,000
        self.name = self.spec.name
        self.created = self.spec.submit_seconds
        self.count = self.spec.pods

    def total(self, resource: str) -> int:
        """Total request of `resource` over its pods (TotalRequests)."""
        return self.requests.get(resource, 0) * self.count

    def uses(self, frs: Iterable[FlavorResource]) -> bool:
        """classical.WorkloadUsesResources: whether its admission uses any of `frs`."""
        return any(self.flavors.get(resource) == flavor for flavor, resource in frs)


def scheduling_hash(spec: TraceWorkload, priority: int, requests: dict[str, int]) -> tuple[object, ...]:
    """The scheduling equivalence class of a workload (pkg/workload/workload.go computeSchedulingHash, v0.19.2:
    priority, pod count, per-pod requests, the pods' nodeSelector and tolerations): workloads of one class fit or
    do not fit alike, so Kueue parks them together. A tuple, equal for equal classes (Kueue: a hash string)."""
    return (priority, spec.pods, tuple(sorted(requests.items())), tuple(sorted(spec.node_selector.items())),
            tuple(t.model_dump_json() for t in spec.tolerations))


@lru_cache(maxsize=4096)
def request_amount(resource: str, quantity: str) -> int:
    """`whatif.kueue.amount` of one per-pod request of a trace line (a quantity text, as `whatif.trace` validated
    it), remembered: a trace repeats a few request texts over all its workloads, and parsing them was a tenth of
    the simulation of 100,000 workloads. Raises ValueError as `amount` does."""
    return amount(resource, quantity)


def workload_of(spec: TraceWorkload, setup: KueueSetup) -> Workload:
    """The simulated Workload of a trace line: its ClusterQueue, priority value and per-pod requests in Kueue's
    units (resources matching excludeResourcePrefixes dropped, pkg/workload/resources.go).

    cq is None (never admitted) when its LocalQueue does not exist, or when its priorityClass names no
    WorkloadPriorityClass: Kueue's job reconciler then never creates the Workload (pkg/util/priority/priority.go
    GetPriorityFromWorkloadPriorityClass returns the not-found error, pkg/controller/jobframework/reconciler.go,
    v0.19.2). `whatif.compare.unknown_references` refuses a trace that names either in no configuration at all."""
    requests = {r: request_amount(r, q) for r, q in spec.requests.items()
                if not r.startswith(setup.excluded_prefixes)}
    priority = setup.priorities.get(spec.priority_class, 0) if spec.priority_class else 0
    cq = setup.queue_of(spec.namespace, spec.local_queue)
    if spec.priority_class and spec.priority_class not in setup.priorities:
        cq = None  # Kueue never creates its Workload (GetPriorityFromWorkloadPriorityClass: not found)
    return Workload(spec=spec, cq=cq, priority=priority, requests=requests,
                    equivalence=scheduling_hash(spec, priority, requests))


class Cluster:
    """The quota tree with the admitted workloads of every ClusterQueue (including evicted ones until their quota
    is released): what Kueue's scheduler snapshot holds."""

    def __init__(self, setup: KueueSetup):
        self.setup = setup
        self.tree = Tree(setup)
        self.admitted: dict[str, dict[str, Workload]] = {name: {} for name in self.tree.cqs}
        self.priorities: dict[str, Counter[int]] = {name: Counter() for name in self.tree.cqs}

    def cq(self, name: str) -> CQNode:
        """The ClusterQueue node `name`."""
        return self.tree.cqs[name]

    def add(self, wl: Workload) -> None:
        """Snapshot.AddWorkload: account `wl`'s usage in its ClusterQueue (and up the tree)."""
        assert wl.cq is not None
        node = self.tree.cqs[wl.cq]
        for fr, value in wl.usage.items():
            add_usage(node, fr, value)
        self.admitted[wl.cq][wl.name] = wl
        self.priorities[wl.cq][wl.priority] += 1

    def remove(self, wl: Workload) -> None:
        """Snapshot.RemoveWorkload: take `wl`'s usage back."""
        assert wl.cq is not None
        node = self.tree.cqs[wl.cq]
        for fr, value in wl.usage.items():
            remove_usage(node, fr, value)
        del self.admitted[wl.cq][wl.name]
        counts = self.priorities[wl.cq]
        counts[wl.priority] -= 1
        if not counts[wl.priority]:
            del counts[wl.priority]

    def lowest_priority(self, cq: str) -> Optional[int]:
        """The lowest priority among the workloads admitted in ClusterQueue `cq` (None: none admitted): kept as
        they are added and removed, so that a preemption search asks it instead of walking them."""
        return min(self.priorities[cq], default=None)

    def add_usage(self, cq: str, usage: dict[FlavorResource, int]) -> None:
        """ClusterQueueSnapshot.AddUsage of an assignment not yet admitted (within one scheduling cycle)."""
        node = self.tree.cqs[cq]
        for fr, value in usage.items():
            add_usage(node, fr, value)

    def remove_usage(self, cq: str, usage: dict[FlavorResource, int]) -> None:
        """ClusterQueueSnapshot.RemoveUsage."""
        node = self.tree.cqs[cq]
        for fr, value in usage.items():
            remove_usage(node, fr, value)
