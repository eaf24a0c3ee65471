"""Issue 31 in the sandbox: Prometheus (`python -m kueue_cohorts.sandbox up --with-prometheus`) scraping the real Kueue
manager
with the stack's metrics on, the guide's round trip (training borrows, inference reclaims, training comes back), then
`python -m kueue_cohorts.cohorts report` checked against what the test did: training's borrowed GPU-seconds (the times
Kueue
recorded on the Workload, within a scrape interval per change), the preemption with cause InCohortReclamation and
inference's admission wait (in the histogram bucket of the wait Kueue recorded). Every Kueue query of the dashboard
returns data from the same Prometheus, and the stack's alert rules evaluate there without error; the
inference-borrowing alert fires when the inference queue is made to borrow and clears after `up --refresh`."""

from __future__ import annotations

import io
import json
import math
import time
from datetime import datetime

import pytest
import requests
import yaml
from e2e_support import KUEUE, REPO, SLICE, admitted_in, condition, is_true, wait_for
from kubernetes import client as k8s

from kueue_cohorts.cohorts import cli as cohorts_cli
from kueue_cohorts.components.model import dashboard
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.sandbox import cli as sandbox_cli
from kueue_cohorts.sandbox import prometheus as sandbox_prometheus
from tests.helpers import stack_raw

SCRAPE = 5.0  # sandbox.prometheus.SCRAPE_INTERVAL
GPU = "nvidia.com/gpualloc"
#: Kueue v0.19.2's admission wait buckets (pkg/metrics/metrics.go generateExponentialBuckets(16)).
BUCKETS = [1.0] + [2.5 * 2 ** i for i in range(15)] + [math.inf]


@pytest.fixture(scope="module")
def prometheus(sandbox, dev_stack):
    """The session sandbox with Prometheus started through the CLI's own entry point; stopped after the module."""
    assert sandbox_cli.main(["up", "--stack", "dev", "--with-prometheus"]) == 0
    url = sandbox_prometheus.url(sandbox.paths)
    assert url, "up --with-prometheus started no Prometheus"
    wait_for(lambda: _query(url, 'up{job="kueue"} == 1'), 60, "Prometheus to scrape Kueue's metrics")
    yield url
    sandbox.stop_prometheus()


def _query(url: str, expr: str, at: float | None = None) -> list[dict]:
    params = {"query": expr, **({"time": at} if at else {})}
    body = requests.get(f"{url}/api/v1/query", params=params, timeout=10).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def _range(url: str, expr: str, start: float, end: float) -> list[dict]:
    body = requests.get(f"{url}/api/v1/query_range", params={"query": expr, "start": start, "end": end, "step": 5},
                        timeout=10).json()
    assert body["status"] == "success", (expr, body)
    return body["data"]["result"]


def _t(cond: dict) -> float:
    return datetime.fromisoformat(cond["lastTransitionTime"].replace("Z", "+00:00")).timestamp()


def _bucket_bounds(seconds: float) -> tuple[float, float]:
    """(lower, upper] of the admission wait bucket holding `seconds`."""
    upper = next(b for b in BUCKETS if seconds <= b)
    index = BUCKETS.index(upper)
    return (BUCKETS[index - 1] if index else 0.0), upper


def test_report_and_dashboard_follow_the_round_trip(sandbox, cluster, clean_dev_jobs, prometheus):
    start = time.time()
    training = cluster.submit_job("c12-training", "finetune", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    wl = wait_for(lambda: (w := cluster.workload_of(training)) and admitted_in(w) and w, 90, "training admitted")
    borrowed_from = _t(condition(wl, "QuotaReserved"))
    wait_for(lambda: _query(prometheus, f'kueue_cluster_queue_resource_reservation{{cluster_queue="c12-training-cq",'
                                        f'resource="{GPU}"}} == 1'), 30, "Prometheus to see training's GPU")
    series_seen = time.time()  # the training queue's reservation series is in Prometheus from here on

    inference = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
    preempted = wait_for(lambda: (w := cluster.workload_of(training)) and is_true(w, "Preempted")
                         and not is_true(w, "QuotaReserved") and w, 90, "training preempted and its quota released")
    assert condition(preempted, "Preempted")["reason"] == "InCohortReclamation"
    borrowed_until = _t(condition(preempted, "QuotaReserved"))
    served = wait_for(lambda: (w := cluster.workload_of(inference)) and admitted_in(w) and w, 90, "inference admitted")
    waited = _t(condition(served, "Admitted")) - datetime.fromisoformat(
        served["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()

    cluster.delete_job(inference)
    back = wait_for(lambda: (w := cluster.workload_of(training)) and admitted_in(w) and w, 120, "training back")
    again_from = _t(condition(back, "QuotaReserved"))
    time.sleep(3 * SCRAPE)  # let it borrow for a few scrapes
    cluster.delete_job(training)
    again_until = time.time()
    wait_for(lambda: _query(prometheus, f'kueue_cluster_queue_resource_reservation{{cluster_queue="c12-training-cq",'
                                        f'resource="{GPU}"}} == 0'), 30, "Prometheus to see training's GPU return")
    time.sleep(SCRAPE)

    since = f"{math.ceil(time.time() - start) + 2}s"
    out, err = io.StringIO(), io.StringIO()
    code = cohorts_cli.main(["report", "--stack", "dev", "--since", since, "--output", "json", "--prometheus",
                             prometheus, "--step", "1"], out, err)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    hours = {(h["cluster_queue"], h["resource"]): h for h in doc["hours"]}
    queues = {q["cluster_queue"]: q for q in doc["queues"]}

    truth = (borrowed_until - borrowed_from) + (again_until - again_from)  # GPU-seconds (1 GPU slice each time)
    reported = hours[("c12-training-cq", GPU)]["borrowed"] * 3600
    edges = 4  # two borrowing intervals; each edge is seen up to one scrape late, timestamps to the second
    assert abs(reported - truth) <= edges * (SCRAPE + 1), (reported, truth)
    assert hours[("c12-training-cq", GPU)]["owned"] == 0  # training's nominalQuota is 0
    assert hours[("c12-inference-cq", GPU)]["borrowed"] == 0
    assert abs(hours[("c12-inference-cq", GPU)]["lent"] * 3600 - reported) <= 1  # inference lent what training took

    seen = {m: _query(prometheus, m) for m in ("kueue_evicted_workloads_total", "kueue_preempted_workloads_total")}
    assert queues["c12-training-cq"]["preempted"] == 1, (queues, seen)
    assert queues["c12-inference-cq"]["preempting"] == {"InCohortReclamation": 1}, (queues, seen)
    inference_wait = queues["c12-inference-cq"]["admission_wait_p50"]
    assert queues["c12-inference-cq"]["admissions"] == 1
    # the API's times are whole seconds: the wait Kueue measured lies within 1 s of `waited`; the report's value
    # (interpolated in its bucket) must come from a bucket that such a wait can fall into
    low, high = _bucket_bounds(inference_wait)
    assert low < waited + 1 and high >= waited - 1, (inference_wait, (low, high), waited)

    # A histogram series is born with its first observation, so rate() sees an admission only from the second one
    # on: one more inference admission gives the admission wait panel something to draw.
    # (Kueue's counters hold every admission since its manager started, earlier files' too: count from what is there)
    admissions = 'sum(kueue_admission_wait_time_seconds_count{cluster_queue="c12-inference-cq"})'
    before = float(_query(prometheus, admissions)[0]["value"][1])
    again = cluster.submit_job("c12-inference", "serve-again", "c12-inference-lq", SLICE,
                               priority_class="c12-inference-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(again)), 90, "the second inference Workload admitted")
    wait_for(lambda: _query(prometheus, f"{admissions} == {before + 1}"), 30, "Prometheus to see the second admission")
    cluster.delete_job(again)
    # a range query evaluates at start + k * step (5 s): the last point before `end` must come after the scrape that
    # saw the second admission, or no point's rate() window holds the increase (the panel is empty there)
    time.sleep(SCRAPE + 1)

    # every dashboard query over Kueue's metrics returns data (the trainer's need a real training pod: none here)
    settings = parse_settings(stack_raw("dev"))
    # the held-hours panels sum a subquery at a 1m resolution over $__range (Prometheus aligns its points to whole
    # minutes; Grafana's ranges are hours): it has a point only once a whole minute has passed since the first
    # sample of the series, and a window of two minutes always holds that minute
    minute = (math.floor(series_seen / 60) + 1) * 60
    time.sleep(max(0.0, minute + 1 - time.time()))
    end = time.time()
    window = f"{max(math.ceil(end - start), 120)}s"
    for query in dashboard.queries(settings):
        if "kueue_cohorts_trainer_" in query.expr:
            continue
        expr = query.expr.replace("$__rate_interval", "1m").replace("$__range", window)
        found = (_query(prometheus, expr, end) if query.instant else _range(prometheus, expr, start, end))
        values = [float(v) for r in found for v in ([r["value"][1]] if "value" in r else
                                                      [p[1] for p in r["values"]])]
        assert any(not math.isnan(v) for v in values), f"no data for {query.panel}: {expr}"

    # the stack's alerts are loaded and evaluate without error on Kueue's real series
    rules = requests.get(f"{prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
    assert [g["name"] for g in rules] == ["kueue-cohorts-dev"]
    assert all(r["health"] == "ok" for r in rules[0]["rules"]), [r for r in rules[0]["rules"] if r["health"] != "ok"]


def _alerts(url: str, name: str) -> list[dict]:
    body = requests.get(f"{url}/api/v1/alerts", timeout=10).json()
    return [a for a in body["data"]["alerts"] if a["labels"]["alertname"] == name and a["state"] == "firing"]


def _dev_file(**admission) -> dict:
    document = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    if admission:
        document["config"]["kueue-cohorts:admission"] = admission
    return document


def _replace_cluster_queue(cluster, name: str, change) -> None:
    """Apply `change` to the live ClusterQueue `name` and replace it, again on a 409 (Kueue writes its status)."""
    for _ in range(10):
        cq = cluster.cluster_queue(name)
        change(cq)
        try:
            cluster.custom.replace_cluster_custom_object(*KUEUE, "clusterqueues", name, cq)
            return
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise
    raise AssertionError(f"ClusterQueue {name} kept changing")


def test_the_borrowing_alert_fires_for_a_queue_made_to_borrow_and_clears_after_up_refresh(
        sandbox, cluster, project, dev_stack, clean_dev_jobs, prometheus):
    """Guardrails in Warn let a hand-made change through: the inference ClusterQueue may borrow, a hand-made lender
    joins the cohort, and a second inference Job borrows; the stack's KueueCohortsInferenceBorrowing fires in the
    sandbox's Prometheus, naming cohort and queue. `up --refresh` with Deny writes borrowingLimit 0 back; once the
    borrower is gone, the alert clears."""
    inference = "c12-inference-cq"
    project.add_stack(dev_stack, _dev_file(validationActions=["Warn", "Audit"]))
    lender = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "e2e-lender"},
              "spec": {"cohortName": "c12-shared", "namespaceSelector": {"matchLabels": {"e2e-lender": "none"}},
                       "resourceGroups": [{"coveredResources": list(SLICE), "flavors": [
                           {"name": "c12-default",
                            "resources": [{"name": r, "nominalQuota": q} for r, q in SLICE.items()]}]}]}}
    try:
        assert project.run(dev_stack, "up").summary.result == "succeeded"

        def may_borrow(cq: dict) -> None:
            for resource in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
                resource["borrowingLimit"] = SLICE[resource["name"]]

        wait_for(lambda: _try(lambda: _replace_cluster_queue(cluster, inference, may_borrow)), 60,
                 "the Warn binding to let the borrowingLimit through")
        cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", lender)
        first = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(first)), 90, "the first inference Job admitted")
        second = cluster.submit_job("c12-inference", "serve-borrowing", "c12-inference-lq", SLICE,
                                    priority_class="c12-inference-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(second)), 90, "the second, borrowing, inference Job admitted")
        firing = wait_for(lambda: _alerts(prometheus, "KueueCohortsInferenceBorrowing"), 60, "the alert to fire")
        labels = firing[0]["labels"]
        assert (labels["cohort"], labels["cluster_queue"], labels["severity"]) == ("c12-shared", inference, "critical")
        assert firing[0]["annotations"]["runbook_url"].endswith("#kueuecohortsinferenceborrowing")
    finally:
        project.add_stack(dev_stack, _dev_file())
        try:
            cluster.custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", "e2e-lender")
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    assert project.run(dev_stack, "up", refresh=True).summary.result == "succeeded"
    limits = {r["name"]: r.get("borrowingLimit") for r in
              cluster.cluster_queue(inference)["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert set(limits.values()) == {"0"}, limits
    cluster.delete_job(second)  # Kueue keeps an admitted Workload when the limit drops: the borrower ends
    wait_for(lambda: not _alerts(prometheus, "KueueCohortsInferenceBorrowing"), 60, "the alert to clear")


def _try(call) -> bool:
    try:
        call()
    except k8s.ApiException as exc:
        if "ValidatingAdmissionPolicy" in str(exc.body):
            return False  # the Deny binding is still loaded
        raise
    return True
