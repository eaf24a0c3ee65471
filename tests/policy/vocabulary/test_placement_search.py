"""The blocking search of `vocabulary/placement.py` (issue 42: the survivors of `blocking_placement` and `_Search` in
the mutation target rules-placement): which targets it judges, and how many steps it spends, in searches small
enough to count by hand.

The search (`blocking_placement`'s docstring) takes one step per call of `_Search.run` (a node reached) and gives up,
undecided, when its steps pass `budget`, summed over the targets. Its bound prunes a branch when the nodes left need
at least more quota than is left (the cheapest blocking filling of each node summed), and a target with a node it can
never block is not searched at all. Each case below says how many steps a search with that pruning takes; a search
without it takes more, so a budget of exactly that many decides and one less does not.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.placement import (
    Blocking,
    Shape,
    blocking_placement,
    closest_node,
    homogeneous_capacity,
    judged_resources,
    per_node,
    shortfall,
)

GPU = "nvidia.com/gpu"


def nodes(*pools: tuple[int, dict[str, str]]) -> Any:
    """Pools p0, p1, ... of (count, per-node capacity)."""
    parsed, problems = parse_node_pools([{"name": f"p{i}", "count": count, "labels": {}, "capacity": capacity}
                                         for i, (count, capacity) in enumerate(pools)])
    assert problems == []
    return parsed


def gpus(amount: int) -> dict[str, Decimal]:
    return {GPU: Decimal(amount)}


def search(shapes: list[Shape], pools: Any, quota: int, budget: int, **kwargs: Any) -> tuple[Any, bool]:
    return blocking_placement(shapes, pools, gpus(quota), judged_resources(pools), budget, **kwargs)


def test_a_search_pruned_at_its_root_takes_one_step():
    """1-GPU pods (cap 8) on three 2-GPU nodes, quota 5: after the target 4 GPUs are left, and blocking a node takes
    2 pods (2 GPUs), 6 for the three: the root is pruned, 1 step, no stranding. Without the bound (mutants of
    `_Search.__init__` that leave `need` at 0 or short of a node: 12, 28-30, 32, 33, 35, 36, 38, 39) the search
    places 2 + 2 and only then finds the third node out of quota: 3 steps. A budget of 1 decides; 0 does not (and
    a count from 1, `run` 5 `>=`, 4 `+= 2`, `blocking_placement` 4 and `_Search.__init__` 4, spends it sooner)."""
    shape = Shape("s", gpus(1), 8)
    pools = nodes((3, {GPU: "2"}))
    assert search([shape], pools, 5, 1) == (None, True)
    assert search([shape], pools, 5, 0) == (None, False)


def test_each_target_s_steps_count_against_one_budget():
    """Three such shapes, each a target pruned at its root: 3 steps in all. A budget of 3 decides, 2 leaves the
    third target undecided (mutants 100, `budget + steps`, 116, `steps = search.steps`, and 117, `-=`, give the
    later targets more)."""
    shapes = [Shape(name, gpus(1), 8) for name in ("a", "b", "c")]
    pools = nodes((3, {GPU: "2"}))
    assert search(shapes, pools, 5, 3) == (None, True)
    assert search(shapes, pools, 5, 2) == (None, False)


def test_a_target_with_a_node_it_can_never_block_is_not_searched():
    """One 1-GPU pod (cap 1: nothing else may be admitted beside it) on a (4 GPU, 8 cpu) node p0 and a 4-GPU node
    p1 without cpu, which the (1 GPU, 1 cpu) pod does not fit: p0 can never be filled, so no search runs, 0 steps,
    decided within a budget of 0 (mutants 43, the unblockable node not noticed, and 51, noticed only from the second
    node on: a search of 1 step)."""
    shape = Shape("s", {GPU: Decimal(1), "cpu": Decimal(1)}, 1)
    pools = nodes((1, {GPU: "4", "cpu": "8"}), (1, {GPU: "4"}))
    assert blocking_placement([shape], pools, {GPU: Decimal(8), "cpu": Decimal(8)}, judged_resources(pools),
                              0) == (None, True)


def test_the_step_count_is_not_reset_at_each_node():
    """3-GPU pods (cap 4, quota 12) on three 4-GPU nodes: one on each node (9 GPUs) and a fourth, within 12, fits
    none. The search reaches the three nodes and the end, 4 steps: a budget of 3 or 1 leaves it undecided (mutant
    `run` 2, `steps = 1`, never runs out) and 4 finds the stranding."""
    shape = Shape("s", gpus(3), 4)
    pools = nodes((3, {GPU: "4"}))
    assert search([shape], pools, 12, 1) == (None, False)
    assert search([shape], pools, 12, 3) == (None, False)
    assert search([shape], pools, 12, 4) == (Blocking((("p0", ("s",)), ("p0", ("s",)), ("p0", ("s",))), shape), True)


def test_which_targets_are_searched():
    """A target is searched only when one more pod of it may be admitted and fits some empty node; the others cost
    no step, so a budget of 0 decides (mutants 14, 16 and 21: a target over the quota, or over `own`, searched and
    pruned in one step; 10, a target of cap 0 searched, in one step that places nothing). Passing over one target
    does not stop the next (9 and 39: `break`), and a pool that does not report a judged resource has none of it
    (34, 36, 38: no default or 1)."""
    # beside 1-GPU pods that only fill nodes (not strandable), on an 8-GPU node
    filler = Shape("filler", gpus(1), 8)
    eight = nodes((1, {GPU: "8"}))
    assert search([Shape("big", gpus(5), 1), filler], eight, 4, 0, strandable=[True, False]) == (None, True)
    assert search([Shape("big", gpus(3), 1), filler], eight, 8, 0, strandable=[True, False],
                  own=gpus(2)) == (None, True)
    assert search([Shape("wide", gpus(4), 0), filler], eight, 8, 0, strandable=[True, False]) == (None, True)
    two = nodes((2, {GPU: "4"}))
    pair = Shape("pair", gpus(2), 2)
    # the first target is not strandable, or fits no empty node: the second is still searched
    four = Shape("four", gpus(4), 1)
    stranded = (Blocking((("p0", ("pair",)), ("p0", ("pair",))), four), True)
    assert search([pair, four], two, 8, 100, strandable=[False, True]) == stranded
    assert search([Shape("huge", gpus(5), 1), pair, four], two, 8, 100) == stranded
    assert search([Shape("never", gpus(1), 0), pair, four], two, 8, 100) == stranded  # cap 0 (mutant 26: `break`)
    # a (1 GPU, 1 cpu) pod fits neither a GPU node without cpu nor a cpu node without GPUs: not searched
    mixed = nodes((1, {GPU: "4"}), (1, {"cpu": "8"}))
    assert blocking_placement([Shape("both", {GPU: Decimal(1), "cpu": Decimal(1)}, 2)], mixed,
                              {GPU: Decimal(8), "cpu": Decimal(8)}, judged_resources(mixed), 0) == (None, True)


def test_own_quota_bounds_every_shape_when_none_is_said_unstrandable():
    """`own` without `strandable`: every shape is inference's and spends it (mutant 71: none does). 2-GPU pods of an
    own quota of 4 fill at most one 4-GPU node, so a 4-GPU pod (6 GPUs with them, within the quota of 8) always
    finds the other."""
    two = nodes((2, {GPU: "4"}))
    assert search([Shape("pair", gpus(2), 4), Shape("four", gpus(4), 1)], two, 8, 100, own=gpus(6)) == (None, True)


def test_the_closest_node_and_what_a_pod_lacks_there():
    """`closest_node` without pools is (None, {}) (mutant 15 returns None); `shortfall` names a request of exactly 1
    (mutant 10: only above 1) and reads a resource the node does not report as 0 (6 and 18: as 1)."""
    judged = frozenset({GPU, "cpu"})
    assert closest_node(gpus(1), [], judged) == (None, {})
    assert shortfall({GPU: Decimal(1), "cpu": Decimal(0)}, {"cpu": Decimal(8)}, judged) == {
        GPU: (Decimal(1), Decimal(0))}


def test_a_pod_asking_nothing_judged_is_held_without_bound():
    """`per_node` and `homogeneous_capacity` of a pod that asks none of the judged resources: None, no bound (mutant
    15 of `per_node` takes the min of no count and raises)."""
    judged = frozenset({GPU})
    assert per_node({"cpu": Decimal(1)}, {GPU: Decimal(4)}, judged) is None
    assert homogeneous_capacity({"cpu": Decimal(1), GPU: Decimal(0)}, nodes((2, {GPU: "4"})), judged) is None
    assert per_node({GPU: Decimal(3)}, {GPU: Decimal(8)}, judged) == 2
