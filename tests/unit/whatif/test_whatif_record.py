"""``cohorts trace record``'s pure part (Workload objects as the watch API sends them -> trace lines) and the
agreement of a replay with a simulation (whatif/replay.py), on Workload objects shaped as Kueue 0.19.2 writes them."""
import pytest

from kueue_cohorts.whatif.record import TraceRecorder, queue_kinds, workload_priority_class
from kueue_cohorts.whatif.replay import Observed, _Recorder, agreement, job_of
from kueue_cohorts.whatif.scheduler import simulate
from kueue_cohorts.whatif.trace import WorkloadKind
from tests.unit.whatif.kueue_objects import guide_cohort, trace, workload


def _workload(name, namespace, queue, created, conditions=(), count=2, uid=None, owner=None,
              requests=None, priority="serving-training"):
    containers = [{"name": "main", "resources": {"requests": requests or {"cpu": "500m", "nvidia.com/gpu": "1"}}},
                  {"name": "side", "resources": {"requests": {"cpu": "500m", "memory": "1024Mi"}}}]
    meta = {"name": name, "namespace": namespace, "creationTimestamp": created, "uid": uid or f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"kind": "Job", "name": owner}]
    return {"metadata": meta,
            "spec": {"queueName": queue, "priority": 100,
                     "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": priority},
                     "podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": containers}}}]},
            "status": {"conditions": [{"type": t, "status": s, "lastTransitionTime": at, "reason": r,
                                       "message": m} for t, s, at, r, m in conditions]}}


def test_recorded_workloads_become_trace_lines():
    kinds = queue_kinds([("fine-tuning", "training", "training"), ("serving", "inference", "inference")])
    recorder = TraceRecorder(kinds, checkpoint_seconds=600)
    reserved = ("QuotaReserved", "True", "2026-12-04T10:00:30Z", "QuotaReserved", "")
    finished = ("Finished", "True", "2026-12-04T10:10:30Z", "Succeeded", "")
    recorder.observe(_workload("job-a", "fine-tuning", "training", "2026-12-04T10:00:00Z"))
    recorder.observe(_workload("job-a", "fine-tuning", "training", "2026-12-04T10:00:00Z", [reserved]))
    recorder.observe(_workload("job-a", "fine-tuning", "training", "2026-12-04T10:00:00Z", [reserved, finished]))
    recorder.observe(_workload("x" * 70, "serving", "inference", "2026-12-04T10:01:00Z", count=1,
                               priority="serving-inference"))
    recorder.observe(_workload("other", "elsewhere", "q", "2026-12-04T10:00:00Z"))  # not the stack's queue
    gone = _workload("cancelled", "fine-tuning", "training", "2026-12-04T10:02:00Z")
    recorder.observe_deleted(gone, recorder.seen["fine-tuning/job-a"].created + 300)
    demand = recorder.trace(until=recorder.seen["fine-tuning/job-a"].created + 3600)
    assert demand.horizon_seconds == 3600
    first, second, third = demand.workloads
    assert (third.name, third.submit_seconds, third.deleted_seconds, third.duration_seconds) == (
        "cancelled", 120, 300, None)
    assert (first.name, first.submit_seconds, first.kind, first.pods, first.duration_seconds) == (
        "job-a", 0, WorkloadKind.TRAINING, 2, 600)
    assert first.requests == {"cpu": "1", "nvidia.com/gpu": "1", "memory": "1Gi"}  # summed over containers
    assert first.checkpoint_interval_seconds == 600 and first.priority_class == "serving-training"
    assert second.submit_seconds == 60 and second.duration_seconds is None  # still running: until deleted
    assert len(second.name) <= 63 and second.name.startswith("x" * 54)


def test_agreement_names_the_first_difference():
    result = simulate(guide_cohort(), trace(
        workload("train", 0, "training", gpus=4, duration=1000),
        workload("serve", 10, "inference", duration=100)))
    # instants: train submitted (#1), serve submitted (#2), serve finished (#3: train admitted again 1 s later)
    same = Observed(["train", "serve", "train"], [("train", "serve", "InCohortReclamation")], [0, 1, 2], [1])
    assert agreement(result, same).equal and agreement(result, same).first_difference is None
    swapped = Observed(["train", "train", "serve"], [("train", "serve", "InCohortReclamation")], [0, 1, 2], [1])
    found = agreement(result, swapped)
    assert not found.admissions_equal and found.preemptions_equal
    assert found.first_difference == "admission #2: the simulator says serve (instant #2), Kueue did train (instant #2)"
    shorter = Observed(["train", "serve", "train"], [], [0, 1, 2], [])
    assert agreement(result, shorter).first_difference == (
        "preemption #1: only the simulator has ('train', 'serve', 'InCohortReclamation') (instant #2)")


def test_the_victims_of_one_preemption_round_agree_in_any_order():
    result = simulate(guide_cohort(), trace(
        workload("t1", 0, "training", gpus=2, duration=1000),
        workload("t2", 5, "training", gpus=2, duration=1000),
        workload("serve", 10, "inference", gpus=4, duration=100)))
    victims = result.preemptions()
    assert sorted(v for v, _, _ in victims) == ["t1", "t2"]
    admitted = result.admission_order()
    assert admitted == ["t1", "t2", "serve", "t1", "t2"]  # t1 and t2 again once serve is done (instant #4)
    # evicted in parallel by Kueue: the API server saw t2 first; the two re-admissions likewise
    observed = Observed(["t1", "t2", "serve", "t2", "t1"], list(reversed(victims)), [0, 1, 2, 3, 3], [2, 2])
    assert agreement(result, observed).equal
    late = Observed(admitted, list(reversed(victims)), [0, 1, 2, 3, 3], [2, 3])  # one at another instant
    assert not agreement(result, late).equal


def test_the_replay_recorder_reads_admissions_and_preemptions_from_workload_conditions():
    admitted, preempted = [], []
    recorder = _Recorder(None, {"train", "serve"}, admitted.append, preempted.append)
    reserved = ("QuotaReserved", "True", "2026-12-04T10:00:01Z", "QuotaReserved", "")
    recorder.observe(_workload("job-train-1", "t", "training", "t0", [reserved], uid="u-train", owner="train"))
    recorder.observe(_workload("job-serve-1", "s", "inference", "t0", [], uid="u-serve", owner="serve"))
    evicted = ("Evicted", "True", "2026-12-04T10:00:05Z", "Preempted",
               "Preempted to accommodate a workload (UID: u-serve, JobUID: j) due to reclamation within the cohort")
    stamp = ("Preempted", "True", "2026-12-04T10:00:05Z", "InCohortReclamation", "Preempted to accommodate")
    recorder.observe(_workload("job-train-1", "t", "training", "t0", [reserved, evicted, stamp], uid="u-train",
                               owner="train"))
    recorder.observe(_workload("job-train-1", "t", "training", "t0", [reserved, evicted, stamp], uid="u-train",
                               owner="train"))  # seen twice: one preemption
    assert recorder.observed.admissions == ["train"] and admitted == ["train"]
    assert recorder.observed.preemptions == [("train", "serve", "InCohortReclamation")] and preempted == ["train"]
    assert recorder.evicted["train"] and recorder.existing == {"train", "serve"}


def test_a_trace_workload_becomes_a_job_kueue_can_admit():
    job = job_of(workload("w1", 0, "training", gpus=2, pods=3, node_selector={"gpu": "a100"}))
    assert job.metadata.labels == {"kueue.x-k8s.io/queue-name": "training",
                                   "kueue.x-k8s.io/priority-class": "training"}
    assert job.spec.parallelism == job.spec.completions == 3
    pod = job.spec.template.spec
    assert pod.containers[0].resources.requests == {"nvidia.com/gpu": "2"} and pod.node_selector == {"gpu": "a100"}


@pytest.mark.parametrize("spec, expected", [
    ({"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "gold"}}, "gold"),
    ({"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "system"}}, None),
    ({"priorityClassName": "old-form"}, "old-form"),
    ({}, None),
])
def test_the_priority_class_is_read_as_kueue_v1beta2_writes_it(spec, expected):
    assert workload_priority_class(spec) == expected


@pytest.mark.parametrize("first, second", [("train", "serve"), ("serve", "train"), ("a", "b"), ("b", "a")])
def test_two_workloads_created_in_one_second_keep_the_order_they_were_seen_in(first, second):
    kinds = queue_kinds([("fine-tuning", "training", "training")])
    created = "2026-12-04T10:00:00Z"
    times = iter([1796378400.2, 1796378400.7])  # 10:00:00.2 and .7 UTC, the watch's arrival times
    recorder = TraceRecorder(kinds, clock=lambda: next(times))
    recorder.observe(_workload(first, "fine-tuning", "training", created))
    recorder.observe(_workload(second, "fine-tuning", "training", created))
    demand = recorder.trace(1796378460.0, 1796378400.0)
    assert [w.name for w in demand.workloads] == [first, second]
    assert [round(w.submit_seconds, 1) for w in demand.workloads] == [0.2, 0.7]


@pytest.mark.parametrize("seen_after", [0.001, 0.5, 1.9])
def test_a_workload_created_and_admitted_in_the_second_before_the_list_is_a_running_line(seen_after):
    """The recorder refines a creationTimestamp (whole seconds) to when it sees the object, which for the list that
    starts a recording (or `whatif --from-cluster`) is after the start; the Workload's quota was reserved before it,
    so it is a running line, submitted at 0 (it was a ValidationError: running lines are submitted at 0)."""
    kinds = queue_kinds([("fine-tuning", "training", "training")])
    created = 1_796_640_000.0  # 2026-12-07T10:40:00Z
    start = created + 0.3
    recorder = TraceRecorder(kinds, clock=lambda: start + seen_after)
    reserved = ("QuotaReserved", "True", "2026-12-07T10:40:00Z", "QuotaReserved", "")
    recorder.observe(_workload("job-now", "fine-tuning", "training", "2026-12-07T10:40:00Z", [reserved]))
    (line,) = recorder.trace(until=start + seen_after, start=start).workloads
    assert (line.name, line.submit_seconds) == ("job-now", 0.0)
    assert line.running_since_seconds == pytest.approx(-0.3)
