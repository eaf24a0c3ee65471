"""Properties of the what-if simulator over random traces: quota is never exceeded, and inference that fits its
nominal quota never waits for GPUs that training borrowed (reclaimWithinCohort Any): it is admitted at once, or one
requeue batch (1 s) later when Kueue had parked its equivalence class."""
from random import Random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kueue_cohorts.whatif.kueue import setup_from_objects
from kueue_cohorts.whatif.scheduler import REQUEUE_BATCH_SECONDS, simulate
from tests.unit.whatif.kueue_objects import (
    cluster_queue,
    flavor,
    guide_cohort,
    local_queue,
    priority,
    symmetric_floors,
    trace,
    workload,
)


def _two_flavor_setup():
    gpus = {"nvidia.com/gpu": (2, 0)}
    return setup_from_objects([
        flavor("h100"), flavor("a100"),
        cluster_queue("inference-cq", "mixed", [("h100", gpus), ("a100", gpus)],
                      borrow_within={"policy": "LowerPriority", "maxPriorityThreshold": 100}),
        cluster_queue("training-cq", "mixed", [("h100", {"nvidia.com/gpu": (0, 2)}),
                                               ("a100", {"nvidia.com/gpu": (0, 2)})]),
        local_queue("serving", "inference", "inference-cq"), local_queue("training", "training", "training-cq"),
        priority("inference", 1000), priority("training", 10)])


SETUPS = {"guide": (guide_cohort(), ("inference", "training")),
          "guide-strict": (guide_cohort(strategy="StrictFIFO", training_limit=2), ("inference", "training")),
          "floors": (symmetric_floors(floor=2, tenants=("a", "b", "c")), ("a", "b", "c")),
          "floors-limited": (symmetric_floors(floor=2, tenants=("a", "b", "c"), limit=1), ("a", "b", "c")),
          "two-flavors": (_two_flavor_setup(), ("inference", "training"))}

rows = st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 3), st.integers(1, 4), st.integers(1, 2),
                          st.one_of(st.none(), st.integers(1, 1500))), min_size=1, max_size=25)


def _usage_over_time(result):
    """(time, {cq: usage}) at every change, each ClusterQueue at its latest value."""
    times = sorted({t for series in result.usage.values() for t, _ in series})
    out = []
    for t in times:
        out.append((t, {cq: [u for when, u in series if when <= t][-1] for cq, series in result.usage.items()}))
    return out


@settings(max_examples=60)
@given(st.sampled_from(sorted(SETUPS)), rows)
def test_quota_is_never_exceeded(name, items):
    setup, queues = SETUPS[name]
    demand = trace(*[workload(f"w{i}", submit, queues[q % len(queues)], gpus=gpus, pods=pods, duration=duration)
                     for i, (submit, q, gpus, pods, duration) in enumerate(items)], horizon=5000)
    result = simulate(setup, demand)
    for _, usage in _usage_over_time(result):
        totals: dict = {}
        for cq_name, used in usage.items():
            cq = setup.cluster_queues[cq_name]
            for fr, value in used.items():
                quota = cq.quotas[fr]
                if quota.borrowing_limit is not None:
                    assert value <= quota.nominal + quota.borrowing_limit, (cq_name, fr, value)
                totals[(cq.cohort, fr)] = totals.get((cq.cohort, fr), 0) + value
        for (cohort, fr), value in totals.items():
            capacity = sum(cq.quotas[fr].nominal for cq in setup.cluster_queues.values() if cq.cohort == cohort)
            assert value <= capacity, (cohort, fr, value, capacity)


class _InOrder(Random):
    """Submits at 0, 1, 2, ...: the shrunk case CI found."""

    def sample(self, population, k, *, counts=None):  # type: ignore[override]
        return list(range(k))


@settings(max_examples=80)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 4), st.integers(1, 2), st.integers(1, 3000)),
                max_size=12),
       st.lists(st.tuples(st.integers(1, 3), st.integers(1, 800)), min_size=1, max_size=10),
       st.randoms(use_true_random=False))
@example(training=[], inference=[(2, 2), (3, 1), (3, 1)], rnd=_InOrder()).via("CI 2026-12-07: i1 queued ahead of i2")
def test_inference_within_its_nominal_quota_never_waits_for_borrowed_gpus(training, inference, rnd):
    nominal = 4
    submits = rnd.sample(range(0, 3000), len(inference))  # distinct submit times
    lines = [workload(f"t{i}", submit, "training", gpus=gpus, pods=pods, duration=duration,
                      checkpoint_interval_seconds=60, termination_seconds=30)
             for i, (submit, gpus, pods, duration) in enumerate(training)]
    lines += [workload(f"i{i}", submit, "inference", gpus=gpus, duration=duration)
              for i, ((gpus, duration), submit) in enumerate(zip(inference, submits, strict=True))]
    result = simulate(guide_cohort(inference_gpus=nominal), trace(*lines, horizon=6000))
    admitted: dict[str, list[float]] = {}
    ended: dict[str, list[float]] = {}
    for e in result.events:
        if e.kind == "admitted":
            admitted.setdefault(e.workload, []).append(e.time)
        if e.kind in ("finished", "preempted"):
            ended.setdefault(e.workload, []).append(e.time)
    sizes = {f"i{i}": gpus for i, (gpus, _) in enumerate(inference)}
    submitted = {f"i{i}": s for i, s in enumerate(submits)}
    for name, submit in submitted.items():
        # inference admitted, or queued ahead of it (submitted earlier: BestEffortFIFO admits the older first when
        # both fit only one at a time), and not yet ended: what it may wait for without waiting for training
        in_use = sum(sizes[other] for other in sizes if other != name
                     and (any(t <= submit for t in admitted.get(other, [])) or submitted[other] < submit)
                     and not any(t <= submit for t in ended.get(other, [])))
        if in_use + sizes[name] <= nominal:
            # at once, or one requeue batch later when an equal replica was parked with its equivalence class
            # (Kueue requeues parked workloads 1 s after quota is freed: cluster_queue.go PushOrUpdate)
            first = admitted.get(name, [None])[0]
            assert first is not None and submit <= first <= submit + REQUEUE_BATCH_SECONDS, (
                name, submit, in_use, result.events)
    assert all(reason == "InCohortReclamation" for _, _, reason in result.preemptions())
