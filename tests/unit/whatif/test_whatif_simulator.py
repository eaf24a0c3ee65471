"""The what-if simulator against hand-computed small cases of each behaviour it models (Kueue 0.19.2)."""
import pytest

from kueue_cohorts.cohorts.target import load_stack
from kueue_cohorts.whatif.kueue import Unsupported, setup_from_objects
from kueue_cohorts.whatif.scheduler import simulate
from kueue_cohorts.whatif.stack import setup_of
from kueue_cohorts.whatif.synth import synth
from tests.helpers import STACKS
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


def _events(result, *kinds):
    return [(e.time, e.kind, e.workload) + ((e.by, e.reason) if e.kind == "preempted" else ())
            for e in result.events if not kinds or e.kind in kinds]


def test_the_guides_cohort_inference_reclaims_its_gpus_from_borrowing_training():
    """Training borrows all 4 GPUs; inference needs 1: Kueue evicts the training workload (InCohortReclamation),
    admits inference at once, and inference's pod starts once the trainer has flushed (30 s). Training resumes
    from its checkpoint at 60 s (40 s lost) one requeue batch (1 s) after inference is gone."""
    result = simulate(guide_cohort(), trace(
        workload("train", 0, "training", gpus=1, pods=4, duration=3600, checkpoint_interval_seconds=60,
                 termination_seconds=30),
        workload("serve", 100, "inference", duration=1000)))
    assert _events(result, "admitted", "preempted", "started", "finished") == [
        (0, "admitted", "train"), (0, "started", "train"),
        (100, "preempted", "train", "serve", "InCohortReclamation"),
        (100, "admitted", "serve"),        # admission wait 0: the quota is released at once
        (130, "started", "serve"),         # start delay: the victim's 30 s of termination
        (1130, "finished", "serve"),
        (1131, "admitted", "train"), (1131, "started", "train"),  # the inadmissible requeue waits 1 s
        (1131 + 3600 - 60, "finished", "train")]
    lost = [e.lost for e in result.events if e.kind == "preempted"]
    assert lost == [40]


def test_training_alone_borrows_only_up_to_its_borrowing_limit():
    result = simulate(guide_cohort(), trace(workload("big", 0, "training", gpus=5, duration=10),
                                            workload("fits", 1, "training", gpus=4, duration=10)))
    assert result.admission_order() == ["fits"]  # 5 GPUs exceed nominal 0 + borrowingLimit 4: never admitted


def test_symmetric_floors_a_tenant_takes_its_floor_back_from_the_most_recently_admitted_borrower():
    result = simulate(symmetric_floors(), trace(
        workload("a1", 0, "a", gpus=2, duration=5000),
        workload("a2", 10, "a", gpus=2, duration=5000),   # a borrows b's idle floor
        workload("b1", 100, "b", gpus=2, duration=100)))
    assert _events(result, "admitted", "preempted") == [
        (0, "admitted", "a1"), (10, "admitted", "a2"),
        (100, "preempted", "a2", "b1", "InCohortReclamation"),  # admitted more recently than a1
        (100, "admitted", "b1"),
        (201, "admitted", "a2")]  # b1 ends at 200; the inadmissible a2 is requeued 1 s later


def test_symmetric_floors_a_tenant_within_its_floor_is_never_preempted():
    result = simulate(symmetric_floors(), trace(
        workload("a1", 0, "a", gpus=2, duration=5000),
        workload("b1", 10, "b", gpus=2, duration=5000),
        workload("b2", 20, "b", gpus=1, duration=10)))  # b's floor is used; a is within its floor
    assert result.preemptions() == []
    assert _events(result, "admitted") == [(0, "admitted", "a1"), (10, "admitted", "b1"), (5001, "admitted", "b2")]


@pytest.mark.parametrize("strategy, admitted", [("BestEffortFIFO", ["small"]), ("StrictFIFO", [])])
def test_an_oversized_inference_workload_ahead_of_a_fitting_one(strategy, admitted):
    """8 GPUs never fit a 4-GPU inference queue that never borrows. BestEffortFIFO parks it and admits the next one;
    StrictFIFO keeps it at the head, and the fitting replica waits behind it."""
    result = simulate(guide_cohort(strategy=strategy), trace(
        workload("oversized", 0, "inference", gpus=8, duration=100),
        workload("small", 1, "inference", gpus=1, duration=100)))
    assert result.admission_order() == admitted


def _two_flavors(when_can_borrow="MayStopSearch", when_can_preempt="TryNextFlavor"):
    fungibility = {"whenCanBorrow": when_can_borrow, "whenCanPreempt": when_can_preempt}
    gpus = {"nvidia.com/gpu": (2, 0)}
    return setup_from_objects([
        flavor("h100", {"gpu": "h100"}), flavor("a100", {"gpu": "a100"}),
        cluster_queue("inference-cq", "mixed", [("h100", gpus), ("a100", gpus)],
                      borrow_within={"policy": "LowerPriority", "maxPriorityThreshold": 100},
                      fungibility=fungibility),
        cluster_queue("training-cq", "mixed", [("h100", {"nvidia.com/gpu": (0, 2)}),
                                               ("a100", {"nvidia.com/gpu": (0, 2)})], fungibility=fungibility),
        local_queue("serving", "inference", "inference-cq"), local_queue("training", "training", "training-cq"),
        priority("inference", 1000), priority("training", 10)])


def test_two_flavors_are_tried_in_order_and_inference_reclaims_in_the_first():
    result = simulate(_two_flavors(), trace(
        workload("t1", 0, "training", gpus=2, duration=1000),
        workload("t2", 1, "training", gpus=2, duration=1000),
        workload("t3", 2, "training", gpus=1, duration=1000),
        workload("i1", 10, "inference", gpus=2, duration=100)))
    admitted = [(e.time, e.workload, dict(e.flavors)["nvidia.com/gpu"]) for e in result.events
                if e.kind == "admitted" and e.time <= 10]
    assert admitted == [(0, "t1", "h100"), (1, "t2", "a100"), (10, "i1", "h100")]  # t3: both flavors full
    # i1 needs preemption in both flavors: TryNextFlavor looks at a100 too, then keeps the first of equal modes.
    assert result.preemptions() == [("t1", "i1", "InCohortReclamation")]


def test_a_node_selector_skips_the_flavor_it_contradicts():
    result = simulate(_two_flavors(), trace(workload("t1", 0, "training", gpus=1, duration=10,
                                                     node_selector={"gpu": "a100"})))
    assert [dict(e.flavors) for e in result.events if e.kind == "admitted"] == [{"nvidia.com/gpu": "a100"}]


def test_borrow_within_cohort_lets_a_borrowing_queue_preempt_lower_priority_borrowers():
    """Inference 2 GPUs nominal; tenant-like queue x borrows. With borrowWithinCohort LowerPriority the borrowing
    high-priority queue may evict a lower-priority borrower (InCohortReclaimWhileBorrowing); without, it waits."""
    def setup(bwc):
        return setup_from_objects([
            flavor("gpu"),
            cluster_queue("hi-cq", "c", [("gpu", {"nvidia.com/gpu": (1, 3)})], borrow_within=bwc),
            cluster_queue("lo-cq", "c", [("gpu", {"nvidia.com/gpu": (1, 3)})]),
            cluster_queue("owner-cq", "c", [("gpu", {"nvidia.com/gpu": (2, 0)})]),
            local_queue("hi", "hi-lq", "hi-cq"), local_queue("lo", "lo-lq", "lo-cq"),
            priority("high", 500), priority("low", 10)])

    def run(bwc):
        return simulate(setup(bwc), trace(
            workload("lo1", 0, "lo", gpus=3, duration=1000, priority_class="low"),
            workload("hi1", 10, "hi", gpus=2, duration=100, priority_class="high")))

    assert run({"policy": "LowerPriority"}).preemptions() == [("lo1", "hi1", "InCohortReclaimWhileBorrowing")]
    assert run(None).preemptions() == [] and run(None).admission_order() == ["lo1", "hi1"]


def test_within_cluster_queue_a_higher_priority_workload_preempts_a_lower_one():
    setup = setup_from_objects([
        flavor("gpu"), cluster_queue("q-cq", None, [("gpu", {"nvidia.com/gpu": (2, None)})]),
        local_queue("q", "q-lq", "q-cq"), priority("high", 100), priority("low", 1)])
    result = simulate(setup, trace(
        workload("low", 0, "q", gpus=2, duration=1000, priority_class="low"),
        workload("high", 5, "q", gpus=1, duration=10, priority_class="high")))
    assert result.preemptions() == [("low", "high", "InClusterQueue")]
    assert result.admission_order() == ["low", "high", "low"]


def test_a_workload_without_its_local_queue_is_never_admitted():
    result = simulate(guide_cohort(), trace(workload("lost", 0, "x", gpus=1, duration=10)))
    assert _events(result) == [(0, "submitted", "lost"), (0, "unqueued", "lost")]


def test_the_simulation_is_deterministic():
    setup = setup_of(load_stack(STACKS / "Pulumi.staging.yaml"))
    demand = synth(load_stack(STACKS / "Pulumi.staging.yaml"), seed=5, days=1)
    assert simulate(setup, demand).events == simulate(setup, demand).events


def test_what_is_not_modelled_is_refused_with_every_reason():
    objects = [
        {**flavor("tas"), "spec": {"topologyName": "rack"}},
        cluster_queue("fair-cq", "c", [("tas", {"nvidia.com/gpu": (1, None)})], fairSharing={"weight": "2"},
                      admissionChecks=["prov"]),
    ]
    config = {"fairSharing": {"enable": True}, "waitForPodsReady": {"blockAdmission": True},
              "featureGates": {"PrioritySortingWithinCohort": False, "TopologyAwareScheduling": False}}
    with pytest.raises(Unsupported) as info:
        setup_from_objects(objects, config)
    keys = [p.key for p in info.value.problems]
    assert keys == ["ResourceFlavor tas spec.topologyName", "ClusterQueue fair-cq spec.fairSharing",
                    "ClusterQueue fair-cq spec.admissionChecks", "Configuration fairSharing",
                    "Configuration waitForPodsReady.blockAdmission",
                    "Configuration featureGates.PrioritySortingWithinCohort"]
    assert "cannot model this stack: 6 problems" in str(info.value)


@pytest.mark.parametrize("stack", ["dev", "staging", "mixed", "prod"])
def test_every_stack_of_the_repository_can_be_simulated(stack):
    setup = setup_of(load_stack(STACKS / f"Pulumi.{stack}.yaml"))
    assert setup.cluster_queues and setup.local_queues


def test_a_lending_limit_keeps_part_of_a_floor_for_its_tenant():
    """Tenant a (floor 2, lendingLimit 1) lends only 1 GPU: b (floor 2) can reach 3, not 4."""
    setup = setup_from_objects([
        flavor("gpu"),
        cluster_queue("a-cq", "pool", [("gpu", {"nvidia.com/gpu": (2, 2, 1)})]),
        cluster_queue("b-cq", "pool", [("gpu", {"nvidia.com/gpu": (2, 2)})]),
        local_queue("a", "a-lq", "a-cq"), local_queue("b", "b-lq", "b-cq"), priority("research", 100)])
    result = simulate(setup, trace(workload("b1", 0, "b", gpus=3, duration=100),
                                   workload("b2", 1, "b", gpus=4, duration=100)))
    assert _events(result, "admitted") == [(0, "admitted", "b1")]  # b2 exceeds what b can ever reach


def test_a_cohort_tree_lends_across_its_branches():
    """Cohorts left and right under root, each with one queue of nominal 2: left may borrow right's 2 through the
    root; a Cohort object's own quota adds to what its subtree can use."""
    setup = setup_from_objects([
        flavor("gpu"),
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "left"},
         "spec": {"parentName": "root"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "right"},
         "spec": {"parentName": "root", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
             {"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}]}},
        cluster_queue("a-cq", "left", [("gpu", {"nvidia.com/gpu": (2, None)})]),
        cluster_queue("b-cq", "right", [("gpu", {"nvidia.com/gpu": (2, None)})]),
        local_queue("a", "a-lq", "a-cq"), local_queue("b", "b-lq", "b-cq"), priority("research", 100)])
    result = simulate(setup, trace(workload("a1", 0, "a", gpus=5, duration=100),
                                   workload("a2", 1, "a", gpus=6, duration=100)))
    assert _events(result, "admitted") == [(0, "admitted", "a1")]  # 2 + 2 + right's own 1; 6 never fits


def test_a_cycle_of_cohorts_is_refused():
    cohort = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort"}
    with pytest.raises(Unsupported, match="form a cycle"):
        setup_from_objects([{**cohort, "metadata": {"name": "x"}, "spec": {"parentName": "y"}},
                            {**cohort, "metadata": {"name": "y"}, "spec": {"parentName": "x"}}])


def test_a_deleted_workload_leaves_its_queue_or_gives_its_quota_back():
    """A replica deleted while pending never runs; one deleted while admitted frees its GPUs (the next one fits)."""
    result = simulate(guide_cohort(inference_gpus=1), trace(
        workload("r1", 0, "inference", deleted_seconds=100),
        workload("r2", 10, "inference", deleted_seconds=50),    # pending behind r1, deleted before it fits
        workload("r3", 60, "inference", duration=30)))
    assert _events(result, "admitted", "deleted", "finished") == [
        (0, "admitted", "r1"), (50, "deleted", "r2"), (100, "finished", "r1"),
        (101, "admitted", "r3"), (131, "finished", "r3")]
