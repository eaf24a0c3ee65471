"""The simulator's results do not change with its speed-ups (issue 41, item 3): the per-class queue with the
equivalence key cached on the workload pops exactly what the queue that recomputed the key on every attempt popped,
and seeded traces of every stack and of the test setups give the very events they gave before the change (a digest
of every event, recorded from the simulator as it was at 62c5d4f)."""
import hashlib
import heapq
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.whatif.cluster import Workload, scheduling_hash
from kueue_cohorts.whatif.scheduler import (
    FAILED_AFTER_NOMINATION,
    NO_CANDIDATES,
    NO_FIT,
    PENDING_PREEMPTION,
    _Queue,
    simulate,
)
from kueue_cohorts.whatif.stack import setup_of
from kueue_cohorts.whatif.synth import synth
from kueue_cohorts.whatif.trace import TraceWorkload
from tests.unit.whatif.kueue_objects import trace, workload
from tests.unit.whatif.test_whatif_properties import SETUPS

ROOT = Path(__file__).resolve().parents[3]


def _digest(result):
    text = "\n".join(repr((e.time, e.kind, e.workload, e.cq, e.flavors, e.by, e.reason, e.lost))
                     for e in result.events)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: (stack, seed, days, training jobs a day, tenant jobs a day) -> (workloads, preemptions, event digest) at 62c5d4f.
STACK_CASES = {
    ("dev", 1, 2.0, 60, 24): (112, 13, "25a44f21415637db"),
    ("staging", 2, 2.0, 300, 100): (1042, 36, "ca272f8d82a8898a"),
    ("prod", 3, 1.0, 600, 240): (1353, 44, "3eb01ee34f3925be"),
    ("mixed", 4, 2.0, 200, 80): (428, 26, "438793869bc3e68e"),
    ("staging", 5, 3.0, 90, 30): (483, 53, "d570dd0c26955d2a"),
    ("prod", 6, 0.5, 1200, 400): (1188, 31, "cc2b634ebc95f174"),
}


@pytest.mark.parametrize("case", sorted(STACK_CASES), ids=lambda c: f"{c[0]}-seed{c[1]}")
def test_a_synthetic_trace_of_each_stack_gives_the_events_it_gave_before(case):
    stack, seed, days, training, tenant = case
    stack_settings = load_settings(raw_from_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    demand = synth(stack_settings, seed=seed, days=days, training_per_day=training, tenant_per_day=tenant)
    result = simulate(setup_of(stack_settings), demand)
    assert (len(demand.workloads), len(result.preemptions()), _digest(result)) == STACK_CASES[case]


#: (setup of test_whatif_properties, seed) -> (preemptions, event digest) at 62c5d4f.
SETUP_CASES = {
    ("floors", 1): (6, "1072c7d047dc6a5c"), ("floors", 2): (4, "acc4eb608a869485"),
    ("floors-limited", 1): (3, "37ee4ce721417720"), ("floors-limited", 2): (3, "a567b4a3de691d88"),
    ("guide", 1): (5, "62f7bc4590b7a0fd"), ("guide", 2): (0, "7572f55797e30531"),
    ("guide-strict", 1): (2, "c7062c9f1c1f9183"), ("guide-strict", 2): (0, "d815c41bdd99c22a"),
    ("two-flavors", 1): (5, "01d75dfb08d3b27e"), ("two-flavors", 2): (0, "21bc97c5f3bd92cd"),
}


@pytest.mark.parametrize("case", sorted(SETUP_CASES), ids=lambda c: f"{c[0]}-seed{c[1]}")
def test_a_random_trace_of_each_test_setup_gives_the_events_it_gave_before(case):
    name, seed = case
    setup, queues = SETUPS[name]
    rng = random.Random(seed)
    demand = trace(*[workload(f"w{i}", rng.randrange(0, 20000), rng.choice(queues), gpus=rng.randint(1, 3),
                              pods=rng.randint(1, 2), duration=rng.choice([None, rng.randrange(60, 4000)]))
                     for i in range(300)], horizon=30000)
    result = simulate(setup, demand)
    assert (len(result.preemptions()), _digest(result)) == SETUP_CASES[case]


class _ReferenceQueue:
    """The ClusterQueue queue as it was at 62c5d4f: one heap, the equivalence key recomputed on every requeue and
    bulk move (the model the per-class queue must agree with)."""

    def __init__(self, strategy):
        self.strategy = strategy
        self._heap = []
        self.members = {}
        self.inadmissible = {}
        self.sticky = None
        self.bulk_moved = set()
        self._seq = 0

    @staticmethod
    def shape(wl):
        return scheduling_hash(wl.spec, wl.priority, wl.requests)

    def push(self, wl):
        if self.strategy == "BestEffortFIFO" and self.shape(wl) in self.bulk_moved:
            self.inadmissible[wl.name] = wl
            return
        self._heap_push(wl)

    def _heap_push(self, wl):
        self._seq += 1
        self.members[wl.name] = (self._seq, wl)
        heapq.heappush(self._heap, (-wl.priority, wl.created, wl.name, self._seq))

    def pop(self):
        if self.sticky is not None and self.sticky in self.members:
            return self.members.pop(self.sticky)[1]
        while self._heap:
            _, _, name, seq = heapq.heappop(self._heap)
            member = self.members.get(name)
            if member is not None and member[0] == seq:
                del self.members[name]
                return member[1]
        return None

    def requeue(self, wl, reason):
        if reason == PENDING_PREEMPTION:
            self.sticky = wl.name if self.strategy == "BestEffortFIFO" else None
        immediate = True if self.strategy == "StrictFIFO" else reason in (FAILED_AFTER_NOMINATION,
                                                                          PENDING_PREEMPTION)
        if immediate:
            self._heap_push(wl)
            return False
        self.inadmissible[wl.name] = wl
        if reason in (NO_FIT, NO_CANDIDATES):
            key = self.shape(wl)
            self.bulk_moved.add(key)
            for name, (_, other) in list(self.members.items()):
                if self.shape(other) == key:
                    del self.members[name]
                    self.inadmissible[name] = other
        return True

    def remove(self, name):
        self.members.pop(name, None)
        self.inadmissible.pop(name, None)
        if self.sticky == name:
            self.sticky = None

    def retry_inadmissible(self):
        self.bulk_moved.clear()
        for wl in self.inadmissible.values():
            self._heap_push(wl)
        self.inadmissible.clear()


def _workload(index, priority, created, pods):
    spec = TraceWorkload(name=f"w{index}", submit_seconds=created, namespace="ns", local_queue="lq",
                         pods=pods, requests={"nvidia.com/gpu": "1"})
    requests = {"nvidia.com/gpu": 1}
    return Workload(spec=spec, cq="cq", priority=priority, requests=requests,
                    equivalence=scheduling_hash(spec, priority, requests))


operations = st.lists(st.one_of(
    st.tuples(st.just("push"), st.integers(0, 11)),
    st.tuples(st.just("pop"), st.sampled_from([NO_FIT, NO_CANDIDATES, FAILED_AFTER_NOMINATION,
                                               PENDING_PREEMPTION, "admit"])),
    st.tuples(st.just("remove"), st.integers(0, 11)),
    st.tuples(st.just("retry"), st.just(0))), max_size=80)


@settings(max_examples=400)
@given(st.sampled_from(["BestEffortFIFO", "StrictFIFO"]),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4), st.integers(1, 2)), min_size=12, max_size=12),
       operations)
def test_the_per_class_queue_pops_what_the_one_heap_queue_popped(strategy, shapes, ops):
    pool = [_workload(i, p, c, n) for i, (p, c, n) in enumerate(shapes)]
    new, old = _Queue(strategy), _ReferenceQueue(strategy)
    queued: set[str] = set()
    for op, arg in ops:
        if op == "push":
            wl = pool[arg]
            if wl.name in queued:
                continue
            queued.add(wl.name)
            new.push(wl)
            old.push(wl)
        elif op == "pop":
            got, want = new.pop(), old.pop()
            assert (got.name if got else None) == (want.name if want else None)
            if want is None:
                continue
            queued.discard(want.name)
            if arg != "admit":
                queued.add(want.name)
                assert new.requeue(got, arg) == old.requeue(want, arg)
        elif op == "remove":
            new.remove(pool[arg].name)
            old.remove(pool[arg].name)
            queued.discard(pool[arg].name)
        else:
            new.retry_inadmissible()
            old.retry_inadmissible()
        assert sorted(w.name for w in new.inadmissible()) == sorted(old.inadmissible)
    while True:  # drain: the same order to the end
        got, want = new.pop(), old.pop()
        assert (got.name if got else None) == (want.name if want else None)
        if want is None:
            break
