"""Kueue's classical preemption: which admitted workloads a pending one evicts, and why.

A port of kubernetes-sigs/kueue v0.19.2:
- pkg/scheduler/preemption/preemption.go: `classicalPreemptions` (remove candidates in order until the incoming
  workload fits, with and without borrowing, then `fillBackWorkloads` in reverse), `workloadFits`,
  `queueUnderNominalInResourcesNeedingPreemption`;
- pkg/scheduler/preemption/classical/candidate_generator.go: `NewCandidateIterator` (hierarchy, priority and
  same-queue candidates, each sorted, evicted ones first) and `candidateIsValid`;
- pkg/scheduler/preemption/classical/hierarchical_preemption.go: `classifyPreemptionVariant`,
  `isAboveBorrowingThreshold`, `collectCandidatesForHierarchicalReclaim`, `collectCandidatesInSubtree`,
  `IsBorrowingWithinCohortForbidden`;
- pkg/scheduler/preemption/common/ordering.go `CandidatesOrdering` (evicted first, other ClusterQueues before the
  preemptor's, lower priority first, admitted more recently first; the UID tie-break is the name here) and
  preemption_policy.go `SatisfiesPreemptionPolicy`;
- pkg/scheduler/preemption/preemption_oracle.go `SimulatePreemption` (what the flavor assigner asks).

Fair-sharing preemption (`fairPreemptions`) is not modelled: `whatif.kueue` refuses stacks with Fair Sharing.

Cheap where Kueue's answer is certain (issue 41: under a backlog nearly every scheduling attempt asks for
candidates, per resource and then for the assignment, and nearly every search finds none): a ClusterQueue none of
whose admitted workloads the policy allows is not walked, a search without a single candidate returns at once, and
SimulatePreemption without candidates returns the borrowing height the flavor assigner computed on the same
snapshot. Each rests on an invariant tests/unit/whatif/test_whatif_oracle_shortcuts.py pins.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Iterator, Mapping, Optional

from kueue_cohorts.whatif.cluster import Cluster, Workload
from kueue_cohorts.whatif.kueue import FlavorResource
from kueue_cohorts.whatif.quota import (
    CohortNode,
    CQNode,
    available,
    lowest_subtree_that_fits,
    quantities_fit_in_quota,
    within_nominal,
)

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


class Variant(IntEnum):
    """classical.preemptionVariant."""

    NEVER = 0
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4

    def reason(self) -> str:
        """PreemptionReason: the Preempted condition's reason."""
        if self == Variant.WITHIN_CQ:
            return IN_CLUSTER_QUEUE
        if self == Variant.RECLAIM_WHILE_BORROWING:
            return IN_COHORT_RECLAIM_WHILE_BORROWING
        return IN_COHORT_RECLAMATION


@dataclass(frozen=True, slots=True)
class Target:
    """A workload to evict and the reason (preemption.Target)."""

    workload: Workload
    reason: str


def satisfies_policy(preemptor: Workload, candidate: Workload, policy: str) -> bool:
    """SatisfiesPreemptionPolicy: LowerPriority, LowerOrNewerEqualPriority (equal priority and created later), Any,
    Never."""
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        return lower or (preemptor.priority == candidate.priority and preemptor.created < candidate.created)
    return policy == "Any"


def may_satisfy_policy(preemptor_priority: int, lowest: int, policy: str) -> bool:
    """Whether `policy` can allow any candidate when the lowest priority among them is `lowest`: False means
    `satisfies_policy` is False for every one of them (LowerPriority needs a lower priority, LowerOrNewerEqualPriority
    at most an equal one, Never none), so their search is skipped."""
    if policy == "LowerPriority":
        return lowest < preemptor_priority
    if policy == "LowerOrNewerEqualPriority":
        return lowest <= preemptor_priority
    return policy == "Any"


def borrowing_forbidden(cq: CQNode) -> tuple[bool, Optional[int]]:
    """IsBorrowingWithinCohortForbidden: (policy is Never or unset, maxPriorityThreshold)."""
    p = cq.spec.preemption
    if p.borrow_within_cohort == "Never":
        return True, None
    return False, p.max_priority_threshold


def _above_threshold(candidate: int, incoming: int, threshold: Optional[int]) -> bool:
    """isAboveBorrowingThreshold."""
    if candidate >= incoming:
        return True
    return False if threshold is None else candidate > threshold


def candidate_order(preemptor_cq: str, now: float) -> Callable[[Workload], tuple[bool, bool, int, float, str]]:
    """CandidatesOrdering as a sort key: evicted first, other ClusterQueues first, lower priority first, admitted
    more recently first, then the name (Kueue: the UID, random on a real cluster)."""
    def key(wl: Workload) -> tuple[bool, bool, int, float, str]:
        reserved = wl.reserved_at if wl.reserved_at is not None else now
        return (not wl.evicted, wl.cq == preemptor_cq, wl.priority, -reserved, wl.name)
    return key


@dataclass(slots=True)
class _Candidate:
    wl: Workload
    lca: Optional[CohortNode]
    variant: Variant


class Preemptor:
    """Classical preemption over a Cluster snapshot for one incoming workload."""

    def __init__(self, cluster: Cluster, now: float):
        self.cluster = cluster
        self.now = now

    # -- candidates ----------------------------------------------------------------------------------------------
    def _classify(self, cq: CQNode, incoming: Workload, wl: Workload, frs: frozenset[FlavorResource],
                  advantage: bool) -> Variant:
        """classifyPreemptionVariant. Its two Never tests (the candidate uses none of `frs`; the policy does not
        allow it) are pure, so the cheaper one, the policy, is asked first: under a backlog of equal priorities
        nearly every candidate fails it."""
        policy = cq.spec.preemption.within_cluster_queue if wl.cq == cq.name else \
            cq.spec.preemption.reclaim_within_cohort
        if not satisfies_policy(incoming, wl, policy) or not wl.uses(frs):
            return Variant.NEVER
        if wl.cq == cq.name:
            return Variant.WITHIN_CQ
        if advantage:
            return Variant.HIERARCHICAL_RECLAIM
        forbidden, threshold = borrowing_forbidden(cq)
        if forbidden or _above_threshold(wl.priority, incoming.priority, threshold):
            return Variant.RECLAIM_WITHOUT_BORROWING
        return Variant.RECLAIM_WHILE_BORROWING

    def _from_cq(self, cq: CQNode, source: CQNode, incoming: Workload, frs: frozenset[FlavorResource],
                 lca: Optional[CohortNode], advantage: bool) -> list[_Candidate]:
        """getCandidatesFromCQ (in admission order: `targets` sorts every group by `candidate_order`, a total
        order). A queue whose lowest admitted priority (`Cluster.lowest_priority`) the policy cannot preempt
        (`may_satisfy_policy`) holds no candidate, and is not walked."""
        policy = cq.spec.preemption.within_cluster_queue if source is cq else cq.spec.preemption.reclaim_within_cohort
        lowest = self.cluster.lowest_priority(source.name)
        if lowest is None or not may_satisfy_policy(incoming.priority, lowest, policy):
            return []
        out = []
        for wl in self.cluster.admitted[source.name].values():
            variant = self._classify(cq, incoming, wl, frs, advantage)
            if variant != Variant.NEVER:
                out.append(_Candidate(wl, lca, variant))
        return out

    def _in_subtree(self, cq: CQNode, incoming: Workload, frs: frozenset[FlavorResource], current: CohortNode,
                    subtree_root: CohortNode, skip: Optional[CohortNode], advantage: bool,
                    result: list[_Candidate]) -> None:
        """collectCandidatesInSubtree."""
        for child in current.child_cohorts:
            if child is skip or within_nominal(child, frs):
                continue
            self._in_subtree(cq, incoming, frs, child, subtree_root, skip, advantage, result)
        for child_cq in current.child_cqs:
            if child_cq is cq:
                continue
            if not within_nominal(child_cq, frs):
                result += self._from_cq(cq, child_cq, incoming, frs, subtree_root, advantage)

    def _hierarchical(self, cq: CQNode, incoming: Workload, frs: frozenset[FlavorResource],
                      requests: Mapping[FlavorResource, int]) -> tuple[list[_Candidate], list[_Candidate]]:
        """collectCandidatesForHierarchicalReclaim: (hierarchy candidates, priority candidates)."""
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        if cq.parent is None or cq.spec.preemption.reclaim_within_cohort == "Never":
            return hierarchy, priority
        previous: Optional[CohortNode] = None
        advantage, remaining = quantities_fit_in_quota(cq, requests)
        for root in cq.ancestors():
            self._in_subtree(cq, incoming, frs, root, root, previous, advantage,
                             hierarchy if advantage else priority)
            if root.parent is None:
                break  # the top: what it would tell the next level up is asked by nobody
            fits, remaining = quantities_fit_in_quota(root, remaining)
            advantage = advantage or fits
            previous = root
        return hierarchy, priority

    def _valid(self, cq: CQNode, candidate: _Candidate, borrow: bool, frs: frozenset[FlavorResource]) -> bool:
        """candidateIsValid: evaluated on the snapshot as it is while targets are being removed."""
        if candidate.wl.cq == cq.name:
            return True
        if borrow and candidate.variant == Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        assert candidate.wl.cq is not None
        node = self.cluster.cq(candidate.wl.cq)
        if within_nominal(node, frs):
            return False
        for ancestor in node.ancestors():
            if ancestor is candidate.lca:
                break
            if within_nominal(ancestor, frs):
                return False
        return True

    # -- the heuristic -------------------------------------------------------------------------------------------
    def _fits(self, cq: CQNode, usage: Mapping[FlavorResource, int], borrow: bool) -> bool:
        """workloadFits."""
        for fr, value in usage.items():
            if not borrow and cq.borrowing_with(fr, value):
                return False
            if value > available(cq, fr):
                return False
        return True

    def targets(self, incoming: Workload, cq_name: str, frs: frozenset[FlavorResource],
                usage: Mapping[FlavorResource, int]) -> list[Target]:
        """classicalPreemptions: the workloads to evict so that `usage` of `incoming` fits in ClusterQueue
        `cq_name`, looking only at workloads that use `frs` (the flavor-resources that need preemption). [] when
        no set of allowed candidates makes room. The snapshot is left as it was."""
        cq = self.cluster.cq(cq_name)
        order = candidate_order(cq_name, self.now)
        same = (self._from_cq(cq, cq, incoming, frs, None, False)
                if cq.spec.preemption.within_cluster_queue != "Never" else [])
        hierarchy, priority = self._hierarchical(cq, incoming, frs, usage)
        if not same and not hierarchy and not priority:
            return []  # no candidate: no attempt below can remove anything
        groups = [sorted(g, key=lambda c: order(c.wl)) for g in (hierarchy, priority, same)]
        candidates = [c for g in groups for c in g if c.wl.evicted] + [c for g in groups for c in g if not c.wl.evicted]
        no_other = not hierarchy and not priority
        forbidden, _ = borrowing_forbidden(cq)
        under_nominal = all(cq.quota(fr).nominal > cq.usage.get(fr, 0) for fr in frs)
        if no_other or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrow in attempts:
            chosen: list[_Candidate] = []
            for candidate in candidates:
                if not self._valid(cq, candidate, borrow, frs):
                    continue
                self.cluster.remove(candidate.wl)
                chosen.append(candidate)
                if self._fits(cq, usage, borrow):
                    chosen = self._fill_back(cq, usage, chosen, borrow)
                    for c in chosen:
                        self.cluster.add(c.wl)
                    return [Target(c.wl, c.variant.reason()) for c in chosen]
            for c in chosen:
                self.cluster.add(c.wl)
        return []

    def _fill_back(self, cq: CQNode, usage: Mapping[FlavorResource, int], chosen: list[_Candidate],
                   borrow: bool) -> list[_Candidate]:
        """fillBackWorkloads: in reverse order, put back every target the incoming workload fits without (the
        last target stays); a removed one is replaced by the last element, as Kueue does."""
        for i in range(len(chosen) - 2, -1, -1):
            self.cluster.add(chosen[i].wl)
            if self._fits(cq, usage, borrow):
                chosen[i] = chosen[-1]
                chosen.pop()
            else:
                self.cluster.remove(chosen[i].wl)
        return chosen

    def simulate(self, incoming: Workload, cq_name: str, fr: FlavorResource, value: int,
                 height_now: int) -> tuple[str, int]:
        """PreemptionOracle.SimulatePreemption for one flavor-resource: ("NoCandidates" | "Preempt" | "Reclaim",
        the borrowing height after the preemptions). `height_now`: FindHeightOfLowestSubtreeThatFits of `value` on
        the snapshot as it is, which the flavor assigner has just computed (`lowest_subtree_that_fits`); Kueue
        computes it again when there is no candidate, on the same unchanged snapshot, so it is the answer then."""
        cq = self.cluster.cq(cq_name)
        found = self.targets(incoming, cq_name, frozenset({fr}), {fr: value})
        if not found:
            return "NoCandidates", height_now
        for t in found:
            self.cluster.remove(t.workload)
        borrow = lowest_subtree_that_fits(cq, fr, value)[0]
        for t in found:
            self.cluster.add(t.workload)
        if any(t.workload.cq == cq_name for t in found):
            return "Preempt", borrow
        return "Reclaim", borrow


def iter_targets(targets: list[Target]) -> Iterator[Workload]:
    """The workloads of `targets`, in order."""
    return (t.workload for t in targets)
