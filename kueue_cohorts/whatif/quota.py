"""Quota and usage over a Cohort tree, as Kueue's scheduler cache keeps them.

A port of kubernetes-sigs/kueue v0.19.2 pkg/cache/scheduler/resource_node.go (resourceNode, LocalAvailable,
available, potentialAvailable, addUsage, removeUsage, QuantitiesFitInQuota, IsWithinNominalInResources,
accumulateFromChild) and the parts of clusterqueue_snapshot.go / cohort_snapshot.go the scheduler calls
(Available, PotentialAvailable, Borrowing, BorrowingWith), plus
pkg/scheduler/preemption/classical/hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits.

Every node (ClusterQueue or Cohort) has its `quotas` per (flavor, resource), a `subtree` quota (its own nominal plus
what its children lend up, lendingLimit kept back) and its `usage` (for a Cohort: what its children use beyond the
quota they keep). Amounts are ints in Kueue's units; Python ints never overflow, so Kueue's saturating arithmetic
needs no twin here.
"""
from __future__ import annotations

from typing import Iterator, Mapping, Optional

from kueue_cohorts.whatif.kueue import ClusterQueue, FlavorResource, KueueSetup, Quota

_NO_QUOTA = Quota()


class Node:
    """A ClusterQueue or Cohort of the tree: `quotas`, `subtree`, `usage` (Kueue's resourceNode) and its parent."""

    __slots__ = ("name", "parent", "quotas", "subtree", "usage", "local", "potential")

    def __init__(self, name: str, quotas: Mapping[FlavorResource, Quota]):
        self.name = name
        self.parent: Optional[CohortNode] = None
        self.quotas = quotas
        self.subtree: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.local: dict[FlavorResource, int] = {}
        self.potential: dict[FlavorResource, int] = {}

    def quota(self, fr: FlavorResource) -> Quota:
        """The node's Quota of `fr` (nominal 0, no limits when it has none)."""
        return self.quotas.get(fr, _NO_QUOTA)

    def local_quota(self, fr: FlavorResource) -> int:
        """resourceNode.localQuota: the part of the subtree quota kept back from the parent by lendingLimit (read
        from `local`, computed once the tree is built: quotas do not change during a simulation)."""
        return self.local.get(fr, 0)

    def _compute_local_quota(self, fr: FlavorResource) -> int:
        lending = self.quota(fr).lending_limit
        return 0 if lending is None else max(0, self.subtree.get(fr, 0) - lending)

    def ancestors(self) -> Iterator[CohortNode]:
        """The parent, its parent, ... up to the root (Kueue PathParentToRoot)."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        """BorrowingWith: whether usage + `value` exceeds the node's quota (nominal for a ClusterQueue, subtree
        quota for a Cohort)."""
        return self.subtree.get(fr, 0) < self.usage.get(fr, 0) + value


class CohortNode(Node):
    """A Cohort: its child Cohorts and ClusterQueues."""

    __slots__ = ("child_cohorts", "child_cqs", "_height")

    def __init__(self, name: str, quotas: Mapping[FlavorResource, Quota]):
        super().__init__(name, quotas)
        self.child_cohorts: list[CohortNode] = []
        self.child_cqs: list[CQNode] = []
        self._height: Optional[int] = None

    def root(self) -> CohortNode:
        """The root of the tree."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def subtree_cqs(self) -> list[CQNode]:
        """Every ClusterQueue below (Kueue SubtreeClusterQueues: own children first, then each child Cohort's)."""
        out = list(self.child_cqs)
        for child in self.child_cohorts:
            out += child.subtree_cqs()
        return out

    def height(self) -> int:
        """getNodeHeight: the distance to the furthest leaf (a Cohort with ClusterQueues only: 1). The tree does
        not change during a simulation, so it is computed once (the first time it is asked)."""
        if self._height is None:
            best = min(len(self.child_cohorts) + len(self.child_cqs), 1)
            for child in self.child_cohorts:
                best = max(best, child.height() + 1)
            self._height = best
        return self._height


class CQNode(Node):
    """A ClusterQueue of the tree, with its spec."""

    __slots__ = ("spec",)

    def __init__(self, spec: ClusterQueue):
        super().__init__(spec.name, spec.quotas)
        self.spec = spec

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        """ClusterQueueSnapshot.BorrowingWith: nominalQuota < usage + `value`."""
        return self.quota(fr).nominal < self.usage.get(fr, 0) + value


def local_available(node: Node, fr: FlavorResource) -> int:
    """LocalAvailable: quota kept back by lendingLimit and not used, visible only below this node."""
    return max(0, node.local.get(fr, 0) - node.usage.get(fr, 0))


def _available(node: Node, fr: FlavorResource) -> int:
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = _available(node.parent, fr)
    borrowing = node.quota(fr).borrowing_limit
    if borrowing is not None:
        lq = node.local_quota(fr)
        stored_in_parent = node.subtree.get(fr, 0) - lq
        used_in_parent = max(0, node.usage.get(fr, 0) - lq)
        parent_available = min(stored_in_parent - used_in_parent + borrowing, parent_available)
    return local_available(node, fr) + parent_available


def available(node: Node, fr: FlavorResource) -> int:
    """ClusterQueueSnapshot.Available: what `node` can still take of `fr` without preempting, within its
    borrowingLimit and every ancestor's; 0 when in debt."""
    return max(0, _available(node, fr))


def potential_available(node: Node, fr: FlavorResource) -> int:
    """potentialAvailable: the most `node` could ever take of `fr` with nothing used anywhere (it depends on the
    quotas only: computed once per node and flavor-resource)."""
    cached = node.potential.get(fr)
    if cached is None:
        cached = node.potential[fr] = _potential_available(node, fr)
    return cached


def _potential_available(node: Node, fr: FlavorResource) -> int:
    if node.parent is None:
        return node.subtree.get(fr, 0)
    avail = node.local_quota(fr) + potential_available(node.parent, fr)
    borrowing = node.quota(fr).borrowing_limit
    if borrowing is not None:
        avail = min(node.subtree.get(fr, 0) + borrowing, avail)
    return avail


def add_usage(node: Node, fr: FlavorResource, value: int) -> None:
    """addUsage: add to the node, and bubble what exceeds its local quota up to the parent."""
    local = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + value
    if node.parent is not None and value > local:
        add_usage(node.parent, fr, value - local)


def remove_usage(node: Node, fr: FlavorResource, value: int) -> None:
    """removeUsage: remove from the node, and from the parent what it had stored there."""
    stored_in_parent = node.usage.get(fr, 0) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, 0) - value
    if stored_in_parent <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(value, stored_in_parent))


def quantities_fit_in_quota(node: Node, requests: Mapping[FlavorResource, int]
                            ) -> tuple[bool, dict[FlavorResource, int]]:
    """QuantitiesFitInQuota: whether `requests` fit the node's subtree quota, and what remains beyond the quota
    kept locally (asked of the parent next)."""
    fits = True
    remaining = {}
    subtree, usage, local = node.subtree, node.usage, node.local
    for fr, value in requests.items():
        used = usage.get(fr, 0)
        if subtree.get(fr, 0) < used + value:
            fits = False
        remaining[fr] = max(0, value - max(0, local.get(fr, 0) - used))  # local_available, inline
    return fits, remaining


def within_nominal(node: Node, frs: set[FlavorResource] | frozenset[FlavorResource]) -> bool:
    """IsWithinNominalInResources: usage within the subtree quota for every one of `frs`."""
    subtree, usage = node.subtree, node.usage
    for fr in frs:
        if subtree.get(fr, 0) < usage.get(fr, 0):
            return False
    return True


def lowest_subtree_that_fits(cq: CQNode, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits (hierarchical_preemption.go): the height of the lowest subtree that fits
    `value` more of `fr` (0: the queue's own nominal), and whether that subtree is smaller than the whole tree."""
    if not cq.borrowing_with(fr, value) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = value - local_available(cq, fr)
    for node in cq.ancestors():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= local_available(node, fr)
    return cq.parent.root().height(), False


class Tree:
    """The Cohort forest of a KueueSetup with the usage of the admitted workloads (Kueue's scheduler cache).

    `cqs` and `cohorts` by name. Quotas never change; `copy_usage` / `restore_usage` give the scheduler a snapshot
    to try things on (Kueue's Snapshot, SimulateWorkloadRemoval).
    """

    def __init__(self, setup: KueueSetup):
        self.cohorts: dict[str, CohortNode] = {name: CohortNode(name, c.quotas) for name, c in setup.cohorts.items()}
        self.cqs: dict[str, CQNode] = {name: CQNode(spec) for name, spec in setup.cluster_queues.items()}
        for name, cohort in setup.cohorts.items():
            if cohort.parent is not None:
                node = self.cohorts[name]
                node.parent = self.cohorts[cohort.parent]
                node.parent.child_cohorts.append(node)
        for cq in self.cqs.values():
            if cq.spec.cohort is not None:
                cq.parent = self.cohorts[cq.spec.cohort]
                cq.parent.child_cqs.append(cq)
        for cq in self.cqs.values():
            cq.subtree = {fr: q.nominal for fr, q in cq.quotas.items()}
        for cq in self.cqs.values():
            cq.local = {fr: cq._compute_local_quota(fr) for fr in cq.subtree}
        for root in [c for c in self.cohorts.values() if c.parent is None]:
            self._accumulate(root)
        self.nodes: list[Node] = [*self.cqs.values(), *self.cohorts.values()]

    def _accumulate(self, cohort: CohortNode) -> None:
        """updateCohortResourceNode + accumulateFromChild: subtree quota from the children, bottom up."""
        cohort.subtree = {fr: q.nominal for fr, q in cohort.quotas.items()}
        children: list[Node] = []
        for child_cohort in cohort.child_cohorts:
            self._accumulate(child_cohort)
            children.append(child_cohort)
        children += cohort.child_cqs
        for child in children:
            for fr, quota in child.subtree.items():
                cohort.subtree[fr] = cohort.subtree.get(fr, 0) + quota - child.local_quota(fr)
        cohort.local = {fr: cohort._compute_local_quota(fr) for fr in cohort.subtree}

    def copy_usage(self) -> list[dict[FlavorResource, int]]:
        """Every node's usage, copied (restore with `restore_usage`)."""
        return [dict(node.usage) for node in self.nodes]

    def restore_usage(self, saved: list[dict[FlavorResource, int]]) -> None:
        """Put back the usage `copy_usage` returned."""
        for node, usage in zip(self.nodes, saved, strict=True):
            node.usage = dict(usage)
