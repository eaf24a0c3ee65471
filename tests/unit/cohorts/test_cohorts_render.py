"""Rendering a fixed StatusView as JSON and as a table."""
import json

from kueue_cohorts.cohorts.render import JSON_KIND, as_json, table
from kueue_cohorts.cohorts.view import (
    CohortView,
    Preemption,
    QueueView,
    ResourceRow,
    StatusView,
    WorkloadRef,
    WorkloadRow,
    workload_row,
)

GPU = "nvidia.com/gpualloc"


def _view() -> StatusView:
    inference = QueueView(
        name="c12-inference-cq", cohort="c12-shared", role="inference", active=True, admitted_workloads=0,
        reserving_workloads=0, pending_workloads=0,
        resources=(ResourceRow("c12-default", GPU, "1", "0", None, "0", "0", "0", "1"),), workloads=())
    training = QueueView(
        name="c12-training-cq", cohort="c12-shared", role="training", active=False, admitted_workloads=1,
        reserving_workloads=1, pending_workloads=1,
        resources=(ResourceRow("c12-default", GPU, "0", "1", None, "1", "1", "1", "0"),
                   ResourceRow("c12-default", "memory", "0", "8Gi", "2Gi", "1Gi", "1Gi", "1Gi", "0")),
        workloads=(WorkloadRow("c12-training", "job-a", "u-a", "c12-training-cq", "c12-training-lq", "admitted",
                               10, "c12-training-prio", "2026-11-30T21:00:00Z", usage={GPU: "1"}),
                   WorkloadRow("c12-training", "job-b", "u-b", "c12-training-cq", "c12-training-lq", "pending",
                               10, "c12-training-prio", "2026-11-30T21:00:05Z", "InCohortReclamation", "Preempted")))
    preemption = Preemption("2026-11-30T20:59:00Z", "InCohortReclamation",
                            WorkloadRef("c12-training", "job-b", "u-b", "c12-training-cq"),
                            WorkloadRef("c12-inference", "serve", "u-s", "c12-inference-cq"), 2, "Preempted to ...")
    return StatusView(time="2026-11-30T21:00:10Z", cohorts=(
        CohortView("c12-shared", (), (inference, training), (preemption,)),), unavailable={"events": "403 Forbidden"})


def test_json_document_names_every_field_as_kueue_does():
    doc = as_json(_view(), {"stack": "dev"})
    assert json.loads(json.dumps(doc)) == doc
    assert list(doc) == ["kind", "time", "stack", "unavailable", "cohorts"]
    assert (doc["kind"], doc["time"], doc["unavailable"]) == (JSON_KIND, "2026-11-30T21:00:10Z",
                                                            {"events": "403 Forbidden"})
    [cohort] = doc["cohorts"]
    assert (cohort["name"], cohort["cohortQuota"]) == ("c12-shared", [])
    training = cohort["clusterQueues"][1]
    assert training["resources"][1] == {
        "flavor": "c12-default", "resource": "memory", "nominalQuota": "0", "borrowingLimit": "8Gi",
        "lendingLimit": "2Gi", "usage": "1Gi", "reserved": "1Gi", "borrowed": "1Gi", "lent": "0"}
    assert cohort["clusterQueues"][0]["resources"][0]["lendingLimit"] is None
    assert [w["name"] for w in training["workloads"]["admitted"]] == ["job-a"]
    assert [w["name"] for w in training["workloads"]["pending"]] == ["job-b"]
    assert training["workloads"]["pending"][0]["reason"] == "InCohortReclamation"
    assert (training["active"], training["pendingWorkloads"]) == (False, 1)
    assert cohort["preemptions"] == [{
        "time": "2026-11-30T20:59:00Z", "reason": "InCohortReclamation",
        "victim": {"namespace": "c12-training", "name": "job-b", "uid": "u-b", "clusterQueue": "c12-training-cq"},
        "preemptor": {"namespace": "c12-inference", "name": "serve", "uid": "u-s", "clusterQueue": "c12-inference-cq"},
        "count": 2, "message": "Preempted to ..."}]


def _cells(text: str, first: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(first))
    return line.split()


def test_table_has_one_row_per_queue_and_resource_with_unset_limits_as_dash():
    text = table(_view(), "stack dev")
    lines = text.splitlines()
    assert lines[:2] == ["stack dev", "at 2026-11-30T21:00:10Z"]
    assert "cohort c12-shared" in lines
    assert _cells(text, "CLUSTERQUEUE  ")[:9] == ["CLUSTERQUEUE", "FLAVOR", "RESOURCE", "NOMINALQUOTA",
                                                  "BORROWINGLIMIT", "LENDINGLIMIT", "USAGE", "BORROWED", "LENT"]
    assert _cells(text, "c12-inference-cq (inference)") == [
        "c12-inference-cq", "(inference)", "c12-default", GPU, "1", "0", "-", "0", "0", "1"]
    assert _cells(text, "c12-training-cq (training) INACTIVE") == [
        "c12-training-cq", "(training)", "INACTIVE", "c12-default", GPU, "0", "1", "-", "1", "1", "0"]
    assert _cells(text, "c12-default  memory") == ["c12-default", "memory", "0", "8Gi", "2Gi", "1Gi", "1Gi", "0"]


def test_table_lists_workloads_preemptions_and_what_could_not_be_read():
    text = table(_view())
    assert _cells(text, "c12-training-cq  admitted") == [
        "c12-training-cq", "admitted", "c12-training/job-a", "10", "2026-11-30T21:00:00Z", f"{GPU}=1"]
    assert "preempted (InCohortReclamation), waiting for quota" in text
    assert _cells(text, "2026-11-30T20:59:00Z") == [
        "2026-11-30T20:59:00Z", "InCohortReclamation", "c12-training/job-b", "c12-training-cq",
        "c12-inference/serve", "c12-inference-cq"]
    assert text.splitlines()[-1] == "note: could not list events: 403 Forbidden"


def test_columns_line_up_whatever_the_name_lengths():
    text = table(_view())
    header = next(ln for ln in text.splitlines() if ln.strip().startswith("CLUSTERQUEUE  "))
    rows = [ln for ln in text.splitlines() if "c12-default" in ln]
    end_of_lent = header.index("LENT") + len("LENT")
    assert rows and all(len(r) == end_of_lent for r in rows)  # right-aligned numbers end under their header


def test_an_empty_cluster_says_so():
    assert "no ClusterQueue on this cluster" in table(StatusView(time="t", cohorts=()))


def test_a_dispatched_workload_says_which_worker_it_runs_on():
    """MultiKueue (issue 33): a Workload the manager dispatched carries status.clusterName; the table and the JSON name
    the worker it runs on, and a Workload of this cluster names none."""
    wl = {"metadata": {"namespace": "c12-training", "name": "job-a", "uid": "u-a"},
          "spec": {"queueName": "c12-training-lq", "priority": 10},
          "status": {"clusterName": "worker-1", "admission": {"clusterQueue": "c12-training-cq",
                                                              "podSetAssignments": []},
                     "conditions": [{"type": "Admitted", "status": "True",
                                     "lastTransitionTime": "2026-11-30T21:00:00Z"}]}}
    row = workload_row(wl, {})
    assert row.cluster == "worker-1"
    local = workload_row({**wl, "status": {**wl["status"], "clusterName": None}}, {})
    assert local.cluster == ""
    view = _view()
    training = view.cohorts[0].cluster_queues[1]
    dispatched = QueueView(**{**training.__dict__, "workloads": (row,)})
    shown = StatusView(view.time, (CohortView("c12-shared", (), (view.cohorts[0].cluster_queues[0], dispatched),
                                              ()),), {})
    assert "on worker worker-1" in table(shown)
    [cohort] = as_json(shown)["cohorts"]
    assert cohort["clusterQueues"][1]["workloads"]["admitted"][0]["cluster"] == "worker-1"
