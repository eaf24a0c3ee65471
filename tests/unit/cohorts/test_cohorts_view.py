"""The status view from fixed Kueue objects: quotas, usage, borrowed, derived lent, Workloads and preemptions."""
from decimal import Decimal

from cohorts_fixtures import (
    GPU,
    T0,
    borrowing_snapshot,
    cond,
    cq,
    event,
    preempted_message,
    preempted_snapshot,
    workload,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.cohorts.live import Snapshot
from kueue_cohorts.cohorts.view import build_view, preemptions, rfc3339
from kueue_cohorts.components.settings.quantity import parse


def _rows(view, queue):
    q = next(q for c in view.cohorts for q in c.cluster_queues if q.name == queue)
    return {r.resource: r for r in q.resources}


def test_training_borrowing_shows_borrowed_and_the_inference_queue_lends_it():
    view = build_view(borrowing_snapshot())
    assert [c.name for c in view.cohorts] == ["c12-shared"]
    assert [q.name for q in view.cohorts[0].cluster_queues] == ["c12-inference-cq", "c12-training-cq"]
    training, inference = _rows(view, "c12-training-cq"), _rows(view, "c12-inference-cq")
    assert (training[GPU].nominal_quota, training[GPU].borrowing_limit, training[GPU].usage,
            training[GPU].borrowed, training[GPU].lent) == ("0", "1", "1", "1", "0")
    assert (inference[GPU].borrowing_limit, inference[GPU].usage, inference[GPU].lent) == ("0", "0", "1")
    assert (inference["memory"].nominal_quota, inference["memory"].lent) == ("8Gi", "1Gi")
    assert training["memory"].lending_limit is None


def test_workloads_admitted_and_pending_with_their_queue_and_reason():
    view = build_view(preempted_snapshot())
    inf = next(q for q in view.cohorts[0].cluster_queues if q.name == "c12-inference-cq")
    trn = next(q for q in view.cohorts[0].cluster_queues if q.name == "c12-training-cq")
    [serve] = inf.workloads
    assert (serve.state, serve.name, serve.priority, serve.since) == (
        "admitted", "job-serve-x9y8z", 1000, "2026-11-30T21:00:03Z")
    assert serve.usage == {"cpu": "1", "memory": "1Gi", GPU: "1"}
    [train] = trn.workloads  # pending: its ClusterQueue comes from its LocalQueue
    assert (train.state, train.cluster_queue, train.reason) == ("pending", "c12-training-cq", "InCohortReclamation")
    assert train.usage == {}


def test_finished_workloads_are_left_out():
    snap = borrowing_snapshot()
    snap.workloads[0]["status"]["conditions"].append(cond("Finished", "True", "Succeeded", "2026-11-30T21:01:00Z"))
    assert all(not q.workloads for c in build_view(snap).cohorts for q in c.cluster_queues)


def test_a_preemption_names_reason_victim_preemptor_and_time_once():
    """The victim's Preempted condition and Kueue's two events of the same preemption make one record; the reason
    code comes from the condition, the names from the events and Workloads."""
    [p] = build_view(preempted_snapshot()).cohorts[0].preemptions
    assert (p.time, p.reason, p.count) == ("2026-11-30T21:00:01Z", "InCohortReclamation", 1)
    assert (p.victim.label(), p.victim.cluster_queue) == ("c12-training/job-finetune-a1b2c", "c12-training-cq")
    assert (p.preemptor.label(), p.preemptor.cluster_queue) == ("c12-inference/job-serve-x9y8z", "c12-inference-cq")


def test_preemptions_are_remembered_after_re_admission_and_after_the_preemptor_is_gone():
    """On re-admission Kueue resets Preempted to False ("Previously: ..."); the preemptor's Job may be deleted.
    The events still name both, and the reason is read back from Kueue's words."""
    snap = preempted_snapshot()
    train = snap.workloads[0]
    train["status"]["conditions"] = [
        cond("Admitted", "True", "Admitted", "2026-11-30T21:05:00Z"),
        cond("Preempted", "False", "QuotaReserved", "2026-11-30T21:05:00Z",
             "Previously: " + preempted_message("uid-serve"))]
    snap.workloads = [train]  # the inference Workload is gone
    [p] = preemptions(snap)
    assert (p.reason, p.time, p.preemptor.label(), p.victim.label()) == (
        "InCohortReclamation", "2026-11-30T21:00:01Z", "c12-inference/job-serve-x9y8z",
        "c12-training/job-finetune-a1b2c")


def test_a_reset_condition_without_events_still_counts_with_an_unknown_time():
    snap = preempted_snapshot()
    snap.events = []
    snap.workloads[0]["status"]["conditions"] = [cond(
        "Preempted", "False", "QuotaReserved", "2026-11-30T21:05:00Z",
        "Previously: " + preempted_message("uid-serve", why="reclamation within the cohort while borrowing"))]
    [p] = preemptions(snap)
    assert (p.reason, p.time, p.preemptor.label()) == ("InCohortReclaimWhileBorrowing", None,
                                                       "c12-inference/job-serve-x9y8z")


def test_preemptions_are_newest_first_and_limited_per_cohort():
    snap = preempted_snapshot()
    snap.workloads[0]["status"]["conditions"] = []
    snap.events = [event("Preempted", "c12-training", f"job-{i}", f"uid-{i}", preempted_message("uid-serve"),
                         f"2026-11-30T21:0{i}:00Z") for i in range(5)]
    view = build_view(snap, latest=3)
    assert [p.victim.name for p in view.cohorts[0].preemptions] == ["job-4", "job-3", "job-2"]


def test_only_the_requested_cohorts_and_an_absent_one_shows_empty():
    snap = borrowing_snapshot()
    snap.cluster_queues.append(cq("other-cq", "other", "", [("cpu", "1", None, None)]))
    assert [c.name for c in build_view(snap).cohorts] == ["c12-shared", "other"]
    view = build_view(snap, cohorts=["c12-shared", "research"])
    assert [(c.name, len(c.cluster_queues)) for c in view.cohorts] == [("c12-shared", 2), ("research", 0)]


def test_a_cohort_object_lends_its_own_quota_too():
    snap = Snapshot(time=T0, cluster_queues=[
        cq("a-cq", "pool", "tenant", [(GPU, "2", None, None)], {GPU: ("4", "2")}),
        cq("b-cq", "pool", "tenant", [(GPU, "2", None, None)], {GPU: ("0", "0")})],
        cohorts=[{"metadata": {"name": "pool"}, "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
            {"name": "c12-default", "resources": [{"name": GPU, "nominalQuota": "2"}]}]}]}}])
    view = build_view(snap)
    [quota] = view.cohorts[0].quota
    assert (quota.nominal_quota, quota.lent) == ("2", "1")
    assert _rows(view, "b-cq")[GPU].lent == "1"
    assert _rows(view, "a-cq")[GPU].lent == "0"


@st.composite
def _cohort(draw):
    """A cohort of 1-4 ClusterQueues on one resource with random quotas, lendingLimits and usage that Kueue could
    report (borrowed = usage above nominalQuota, never more than the others' idle lendable quota)."""
    n = draw(st.integers(1, 4))
    queues = []
    for i in range(n):
        nominal = draw(st.integers(0, 8))
        lending = draw(st.one_of(st.none(), st.integers(0, nominal)))
        queues.append([f"q{i}-cq", nominal, lending, draw(st.integers(0, nominal))])
    borrower = draw(st.integers(0, n - 1))
    idle = sum((q[1] if q[2] is None else q[2]) - max(0, q[3] - (q[1] - (q[1] if q[2] is None else q[2])))
               for j, q in enumerate(queues) if j != borrower)
    extra = draw(st.integers(0, max(0, idle)))
    queues[borrower][3] = queues[borrower][1] + extra
    return queues, borrower, extra


@settings(max_examples=200, deadline=None)
@given(_cohort())
def test_lent_adds_up_to_what_is_borrowed_and_no_lender_lends_more_than_it_has_idle(case):
    queues, borrower, extra = case
    snap = Snapshot(time=T0, cluster_queues=[
        cq(name, "pool", "tenant", [(GPU, str(nominal), None, None if lending is None else str(lending))],
           {GPU: (str(used), str(max(0, used - nominal)))}) for name, nominal, lending, used in queues])
    rows = [_rows(build_view(snap), name)[GPU] for name, *_ in queues]
    nano = Decimal("1e-9")  # a split share is shown rounded up to nano units, as apimachinery does
    assert abs(sum(parse(r.lent) for r in rows) - extra) <= len(rows) * nano
    for (_name, nominal, lending, used), row in zip(queues, rows, strict=False):
        lendable = nominal if lending is None else lending
        assert parse(row.lent) <= max(0, lendable - max(0, min(used, nominal) - (nominal - lendable))) + nano
        assert parse(row.borrowed) == max(0, used - nominal)


def test_api_times_are_normalised_to_utc_seconds():
    assert rfc3339("2026-11-30T21:00:01.123456Z") == "2026-11-30T21:00:01Z"
    assert rfc3339("2026-11-30T22:00:01+01:00") == "2026-11-30T21:00:01Z"
    assert rfc3339(T0) == "2026-11-30T21:00:00Z"
    assert rfc3339(None) is None and rfc3339("yesterday") is None


def test_workload_without_admission_or_conditions_is_pending_on_its_local_queue():
    snap = borrowing_snapshot()
    snap.workloads = [workload("c12-training", "fresh", "u1", "c12-training-lq", 10)]
    [w] = _queue(build_view(snap), "c12-training-cq").workloads
    assert (w.state, w.since, w.reason) == ("pending", "2026-11-30T20:59:00Z", "")


def _queue(view, name):
    return next(q for c in view.cohorts for q in c.cluster_queues if q.name == name)


def test_fair_sharing_weighted_share_is_shown_where_kueue_records_it():
    snap = borrowing_snapshot()
    snap.cluster_queues[0]["status"]["fairSharing"] = {"weightedShare": 250}
    snap.cohorts = [{"metadata": {"name": "c12-shared"}, "spec": {}, "status": {"fairSharing": {"weightedShare": 0}}}]
    view = build_view(snap)
    shares = (_queue(view, "c12-training-cq").weighted_share, _queue(view, "c12-inference-cq").weighted_share)
    assert shares == (250, None)
    assert view.cohorts[0].weighted_share == 0


def test_an_admitted_workload_being_evicted_says_so():
    snap = borrowing_snapshot()
    snap.workloads[0]["status"]["conditions"].append(
        cond("Evicted", "True", "Preempted", "2026-11-30T21:00:01Z", preempted_message("uid-serve")))
    [w] = _queue(build_view(snap), "c12-training-cq").workloads
    assert (w.state, w.reason, w.usage[GPU]) == ("admitted", "Evicted", "1")
