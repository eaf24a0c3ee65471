"""The alerts generated from the stack (components/model/alerts.py, issue 31 item 2), judged by the pinned promtool:
`promtool check rules` on every file each stack renders, and `promtool test rules` feeding each alert the series
of the situation it is meant for (it fires, with its cohort and ClusterQueue) and of its nearest harmless neighbour
(it stays quiet)."""
from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.model.alerts import KUEUE_WEBHOOKS, alerts, prometheus_rule, rules_file, runbook_anchor
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.settings.quoting import promql_string
from tests.helpers import ROOT, stack_raw

STACKS = ("dev", "staging", "prod", "mixed")
FLAVOR = {"flavor": "c12-default", "replica_role": "standalone"}
GPU = "nvidia.com/gpualloc"


@pytest.fixture(scope="module")
def promtool() -> Path:
    return toolchain.ensure(["promtool"])["promtool"]


def _run(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(promtool), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stack", STACKS)
def test_promtool_accepts_every_rendered_rule_file(stack, promtool, tmp_path):
    settings = parse_settings(stack_raw(stack))
    plain = tmp_path / "rules.yaml"
    plain.write_text(yaml.safe_dump(rules_file(settings, stack), sort_keys=False))
    crd = prometheus_rule(settings, stack)
    assert crd["apiVersion"] == "monitoring.coreos.com/v1" and crd["kind"] == "PrometheusRule"
    assert crd["metadata"]["namespace"] == settings.monitoring.namespace
    spec = tmp_path / "prometheusrule-spec.yaml"
    spec.write_text(yaml.safe_dump(crd["spec"], sort_keys=False))
    result = _run(promtool, "check", "rules", "--lint=all", "--lint-fatal", str(plain), str(spec), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert crd["spec"] == rules_file(settings, stack)


@pytest.mark.parametrize("stack", STACKS)
def test_every_alert_names_its_cohort_and_links_its_runbook_section(stack):
    settings = parse_settings(stack_raw(stack))
    readme = (ROOT / "docs" / "monitoring.md").read_text()
    found = alerts(settings, stack)
    assert found, f"the {stack} stack has no alerts to check"
    for alert in found:
        labels = dict(alert.labels)
        assert labels["cohort"] and labels["kueue_cohorts_stack"] == stack and labels["severity"]
        assert alert.runbook == f"docs/monitoring.md#{runbook_anchor(alert.alert)}"
        assert f"\n#### {alert.alert}\n" in readme, f"docs/monitoring.md has no runbook section for {alert.alert}"


def test_the_thresholds_come_from_the_stack():
    raw = stack_raw("dev")
    raw["monitoring"] = {"inferenceAdmissionWait": "2m30s", "trainingPreemptions": 7,
                         "trainingPreemptionWindow": "6h", "headroomFor": "1h", "kueueJob": "kueue-metrics",
                         "runbookUrl": "https://wiki.example.com/gpu"}
    by_name = {a.alert: a for a in alerts(parse_settings(raw), "dev")}
    assert by_name["KueueCohortsInferencePending"].for_ == "150s"
    assert by_name["KueueCohortsInferenceAdmissionWait"].expr.endswith("> 150")
    assert by_name["KueueCohortsTrainingPreemptedOften"].expr.endswith("[21600s])) > 7")
    assert by_name["KueueCohortsQueueWithoutHeadroom"].for_ == "3600s"
    assert by_name["KueueCohortsKueueDown"].expr == 'absent(up{job="kueue-metrics"} == 1)'
    assert by_name["KueueCohortsInferenceBorrowing"].runbook == "https://wiki.example.com/gpu#kueuecohortsinferenceborrowing"


def test_the_webhook_names_are_those_of_the_pinned_kueue():
    entry = toolchain.versions.load().entries["kueue"]
    manifests = toolchain.module_dir(entry.module, entry.module_version) / "config/components/webhook/manifests.yaml"
    names = {hook["name"] for doc in yaml.safe_load_all(manifests.read_text()) if doc
             for hook in doc.get("webhooks", [])}
    assert set(KUEUE_WEBHOOKS) == names - {"mjobset.kb.io", "vjobset.kb.io"}


# --- promtool test rules: each alert against the series of its situation -------------------------------------------


def _series(metric: str, values: str, **labels: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


def _queue(metric: str, cq: str, values: str, cohort: str = "c12-shared") -> dict[str, str]:
    return _series(f"kueue_cluster_queue_{metric}", values, cohort=cohort, cluster_queue=cq, resource=GPU, **FLAVOR)


def _expected(alert: str, **labels: str) -> dict[str, Any]:
    return {"exp_labels": {"alertname": alert, "kueue_cohorts_stack": "dev", **labels}}


INF, TRN = "c12-inference-cq", "c12-training-cq"
QUEUE_LABELS = {"cohort": "c12-shared", "flavor": "c12-default", "resource": GPU}

#: (alert, input series, eval time, expected alerts); an empty expectation means the alert stays quiet.
CASES: list[tuple[str, list[dict[str, str]], str, list[dict[str, Any]]]] = [
    ("KueueCohortsInferenceBorrowing", [_queue("resource_reservation", INF, "1x5"),
                                        _queue("nominal_quota", INF, "0.5x5")], "2m",
     [_expected("KueueCohortsInferenceBorrowing", cluster_queue=INF, severity="critical", **QUEUE_LABELS)]),
    ("KueueCohortsInferenceBorrowing", [_queue("resource_reservation", INF, "1x5"),
                                        _queue("nominal_quota", INF, "1x5")], "2m", []),
    ("KueueCohortsInferencePending", [_series("kueue_pending_workloads", "1x5", cluster_queue=INF, status="active")],
     "3m", [_expected("KueueCohortsInferencePending", cohort="c12-shared", cluster_queue=INF, severity="critical")]),
    ("KueueCohortsInferencePending", [_series("kueue_pending_workloads", "1 0x5", cluster_queue=INF,
                                              status="active")], "3m", []),
    ("KueueCohortsInferenceAdmissionWait", [
        _series("kueue_admission_wait_time_seconds_bucket", "0x20", cluster_queue=INF, le="30"),
        _series("kueue_admission_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="120"),
        _series("kueue_admission_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="+Inf")], "15m",
     [_expected("KueueCohortsInferenceAdmissionWait", cohort="c12-shared", cluster_queue=INF, severity="warning")]),
    ("KueueCohortsInferenceAdmissionWait", [
        _series("kueue_admission_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="30"),
        _series("kueue_admission_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="120"),
        _series("kueue_admission_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="+Inf")], "15m", []),
    ("KueueCohortsTrainingPreemptedOften", [_series("kueue_evicted_workloads_total", "0+1x10", cluster_queue=TRN,
                                                    reason="Preempted", underlying_cause="InCohortReclamation")],
     "10m", [_expected("KueueCohortsTrainingPreemptedOften", cohort="c12-shared", cluster_queue=TRN,
                       severity="warning")]),
    ("KueueCohortsTrainingPreemptedOften", [_series("kueue_evicted_workloads_total", "0 1 2x8", cluster_queue=TRN,
                                                    reason="Preempted", underlying_cause="InCohortReclamation"),
                                            _series("kueue_evicted_workloads_total", "0+1x10", cluster_queue=TRN,
                                                    reason="PodsReadyTimeout", underlying_cause="")], "10m", []),
    ("KueueCohortsQueueWithoutHeadroom", [_queue("resource_reservation", TRN, "1x20"),
                                          _queue("nominal_quota", TRN, "0x20"),
                                          _queue("borrowing_limit", TRN, "1x20")], "16m",
     [_expected("KueueCohortsQueueWithoutHeadroom", cluster_queue=TRN, severity="warning", **QUEUE_LABELS)]),
    ("KueueCohortsQueueWithoutHeadroom", [_queue("resource_reservation", TRN, "1x20"),
                                          _queue("nominal_quota", TRN, "0x20"),
                                          _queue("borrowing_limit", TRN, "2x20"),
                                          _series("kueue_cohort_subtree_resource_reservations", "1x20",
                                                  cohort="c12-shared", resource=GPU, **FLAVOR),
                                          _series("kueue_cohort_subtree_quota", "1x20", cohort="c12-shared",
                                                  resource=GPU, **FLAVOR)], "16m",
     [_expected("KueueCohortsQueueWithoutHeadroom", cluster_queue=TRN, severity="warning", **QUEUE_LABELS)]),
    ("KueueCohortsQueueWithoutHeadroom", [_queue("resource_reservation", TRN, "1x20"),
                                          _queue("nominal_quota", TRN, "0x20"),
                                          _queue("borrowing_limit", TRN, "2x20"),
                                          _series("kueue_cohort_subtree_resource_reservations", "1x20",
                                                  cohort="c12-shared", resource=GPU, **FLAVOR),
                                          _series("kueue_cohort_subtree_quota", "2x20", cohort="c12-shared",
                                                  resource=GPU, **FLAVOR)], "16m", []),
    ("KueueCohortsKueueDown", [_series("up", "0x5", job="kueue", instance="127.0.0.1:1")], "4m",
     [_expected("KueueCohortsKueueDown", cohort="c12-shared", severity="critical")]),
    ("KueueCohortsKueueDown", [_series("up", "1x5", job="kueue", instance="127.0.0.1:1"),
                               _series("up", "0x5", job="other", instance="127.0.0.1:2")], "4m", []),
    ("KueueCohortsKueueWebhookFailing", [_series("apiserver_admission_webhook_rejection_count", "0+1x10",
                                                 name="mpod.kb.io", type="admit", operation="CREATE",
                                                 error_type="calling_webhook_error", rejection_code="0")], "6m",
     [_expected("KueueCohortsKueueWebhookFailing", cohort="c12-shared", severity="critical", name="mpod.kb.io")]),
    ("KueueCohortsKueueWebhookFailing", [_series("apiserver_admission_webhook_rejection_count", "0+1x10",
                                                 name="mpod.kb.io", type="admit", operation="CREATE",
                                                 error_type="no_error", rejection_code="403")], "6m", []),
    ("KueueCohortsReclaimOverBudget", [
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0x20", cluster_queue=INF, le="32"),
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0x20", cluster_queue=INF, le="64"),
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="128"),
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="+Inf")],
     "15m", [_expected("KueueCohortsReclaimOverBudget", cohort="c12-shared", cluster_queue=INF,
                       severity="critical")]),
    ("KueueCohortsReclaimOverBudget", [  # every wait within 32 s, and a slow training queue: quiet
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="32"),
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0+1x20", cluster_queue=INF, le="+Inf"),
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0x20", cluster_queue=TRN, le="64"),
        _series("kueue_admitted_until_ready_wait_time_seconds_bucket", "0+1x20", cluster_queue=TRN, le="+Inf")],
     "15m", []),
    ("KueueCohortsCheckpointStale", [_series("kueue_cohorts_trainer_checkpoint_age_seconds", "600x5",
                                             namespace="c12-training", pod="t-node-0-0")], "3m",
     [_expected("KueueCohortsCheckpointStale", cohort="c12-shared", severity="warning", namespace="c12-training",
                pod="t-node-0-0")]),
    ("KueueCohortsCheckpointStale", [_series("kueue_cohorts_trainer_checkpoint_age_seconds", "100x5",
                                             namespace="c12-training", pod="t-node-0-0"),
                                     _series("kueue_cohorts_trainer_checkpoint_age_seconds", "600x5",
                                             namespace="elsewhere", pod="t-node-0-0")], "3m", []),
]


def _without_annotations(rules: dict[str, Any]) -> dict[str, Any]:
    """The rendered rules with their annotations left out (promtool compares annotations text for text; they are
    checked above): expressions, `for` and labels exactly as rendered."""
    out = copy.deepcopy(rules)
    for group in out["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    return out


def test_each_alert_fires_in_its_situation_and_not_in_its_neighbour(promtool, tmp_path):
    settings = parse_settings(stack_raw("dev"))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(_without_annotations(rules_file(settings, "dev"))))
    tests = [{"interval": "1m", "input_series": series,
              "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}]}
             for alert, series, at, expected in CASES]
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                        "tests": tests}, sort_keys=False))
    result = _run(promtool, "test", "rules", "test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {alert for alert, *_ in CASES} == {a.alert for a in alerts(settings, "dev")}


# --- issue 38 class 6: monitoring.kueueJob is a value, in PromQL and in the annotation's Go template ---------------

KUEUE_JOBS = [
    'kueue"} == 1) unless on() vector(1) #',  # on main the Kueue-down alert could never fire
    'kueue"}',                                 # on main a rule file promtool refused
    "kueue\\",
    'kueue {{ template "x" }}',                # on main the annotation failed to expand
    "kueue-controller-manager-metrics-service",
]


@pytest.mark.parametrize("job", KUEUE_JOBS)
def test_the_kueue_down_alert_fires_for_any_kueue_job_with_its_text(job, promtool, tmp_path):
    """The real Prometheus rule engine (promtool test rules): with `up{job=<kueueJob>}` at 0 the Kueue-down alert
    fires, and its annotations expand (Go text/template) to exactly the text with the value in it."""
    raw = {**stack_raw("dev"), "monitoring": {"kueueJob": job}}
    settings = parse_settings(raw)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules_file(settings, "dev")))
    down = next(a for a in alerts(settings, "dev") if a.alert == "KueueCohortsKueueDown")
    description = (f"No Kueue manager of job {job} answered a scrape for 2m: nothing is admitted or preempted in "
                   "cohorts c12-shared, and Kueue's webhooks (failurePolicy Fail) refuse the pods and jobs of every "
                   "namespace Kueue manages.")
    series = {"series": f"up{{job={promql_string(job)}, instance=\"127.0.0.1:1\"}}", "values": "0x5"}
    test = {"interval": "1m", "input_series": [series], "alert_rule_test": [{
        "eval_time": "4m", "alertname": "KueueCohortsKueueDown", "exp_alerts": [{
            "exp_labels": {"alertname": "KueueCohortsKueueDown", "kueue_cohorts_stack": "dev",
                           "cohort": "c12-shared", "severity": "critical"},
            "exp_annotations": {"summary": "Kueue's manager is down", "description": description,
                                "runbook_url": down.runbook}}]}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                        "tests": [test]}, sort_keys=False))
    result = _run(promtool, "test", "rules", "test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
