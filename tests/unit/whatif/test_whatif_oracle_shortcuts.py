"""The preemption oracle's shortcuts change no answer (issue 41, item 3: linear growth).

Under a backlog nearly every scheduling attempt asks the oracle, per resource and then for the whole assignment,
and nearly every search finds no candidate. Three shortcuts make those searches cheap; each rests on an invariant
pinned here:
- a ClusterQueue whose lowest admitted priority no policy can preempt is not walked (`may_satisfy_policy`, with the
  lowest priority kept by `Cluster` as workloads are added and removed);
- a search without a single candidate returns at once;
- SimulatePreemption without candidates answers the borrowing height the flavor assigner computed on the same
  snapshot, because a search leaves the snapshot exactly as it found it.
The cyclic garbage collector is paused while a simulation runs: sound while the garbage it leaves in reference
cycles does not grow with the trace. A trace's request texts are parsed once each. And traces whose ClusterQueues
mix priorities under each withinClusterQueue policy give the very events they gave before the shortcuts (digests
recorded from the simulator at 6ee3f7c)."""
import gc
import hashlib
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.whatif.cluster import Cluster, Workload, request_amount, scheduling_hash, workload_of
from kueue_cohorts.whatif.kueue import KueueSetup, amount, setup_from_objects
from kueue_cohorts.whatif.preemption import Preemptor, may_satisfy_policy, satisfies_policy
from kueue_cohorts.whatif.quota import lowest_subtree_that_fits
from kueue_cohorts.whatif.scheduler import simulate
from kueue_cohorts.whatif.stack import setup_of
from kueue_cohorts.whatif.synth import synth
from kueue_cohorts.whatif.trace import TraceWorkload
from tests.unit.whatif.kueue_objects import cluster_queue, flavor, local_queue, priority, trace, workload

ROOT = Path(__file__).resolve().parents[3]

POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")
WITHIN = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
"""withinClusterQueue's values (kueue.x-k8s.io/v1beta2 ClusterQueuePreemption: Any is for the cohort only)."""
RECLAIM = ("Never", "LowerPriority", "Any")
PRIORITIES = {"low": 10, "mid": 100, "high": 1000}


def _mixed(within: str, reclaim: str = "Any") -> KueueSetup:
    """Two ClusterQueues of one cohort (3 GPUs each, may borrow 3) whose workloads have three priorities."""
    return setup_from_objects([
        flavor("gpu"),
        *[cluster_queue(f"{t}-cq", "pool", [("gpu", {"nvidia.com/gpu": (3, 3)})], reclaim=reclaim, within=within)
          for t in ("a", "b")],
        *[local_queue(t, f"{t}-lq", f"{t}-cq") for t in ("a", "b")],
        *[priority(name, value) for name, value in PRIORITIES.items()]])


def _spec(name: str, submit: float, pods: int = 1) -> TraceWorkload:
    return TraceWorkload(name=name, submit_seconds=submit, namespace="a", local_queue="a-lq", pods=pods,
                         requests={"nvidia.com/gpu": "1"})


def _admitted(name: str, cq: str, prio: int, created: float, reserved: float, gpus: int) -> Workload:
    spec = _spec(name, created, pods=gpus)
    requests = {"nvidia.com/gpu": 1}
    wl = Workload(spec=spec, cq=cq, priority=prio, requests=requests,
                  equivalence=scheduling_hash(spec, prio, requests))
    wl.flavors = {"nvidia.com/gpu": "gpu"}
    wl.usage = {("gpu", "nvidia.com/gpu"): gpus}
    wl.reserved_at = reserved
    return wl


@settings(max_examples=300)
@given(st.sampled_from(POLICIES), st.integers(0, 3), st.integers(0, 5),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=8))
def test_a_queue_skipped_by_its_lowest_priority_holds_no_workload_the_policy_allows(policy, prio, created,
                                                                                   candidates):
    incoming = _admitted("in", "a-cq", prio, created, 0.0, 1)
    admitted = [_admitted(f"c{i}", "a-cq", p, c, 0.0, 1) for i, (p, c) in enumerate(candidates)]
    allowed = [wl.name for wl in admitted if satisfies_policy(incoming, wl, policy)]
    if not may_satisfy_policy(prio, min(wl.priority for wl in admitted), policy):
        assert allowed == []
    # and it skips only what it must: with a lower priority than the preemptor's in the queue, a policy that
    # preempts lower priorities is never skipped
    if policy != "Never" and min(wl.priority for wl in admitted) < prio:
        assert may_satisfy_policy(prio, min(wl.priority for wl in admitted), policy)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9), st.sampled_from(["a-cq", "b-cq"]),
                          st.sampled_from(sorted(PRIORITIES.values()))), max_size=40))
def test_the_lowest_admitted_priority_follows_every_add_and_remove(operations):
    cluster = Cluster(_mixed("LowerPriority"))
    made: dict[int, Workload] = {}
    for add, index, cq, prio in operations:
        wl = made.get(index)
        if add and wl is None:
            wl = made[index] = _admitted(f"w{index}", cq, prio, float(index), float(index), 1)
            cluster.add(wl)
        elif not add and wl is not None:
            cluster.remove(wl)
            del made[index]
        for name in ("a-cq", "b-cq"):
            want = min((w.priority for w in cluster.admitted[name].values()), default=None)
            assert cluster.lowest_priority(name) == want


def _snapshot(cluster: Cluster):
    return ([(node.name, dict(node.usage)) for node in cluster.tree.nodes],
            {cq: sorted(wls) for cq, wls in cluster.admitted.items()},
            {cq: dict(counts) for cq, counts in cluster.priorities.items()})


@settings(max_examples=200)
@given(st.sampled_from(WITHIN), st.sampled_from(RECLAIM),
       st.lists(st.tuples(st.sampled_from(["a-cq", "b-cq"]), st.sampled_from(sorted(PRIORITIES.values())),
                          st.integers(1, 3)), max_size=6),
       st.sampled_from(sorted(PRIORITIES.values())), st.integers(1, 6))
def test_a_preemption_search_leaves_the_snapshot_as_it_found_it(within, reclaim, running, prio, gpus):
    setup = _mixed(within, reclaim)
    cluster = Cluster(setup)
    used = {"a-cq": 0, "b-cq": 0}
    for i, (cq, p, size) in enumerate(running):
        if sum(used.values()) + size <= 6 and used[cq] + size <= 6:
            used[cq] += size
            cluster.add(_admitted(f"r{i}", cq, p, float(i), float(i), size))
    incoming = _admitted("in", "a-cq", prio, 100.0, 0.0, gpus)
    fr = ("gpu", "nvidia.com/gpu")
    oracle = Preemptor(cluster, 200.0)
    before = _snapshot(cluster)
    height = lowest_subtree_that_fits(cluster.cq("a-cq"), fr, gpus)[0]
    found = oracle.targets(incoming, "a-cq", frozenset({fr}), {fr: gpus})
    assert _snapshot(cluster) == before
    possibility, after = oracle.simulate(incoming, "a-cq", fr, gpus, height)
    assert _snapshot(cluster) == before
    assert (possibility == "NoCandidates") == (not found)
    if not found:  # the height the assigner passed is the one Kueue computes again on the same snapshot
        assert after == lowest_subtree_that_fits(cluster.cq("a-cq"), fr, gpus)[0]


def _digest(result) -> str:
    text = "\n".join(repr((e.time, e.kind, e.workload, e.cq, e.flavors, e.by, e.reason, e.lost))
                     for e in result.events)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: (withinClusterQueue, reclaimWithinCohort, seed) -> (preemptions, event digest) at 6ee3f7c, before the shortcuts.
MIXED_CASES = {
    ("LowerPriority", "Any", 1): (5, "e54a2b07d2717034"),
    ("LowerPriority", "LowerPriority", 2): (208, "48fca3492cbb071e"),
    ("LowerOrNewerEqualPriority", "Any", 3): (13, "b6148bb4e0ad7ab1"),
    ("LowerOrNewerEqualPriority", "LowerPriority", 4): (8, "d172ed86b13f8e88"),
    ("Never", "Any", 5): (1, "91f899baf9093e17"),
    ("LowerOrNewerEqualPriority", "Any", 6): (11, "a646af004bd2128e"),
}


@pytest.mark.parametrize("case", sorted(MIXED_CASES), ids=lambda c: f"{c[0]}-{c[1]}-seed{c[2]}")
def test_queues_of_mixed_priorities_give_the_events_they_gave_before_the_shortcuts(case):
    within, reclaim, seed = case
    rng = random.Random(seed)
    lines = [workload(f"w{i}", rng.randrange(0, 20000), rng.choice(("a", "b")), gpus=rng.randint(1, 3),
                      pods=rng.randint(1, 2), duration=rng.choice([None, rng.randrange(60, 4000)]),
                      priority_class=rng.choice(sorted(PRIORITIES)))
             for i in range(300)]
    result = simulate(_mixed(within, reclaim), trace(*lines, horizon=30000))
    assert (len(result.preemptions()), _digest(result)) == MIXED_CASES[case]


def _cyclic_garbage(setup, demand) -> int:
    """Objects in reference cycles that one simulation of `demand` leaves behind (its Result dropped)."""
    gc.collect()
    gc.disable()
    try:
        simulate(setup, demand)
        assert not gc.isenabled()  # a paused collector stays paused
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize("stack_case", [("prod", 1, 600, 240), ("staging", 2, 60, 24)], ids=lambda c: c[0])
def test_a_simulation_leaves_cyclic_garbage_only_of_its_quota_tree_and_the_collector_as_it_found_it(stack_case):
    """`simulate` pauses the cyclic garbage collector (`collector_paused`): sound while what a simulation leaves in
    reference cycles does not grow with the trace (its quota tree: each node and its parent point at each other),
    so that nothing piles up while the collector is off."""
    stack, seed, training, tenant = stack_case
    stack_settings = load_settings(raw_from_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    setup = setup_of(stack_settings)
    short, long = (synth(stack_settings, seed=seed, days=days, training_per_day=training, tenant_per_day=tenant)
                   for days in (0.5, 3.0))
    assert len(long.workloads) > 4 * len(short.workloads)
    assert simulate(setup, long).preemptions()  # the trace exercises preemption, not only admission
    assert gc.isenabled()
    assert 0 < _cyclic_garbage(setup, short) == _cyclic_garbage(setup, long) < 100


@pytest.mark.parametrize("prefixes, kept", [
    ((), {"nvidia.com/gpu": 2, "example.com/nic": 1, "vendor.io/fpga": 3}),
    (("example.com/",), {"nvidia.com/gpu": 2, "vendor.io/fpga": 3}),
    (("other.org/", "vendor."), {"nvidia.com/gpu": 2, "example.com/nic": 1}),
    (("example.com/", "vendor.io/"), {"nvidia.com/gpu": 2}),
])
def test_a_workloads_requests_leave_out_every_excluded_prefix_and_are_read_as_kueue_counts_them(prefixes, kept):
    """`workload_of` (the request amounts remembered per text, `request_amount`): Configuration
    resources.excludeResourcePrefixes drops every resource starting with any of the prefixes; the others are
    Kueue's amounts, the same for a text seen before."""
    setup = setup_from_objects(
        [flavor("gpu"), cluster_queue("a-cq", None, [("gpu", {"nvidia.com/gpu": (4, None)})]),
         local_queue("a", "a-lq", "a-cq")],
        {"resources": {"excludeResourcePrefixes": list(prefixes)}} if prefixes else None)
    for _ in range(2):
        spec = TraceWorkload(name="w", submit_seconds=0, namespace="a", local_queue="a-lq", pods=1,
                             requests={"nvidia.com/gpu": "2", "example.com/nic": "500m", "vendor.io/fpga": "3"})
        assert workload_of(spec, setup).requests == kept
    assert request_amount("cpu", "1500m") == amount("cpu", "1500m") == 1500
    assert request_amount("memory", "1Gi") == amount("memory", "1Gi") == 1 << 30
