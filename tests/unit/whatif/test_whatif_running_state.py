"""The state at the change (issue 41, item 1): a trace begins with what runs, the head quota is applied to it as Kueue
applies a ClusterQueue update (nothing running is evicted, usage above the new nominalQuota keeps new workloads
out until it drains: kueue#5176, pkg/cache/scheduler/cache.go UpdateClusterQueue, v0.19.2), the warning comes
first with how long until it drains, and `trace record` writes the running state from the live Workloads."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.whatif.kueue import setup_from_objects
from kueue_cohorts.whatif.record import TraceRecorder, queue_kinds
from kueue_cohorts.whatif.report import compare, over_quota_alert, quota_below_use, report
from kueue_cohorts.whatif.scheduler import REQUEUE_BATCH_SECONDS, RUNNING_AT_START, simulate
from kueue_cohorts.whatif.trace import Trace, TraceError
from tests.unit.whatif.kueue_objects import cluster_queue, flavor, local_queue, priority, trace, workload
from tests.unit.whatif.test_whatif_record import _workload


def _alone(nominal, flavors=("gpu",)):
    """One ClusterQueue without a cohort: `nominal` GPUs in each of `flavors`."""
    return setup_from_objects([
        *[flavor(f) for f in flavors],
        cluster_queue("a-cq", None, [(f, {"nvidia.com/gpu": (nominal, None)}) for f in flavors]),
        local_queue("a", "a-lq", "a-cq"), priority("research", 100)])


def _events(result, name):
    return [(e.time, e.kind) for e in result.events if e.workload == name]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 4), st.integers(60, 7200), st.integers(1, 3600))
def test_running_work_is_never_evicted_and_new_work_waits_until_usage_falls(running, nominal, new, left, done):
    demand = trace(workload("run", 0, "a", gpus=running, duration=done + left, running_since_seconds=-done),
                   workload("new", 10, "a", gpus=new, duration=100), horizon=20_000)
    result = simulate(_alone(nominal), demand)
    assert _events(result, "run")[:3] == [(0, "submitted"), (0, "admitted"), (0, "started")]
    assert (left, "finished") in _events(result, "run") and not result.preemptions()
    admitted = [t for t, kind in _events(result, "new") if kind == "admitted"]
    if new > nominal:
        assert admitted == []  # larger than the queue: never
    elif running + new <= nominal:
        assert admitted == [10]
    else:  # the running work holds the quota over the new nominal until it ends
        assert admitted == [max(10, left) + REQUEUE_BATCH_SECONDS]


@pytest.mark.parametrize("done, expected_lost", [(0, 0), (300, 300), (1000, 400)])
def test_a_running_workload_preempted_loses_the_work_since_its_last_checkpoint_before_the_change(done,
                                                                                                   expected_lost):
    setup = setup_from_objects([
        flavor("gpu"), cluster_queue("a-cq", None, [("gpu", {"nvidia.com/gpu": (4, None)})]),
        local_queue("a", "a-lq", "a-cq"), priority("research", 100), priority("urgent", 1000)])
    demand = trace(workload("run", 0, "a", gpus=4, duration=5000, running_since_seconds=-done,
                            checkpoint_interval_seconds=600),
                   workload("urgent", 0, "a", gpus=4, duration=100, priority_class="urgent"), horizon=20_000)
    result = simulate(setup, demand)
    [preempted] = [e for e in result.events if e.kind == "preempted"]
    assert (preempted.workload, preempted.by, preempted.lost) == ("run", "urgent", expected_lost)


def test_a_running_workload_stays_in_the_flavor_it_was_admitted_in():
    demand = trace(workload("run", 0, "a", gpus=2, duration=500, running_since_seconds=-10,
                            flavors={"nvidia.com/gpu": "b"}),
                   workload("pinned", 0, "a", gpus=2, duration=500, running_since_seconds=-10), horizon=1000)
    result = simulate(_alone(2, flavors=("a", "b")), demand)
    assert result.workloads["run"].flavors == {"nvidia.com/gpu": "b"}
    assert result.workloads["pinned"].flavors == {"nvidia.com/gpu": "a"}  # none named: the first flavor


@pytest.mark.parametrize("base_nominal, head_nominal, warned", [(8, 2, True), (8, 3, True), (8, 4, False),
                                                                (2, 2, False), (3, 2, True)])
def test_a_change_that_puts_a_quota_below_its_use_is_the_first_alert_with_the_drain_time(base_nominal,
                                                                                         head_nominal, warned):
    demand = trace(workload("run", 0, "a", gpus=4, duration=7200, running_since_seconds=-3600),
                   workload("new", 10, "a", gpus=1, duration=100), horizon=20_000)
    base, head = simulate(_alone(base_nominal), demand), simulate(_alone(head_nominal), demand)
    found = quota_below_use(head, base)
    if not warned:
        assert found == []
        return
    [over] = found
    assert (over.cluster_queue, over.flavor, over.resource, over.in_use, over.nominal, over.base_nominal,
            over.drained_seconds) == ("a-cq", "gpu", "nvidia.com/gpu", 4, head_nominal, base_nominal, 3600)
    alert = over_quota_alert(over)
    assert alert == (f"`a-cq` quota below its current use: 4 nvidia.com/gpu in flavor gpu running at the change, "
                     f"nominalQuota {head_nominal} (base {base_nominal}); nothing running is evicted (kueue#5176), "
                     "its new workloads get in only on what the cohort still lends until its use falls to the "
                     "nominalQuota: drains 60.0 min after the change in this trace")
    comparison = compare(report(base), report(head), (alert,))
    assert comparison.alerts[0] == alert


def test_usage_that_never_drains_within_the_trace_says_so():
    demand = trace(workload("serve", 0, "a", gpus=4, running_since_seconds=-60), horizon=3600)
    [over] = quota_below_use(simulate(_alone(2), demand))
    assert over.drained_seconds is None and over_quota_alert(over).endswith("does not drain within the trace")


def test_running_workloads_do_not_count_as_waiting():
    demand = trace(workload("run", 0, "a", gpus=1, duration=4200, running_since_seconds=-3600),
                   workload("new", 100, "a", gpus=1, duration=100), horizon=5000)
    result = simulate(_alone(4), demand)
    assert [e.reason for e in result.events if e.kind == "admitted"] == [RUNNING_AT_START, None]
    row = report(result).row("a-cq")
    assert row.admission_wait.count == 1 and row.never_admitted == 0
    assert row.gpu_hours == pytest.approx((600 + 100) / 3600)  # held from the change on: 600 s and 100 s


@pytest.mark.parametrize("fields, key, rule", [
    ({"submitSeconds": 5, "runningSinceSeconds": -10}, "(line)", "is submitted at 0"),
    ({"runningSinceSeconds": -600, "durationSeconds": 600}, "(line)", "ends before the trace starts"),
    ({"flavors": {"nvidia.com/gpu": "a"}}, "(line)", "flavors describe a workload running at the start"),
    ({"runningSinceSeconds": 5}, "runningSinceSeconds", "Input should be less than or equal to 0"),
])
def test_a_running_line_that_cannot_be_is_a_problem_at_its_line(fields, key, rule):
    line = {"name": "r", "submitSeconds": 0, "namespace": "a", "localQueue": "a-lq",
            "requests": {"nvidia.com/gpu": 1}, **fields}
    with pytest.raises(TraceError) as info:
        Trace.parse(json.dumps(line), "t.jsonl")
    [problem] = info.value.problems
    assert problem.key == f"t.jsonl:1 {key}" and rule in problem.rule


def test_record_begins_the_trace_with_what_runs_when_it_starts():
    kinds = queue_kinds([("fine-tuning", "training", "training"), ("serving", "inference", "inference")])
    recorder = TraceRecorder(kinds)
    reserved = ("QuotaReserved", "True", "2026-12-04T09:00:00Z", "QuotaReserved", "")
    running = _workload("old", "fine-tuning", "training", "2026-12-04T08:59:00Z", [reserved])
    running["status"]["admission"] = {"clusterQueue": "training-cq", "podSetAssignments": [
        {"name": "main", "flavors": {"nvidia.com/gpu": "h100", "cpu": "h100"}, "count": 2}]}
    done = _workload("done", "fine-tuning", "training", "2026-12-04T08:00:00Z", [
        ("QuotaReserved", "True", "2026-12-04T08:00:10Z", "QuotaReserved", ""),
        ("Finished", "True", "2026-12-04T08:30:00Z", "Succeeded", "")])
    waiting = _workload("waiting", "fine-tuning", "training", "2026-12-04T09:30:00Z")
    later = _workload("later", "fine-tuning", "training", "2026-12-04T10:00:30Z")
    for obj in (running, done, waiting, later):
        recorder.observe(obj)
    start = recorder.seen["fine-tuning/old"].reserved + 3600  # the recording starts at 10:00
    demand = recorder.trace(start + 600, start)
    by_name = {w.name: w for w in demand.workloads}
    assert set(by_name) == {"old", "waiting", "later"}  # finished before the start: not in the trace
    old = by_name["old"]
    assert (old.submit_seconds, old.running_since_seconds, old.duration_seconds) == (0, -3600, None)
    assert old.flavors == {"nvidia.com/gpu": "h100", "cpu": "h100"}
    assert (by_name["waiting"].submit_seconds, by_name["waiting"].running_since_seconds) == (0, None)
    assert by_name["later"].submit_seconds == 30
    assert Trace.parse("\n".join(demand.lines())) == demand  # a recorded running state reads back
