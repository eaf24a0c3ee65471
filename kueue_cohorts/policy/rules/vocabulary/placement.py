"""Placing pods on nodes: what the kube-scheduler's NodeResourcesFit filter lets onto one node, and whether a scheduler
that places pods one at a time, on any node with room, can leave an admitted pod with no node.

Upstream (Kubernetes v1.36.3, the pinned version):
- `pkg/scheduler/framework/plugins/noderesources/fit.go` fitsRequest: a pod fits a node when, for cpu, memory,
  ephemeral-storage and every scalar (extended) resource it requests above 0, the request is at most the node's
  allocatable minus what the pods already bound there request. A resource the node does not report has allocatable 0
  ("Insufficient nvidia.com/gpu", Unresolvable when the request exceeds the allocatable itself). The pod's request is
  component-helpers PodRequests (`resources.pod_requests`). So a pod needs all of its requests on ONE node: quota
  summed over a pool says nothing about it.
- The default profile scores with NodeResourcesFit LeastAllocated (spread) and binds pods one by one as they come;
  nothing plans a packing. So the question for a set of pods that Kueue may admit together is not "does some
  packing exist" (first-fit-decreasing finds one) but "can some order of arrival and some choice of nodes, each with
  room at the time, leave one of them with no node": `blocking_placement` answers that exactly (a bounded search).

Nodes here are the per-node capacities of the stack's node pools (`node_pools.NodePool`, count x capacity). Only the
resources some pool declares are judged (`judged_resources`): a resource no pool lists has unknown capacity.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable, Mapping, Optional, Sequence, Union

from .node_pools import NodePool

Amounts = Mapping[str, Decimal]
_Key = Union[str, tuple[str, str]]
"""A quota the search spends: a resource of the whole quota, or ("own", resource) of the strandable shapes' own."""

SEARCH_BUDGET = 200_000
"""Steps the blocking search may take before it gives up (it then returns None: undecided, and the rule fails
closed). Stacks of a few pools and a few pod shapes take well under a thousand."""


def judged_resources(pools: Iterable[NodePool]) -> frozenset[str]:
    """The resources whose node capacity is known: those some pool declares."""
    return frozenset(r for pool in pools for r in pool.capacity)


def shortfall(requests: Amounts, capacity: Amounts, judged: frozenset[str]) -> dict[str, tuple[Decimal, Decimal]]:
    """resource -> (requested, allocatable) for each judged resource a pod requests above what one empty node of
    `capacity` has (NodeResourcesFit's Unresolvable reasons); empty when the pod fits the node."""
    return {r: (a, capacity.get(r, Decimal(0))) for r, a in requests.items()
            if a > 0 and r in judged and a > capacity.get(r, Decimal(0))}


def closest_node(requests: Amounts, pools: Sequence[NodePool], judged: frozenset[str]
                 ) -> tuple[Optional[NodePool], dict[str, tuple[Decimal, Decimal]]]:
    """The pool whose node a pod of `requests` fits, with {} (the first such pool); else the pool whose node misses
    the fewest resources (first on a tie) and what it misses; (None, {}) without pools."""
    best: Optional[tuple[NodePool, dict[str, tuple[Decimal, Decimal]]]] = None
    for pool in pools:
        short = shortfall(requests, pool.capacity, judged)
        if not short:
            return pool, {}
        if best is None or len(short) < len(best[1]):
            best = (pool, short)
    return best if best is not None else (None, {})


def per_node(requests: Amounts, capacity: Amounts, judged: frozenset[str]) -> Optional[int]:
    """How many pods of `requests` one empty node of `capacity` holds together (min over judged requested resources
    of floor(allocatable / request)); None when the pod requests none of the judged resources (no bound)."""
    counts = [int(capacity.get(r, Decimal(0)) // a) for r, a in requests.items() if a > 0 and r in judged]
    return min(counts) if counts else None


def homogeneous_capacity(requests: Amounts, pools: Sequence[NodePool], judged: frozenset[str]) -> Optional[int]:
    """How many pods of one shape the pools hold, placed in ANY order on any node with room: sum over nodes of
    `per_node` (identical pods fill every node to that count whatever the order, so this is exact for the
    one-at-a-time scheduler too); None when unbounded."""
    total = 0
    for pool in pools:
        count = per_node(requests, pool.capacity, judged)
        if count is None:
            return None
        total += pool.count * count
    return total


@dataclass(frozen=True)
class Shape:
    """One pod shape Kueue may admit into a flavor: `name` (for messages), its `requests` (resource -> base units)
    and `cap`, how many such pods can be admitted at once (the workload's replicas at its peak, plus its surge)."""

    name: str
    requests: Amounts
    cap: int


@dataclass(frozen=True)
class Blocking:
    """A witness that a one-at-a-time scheduler can strand an admitted pod: `placed` (per node: pool name and the
    shape names on it, nodes left empty omitted), then a pod of `stranded`, which fits no node's remaining room,
    although `placed` plus it fit the quota."""

    placed: tuple[tuple[str, tuple[str, ...]], ...]
    stranded: Shape


def _fits(requests: Amounts, room: Mapping[str, Decimal]) -> bool:
    return all(a <= room.get(r, Decimal(0)) for r, a in requests.items() if a > 0 and r in room)


def _fillings(shapes: Sequence[Shape], capacity: Amounts, judged: frozenset[str], target: Shape,
              limit: Sequence[int]) -> list[tuple[int, ...]]:
    """The minimal ways (counts per shape) to fill one empty node of `capacity` so that a pod of `target` no longer
    fits its remaining room, each count within `limit`; [()] meaning "already blocked" when the target does not fit
    the empty node."""
    room0 = {r: capacity.get(r, Decimal(0)) for r in judged}
    if not _fits(target.requests, room0):
        return [tuple(0 for _ in shapes)]
    out: list[tuple[int, ...]] = []

    def walk(i: int, counts: list[int], room: dict[str, Decimal]) -> None:
        if not _fits(target.requests, room):
            out.append(tuple(counts))
            return
        if i == len(shapes):
            return
        walk(i + 1, counts, room)  # none (more) of shape i
        shape = shapes[i]
        n = 0
        current = dict(room)
        while counts[i] + 1 <= limit[i] and _fits(shape.requests, current):
            for r, a in shape.requests.items():
                if r in current:
                    current[r] -= a
            counts[i] += 1
            n += 1
            if not _fits(target.requests, current):
                out.append(tuple(counts))
                break
            walk(i + 1, counts, dict(current))
        counts[i] -= n

    walk(0, [0] * len(shapes), room0)
    # keep the minimal ones (no other is below them in every count)
    minimal = [f for f in set(out) if not any(g != f and all(x <= y for x, y in zip(g, f, strict=True))
                                              for g in set(out))]
    return sorted(minimal)


def blocking_placement(shapes: Sequence[Shape], pools: Sequence[NodePool], quota: Amounts,
                       judged: frozenset[str], budget: int = SEARCH_BUDGET,
                       strandable: Optional[Sequence[bool]] = None,
                       own: Optional[Amounts] = None) -> tuple[Optional[Blocking], bool]:
    """Whether the kube-scheduler, binding the pods Kueue admits one at a time on any node with room (any order of
    arrival, any choice among nodes: LeastAllocated spreading included), can leave an admitted pod with no node.

    Args:
        shapes: the pod shapes that may be admitted into the flavor, each with its cap. pools: the flavor's nodes.
        quota: the flavor's nominalQuota per resource (what Kueue admits together; a resource not in it is not
            bounded by quota). judged: the resources whose node capacity is known.
        budget: search steps before giving up.
        strandable: per shape, whether a pod of it counts when stranded (default: every shape). The other shapes
            only fill nodes: another queue's pods (training borrowing inference's quota) that take room but whose own
            Pending pod breaks no promise of inference.
        own: with `strandable`, the quota the strandable shapes' pods share besides `quota` (inference's
            nominalQuota with borrowingLimit 0, within the cohort's `quota`): Kueue admits them only within it.
    Returns:
        (witness, decided): a Blocking when some pods within quota and caps can be placed so that one more admitted
        pod (within quota and its cap) fits no node; (None, True) when none can; (None, False) when the search ran
        out of budget (undecided).

    The search, exact: for each target shape t (one pod of it must still be admissible: its cap >= 1, t within
    quota), find a sub-multiset of the other admitted pods and a placement of it, node by node, that leaves every
    node without room for t, with the placed pods plus t within quota and caps. Per node it tries only the minimal
    blocking fillings (a larger filling blocks too but spends more quota); identical nodes of a pool take fillings in
    non-increasing order (symmetry); a branch stops when what the remaining nodes need at least (per resource, the
    cheapest filling of each) exceeds the quota left or what the caps still allow. Any placement the search finds is
    one the scheduler can reach: place its pods in any order (each node has room for what it holds), then the target
    arrives.
    """
    nodes: list[NodePool] = [pool for pool in pools for _ in range(pool.count)]
    steps = 0
    for t_index, target in enumerate(shapes):
        if strandable is not None and not strandable[t_index]:
            continue
        if target.cap < 1 or any(a > quota.get(r, a) or a > (own or {}).get(r, a) for r, a in target.requests.items()):
            continue
        if not any(_fits(target.requests, {r: p.capacity.get(r, Decimal(0)) for r in judged}) for p in pools):
            continue  # fits no empty node: the per-pod rule reports it
        limit = [s.cap - (1 if i == t_index else 0) for i, s in enumerate(shapes)]
        left: dict[_Key, Decimal] = {r: q - target.requests.get(r, Decimal(0)) for r, q in quota.items()}
        left.update({("own", r): q - target.requests.get(r, Decimal(0)) for r, q in (own or {}).items()})
        mine = [True] * len(shapes) if strandable is None else list(strandable)
        search = _Search(shapes, nodes, left, limit,
                         {id(p): _fillings(shapes, p.capacity, judged, target, limit) for p in pools},
                         budget - steps, mine)
        if search.need_after is None:
            continue
        result = search.run(0, {r: Decimal(0) for r in left}, [0] * len(shapes), None)
        steps += search.steps
        if result is None:
            return None, False
        if result:
            placed = tuple((node.name, tuple(name for i, c in enumerate(filling) for name in [shapes[i].name] * c))
                           for node, filling in zip(nodes, search.chosen, strict=True) if any(filling))
            return Blocking(placed, target), True
    return None, True


class _Search:
    """The node-by-node search of `blocking_placement` for one target shape (see there)."""

    def __init__(self, shapes: Sequence[Shape], nodes: Sequence[NodePool], left: Mapping[_Key, Decimal],
                 limit: Sequence[int], fillings: Mapping[int, list[tuple[int, ...]]], budget: int,
                 mine: Sequence[bool]) -> None:
        self.shapes, self.nodes, self.left, self.limit, self.fillings = shapes, nodes, left, limit, fillings
        self.mine = mine
        self.budget, self.steps = budget, 0
        self.chosen: list[tuple[int, ...]] = []
        cheapest = {key: {r: min((self.cost(f, r) for f in options), default=Decimal("Infinity")) for r in left}
                    for key, options in fillings.items()}
        need: list[dict[_Key, Decimal]] = [{r: Decimal(0) for r in left} for _ in range(len(nodes) + 1)]
        for k in range(len(nodes) - 1, -1, -1):
            need[k] = {r: need[k + 1][r] + cheapest[id(nodes[k])][r] for r in left}
        self.need_after: Optional[list[dict[_Key, Decimal]]] = None if any(
            v == Decimal("Infinity") for v in need[0].values()) else need

    def amount(self, i: int, key: _Key) -> Decimal:
        """What one pod of shape `i` spends of `key` (of an ("own", resource) only when the shape is strandable)."""
        if isinstance(key, tuple):
            return self.shapes[i].requests.get(key[1], Decimal(0)) if self.mine[i] else Decimal(0)
        return self.shapes[i].requests.get(key, Decimal(0))

    def cost(self, filling: Sequence[int], key: _Key) -> Decimal:
        """What `filling` (counts per shape) spends of `key`."""
        return sum((self.amount(i, key) * c for i, c in enumerate(filling)), Decimal(0))

    def run(self, k: int, spent: dict[_Key, Decimal], used: list[int], last: Optional[int]) -> Optional[bool]:
        """True when nodes k.. can all be blocked with what is left; None when the budget ran out."""
        assert self.need_after is not None
        self.steps += 1
        if self.steps > self.budget:
            return None
        if k == len(self.nodes):
            return True
        if any(spent[r] + self.need_after[k][r] > self.left[r] for r in self.left):
            return False
        if any(self.need_after[k][r] > sum((self.amount(i, r) * (self.limit[i] - used[i])
                                            for i in range(len(self.shapes))), Decimal(0)) for r in self.left):
            return False  # the pods the caps still allow cannot block the remaining nodes
        same_pool = k > 0 and self.nodes[k - 1] is self.nodes[k]
        for j, filling in enumerate(self.fillings[id(self.nodes[k])]):
            if same_pool and last is not None and j > last:
                break  # identical nodes: fillings in non-increasing index order
            if any(used[i] + c > self.limit[i] for i, c in enumerate(filling)):
                continue
            cost = {r: spent[r] + self.cost(filling, r) for r in self.left}
            if any(cost[r] > self.left[r] for r in self.left):
                continue
            self.chosen.append(filling)
            found = self.run(k + 1, cost, [u + c for u, c in zip(used, filling, strict=True)], j)
            if found is None or found:
                return found
            self.chosen.pop()
        return False
