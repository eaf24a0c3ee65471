"""kueue-manager-config (promise 2, kueue_cohorts/policy/rules/kueue_manager_config.py):
what a Kueue manager Configuration alone breaks, wherever it is (a ConfigMap's data or binaryData, the kueue chart's
values, the manager's flags): manageJobsWithoutQueueName without a selector that leaves kueue-system out,
waitForPodsReady (every value Kueue's manager refuses to start with is refused at its field, Kueue 0.19.2
pkg/config/validation.go validateWaitForPodsReady; issue 26 item 9), feature gates, frameworks, quota check strategy
and resource transformations."""
from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.kueue_manager_config import (
    check_kueue_manager_config,
    duration_problem,
)
from kueue_cohorts.policy.rules.vocabulary import kueue_counts
from tests.policy.fixtures import (
    SAFE_MANAGER_CONFIG,
    UNKNOWN,
    kube,
    kueue_config_map,
    messages,
)
from tests.policy.rules.test_cluster_queue_covers_pod_resources import (
    CONFIG_KEY,
    FORMS,
    GPU,
    WHERE,
    _carrier,
    _config,
    _counts,
    _fields,
)

CM = ("The Kueue Configuration in data['controller_manager_config.yaml'] of the ConfigMap "
      "'kueue-system/kueue-manager-config'")


def _config_map(text):
    return kube("kueue-config", kueue_config_map(text))


def test_safe_configuration_passes():
    assert check_kueue_manager_config(_config_map(SAFE_MANAGER_CONFIG)) == []


def test_manage_all_jobs_without_selector_fails():
    text = SAFE_MANAGER_CONFIG.split("managedJobsNamespaceSelector")[0] + "waitForPodsReady:\n  timeout: 5m\n"
    assert messages(check_kueue_manager_config(_config_map(text))) == [
        f"{CM} sets manageJobsWithoutQueueName: true without a managedJobsNamespaceSelector, so Kueue would suspend "
        "jobs in every namespace; add managedJobsNamespaceSelector with matchExpressions [{key: "
        "kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}]."]


def test_selector_that_still_selects_kueue_namespace_fails():
    text = SAFE_MANAGER_CONFIG.replace("values: [kube-system, kueue-system]", "values: [kube-system]")
    assert messages(check_kueue_manager_config(_config_map(text))) == [
        f"{CM} sets manageJobsWithoutQueueName: true with a managedJobsNamespaceSelector that selects 'kueue-system', "
        "so Kueue would suspend system pods; exclude them, e.g. {key: kubernetes.io/metadata.name, operator: NotIn, "
        "values: [kube-system, kueue-system]}."]


def test_missing_wait_for_pods_ready_fails():
    text = SAFE_MANAGER_CONFIG.split("waitForPodsReady")[0]
    assert messages(check_kueue_manager_config(_config_map(text))) == [
        f"{CM} has no waitForPodsReady; add waitForPodsReady with a timeout (e.g. timeout: 10m) so that an admitted "
        "workload whose pods never start gives its quota back."]


def test_zero_timeout_fails():
    text = SAFE_MANAGER_CONFIG.replace("timeout: 10m", "timeout: 0s")
    assert messages(check_kueue_manager_config(_config_map(text))) == [
        f"{CM} has waitForPodsReady.timeout '0s'; set a positive duration such as 10m."]


def test_v1beta1_needs_enable():
    text = SAFE_MANAGER_CONFIG.replace("config.kueue.x-k8s.io/v1beta2", "config.kueue.x-k8s.io/v1beta1")
    assert messages(check_kueue_manager_config(_config_map(text))) == [
        f"{CM} does not set waitForPodsReady.enable: true (config v1beta1); enable it."]


def test_helm_chart_values_are_checked():
    chart = {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": "kueue"},
             "values": {"managerConfig": {"controllerManagerConfigYaml": SAFE_MANAGER_CONFIG.replace(
                 "timeout: 10m", "blockAdmission: true")}}}
    obj = kube("kueue", chart)
    assert obj.resource_name == "kueue" and obj.group == "helm.sh"
    assert messages(check_kueue_manager_config(obj)) == [
        "The Kueue Configuration in values.managerConfig.controllerManagerConfigYaml of the Chart 'kueue' has "
        "waitForPodsReady.timeout missing; set a positive duration such as 10m."]


def test_unrelated_config_maps_are_ignored():
    assert check_kueue_manager_config(kube("cm", {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "x"}, "data": {"a": "b: c"}})) == []


def test_unknown_configuration_fails_closed():
    [violation] = check_kueue_manager_config(_config_map(UNKNOWN))
    assert violation.message.startswith("The ConfigMap 'kueue-system/kueue-manager-config' has "
                                        "data[\"controller_manager_config.yaml\"] unknown at preview")


def test_unknown_values_of_unrelated_config_maps_and_charts_are_skipped():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"url": UNKNOWN}}
    chart = {"apiVersion": "helm.sh/v4", "kind": "Chart", "chart": "ingress-nginx", "values": UNKNOWN}
    assert check_kueue_manager_config(kube("app", cm)) == []
    assert check_kueue_manager_config(kube("ingress", chart)) == []
    chart["chart"] = "oci://registry.k8s.io/kueue/charts/kueue"
    [violation] = check_kueue_manager_config(kube("queueing", chart))
    assert violation.message.startswith("The Chart 'queueing' has values unknown at preview")


@pytest.mark.parametrize("text,problem", [("10m", None), ("1h30m", None), (".5m", None), ("0", "not positive"),
                                          ("0s", "not positive"), ("9999999h", "not a Go duration"),
                                          ("10", "not a Go duration"), ("", "not a Go duration"),
                                          ("5 m", "not a Go duration")])
def test_the_timeout_is_judged_by_gos_own_duration_grammar(text, problem):
    found = duration_problem(text)
    assert (found is None) if problem is None else (problem in found)


def test_the_safe_configuration_counts_everything_in_every_form():
    for form in FORMS:
        assert _counts(_config(), form) == [], form
        assert check_kueue_manager_config(kube("c", _carrier(_config(), form))) == [], form


@settings(max_examples=80, deadline=None)
@given(gate=st.sampled_from(sorted(kueue_counts.FEATURE_GATES)), value=st.booleans(),
       form=st.sampled_from(["data", "binaryData", "chart", "chartGates", "flag"]))
def test_every_gate_is_judged_from_the_gate_table_wherever_it_is_set(gate, value, form):
    spec = kueue_counts.FEATURE_GATES[gate]
    unsafe = kueue_counts.UNSAFE_GATES.get(gate)
    bad = (spec.locked and value != spec.default) or (unsafe is not None and unsafe[0] == value)
    if form == "flag":
        manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kueue-controller-manager"},
                    "spec": {"template": {"spec": {"containers": [{
                        "name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2",
                        "args": ["--config=/controller_manager_config.yaml",
                                 f"--feature-gates={gate}={str(value).lower()}"]}]}}}}
    elif form == "chartGates":
        manifest = _carrier(_config(), "chart")
        manifest["values"]["controllerManager"] = {"featureGates": [{"name": gate, "enabled": value}]}
    else:
        manifest = _carrier(_config(featureGates={gate: value}), form)
    found = check_kueue_manager_config(kube("m", manifest))
    assert bool(found) == bad, [v.message for v in found]
    if bad:
        assert gate in found[0].message and ("refuses to start" in found[0].rule or "protection" in found[0].rule)


@pytest.mark.parametrize("gates", [{"NoSuchGate": True}, {"disablewaitforpodsready": True},
                                   {"DisableWaitForPodsReady": "true"}, {"PartialAdmission": 1}])
def test_an_unknown_or_non_boolean_gate_stops_the_manager(gates):
    found = check_kueue_manager_config(kube("c", _carrier(_config(featureGates=gates), "data")))
    assert [v.field for v in found] == [f"data['{CONFIG_KEY}'].featureGates"]


@pytest.mark.parametrize("args", [
    ["--feature-gates=DisableWaitForPodsReady=true"],
    ["--feature-gates", "PartialAdmission=true,DisableWaitForPodsReady=True"],
    ["--zap-log-level=2", "-feature-gates=DisableWaitForPodsReady=1"],  # Go's flag package takes one dash too
    ["--feature-gates=DisableWaitForPodsReady"],      # no value: the manager refuses to start
    ["--feature-gates=DisableWaitForPodsReady=yes"],  # not a Go bool
])
def test_manager_flags_are_read_as_component_base_reads_them(args):
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "controller"},
                "spec": {"template": {"spec": {"containers": [{"name": "manager",
                                                               "image": "registry.k8s.io/kueue/kueue:v0.19.2",
                                                               "args": args}]}}}}
    found = check_kueue_manager_config(kube("d", manifest))
    assert len(found) == 1 and found[0].field.startswith("spec.template.spec.containers[0].args[")


def test_flags_of_other_deployments_are_not_kueues():
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"template": {"spec": {"containers": [{"name": "x", "image": "nginx",
                                                               "args": ["--feature-gates=Bogus=true"]}]}}}}
    assert check_kueue_manager_config(kube("d", manifest)) == []


@pytest.mark.parametrize("resources, bad", [
    ({"quotaCheckStrategy": "IgnoreUndeclared"}, True),
    ({"quotaCheckStrategy": "ignoreundeclared"}, True),   # unknown: the manager refuses it
    ({"quotaCheckStrategy": "Ignore"}, True),
    ({"quotaCheckStrategy": "BlockUndeclared"}, False),
    ({}, False),
])
@pytest.mark.parametrize("form", FORMS)
def test_a_quota_check_strategy_that_ignores_undeclared_resources_is_refused(resources, bad, form):
    found = check_kueue_manager_config(kube("c", _carrier(_config(resources=resources), form)))
    assert _fields(found) == ([f"{WHERE[form]}.resources.quotaCheckStrategy"] if bad else [])


def test_ignore_undeclared_counts_again_with_its_gate_off():
    config = _config(resources={"quotaCheckStrategy": "IgnoreUndeclared"}, featureGates={"QuotaCheckStrategy": False})
    assert not kueue_counts.parse(config).ignores_undeclared
    assert check_kueue_manager_config(kube("c", _carrier(config, "data"))) == []


@pytest.mark.parametrize("transformations, field", [
    ([{"input": GPU, "strategy": "Drop"}], "resources.transformations[0].strategy"),
    ([{"input": GPU}, {"input": GPU}], "resources.transformations[1].input"),
    ([{"input": GPU, "outputs": {"x.com/y": "lots"}}], "resources.transformations[0].outputs"),
    ([{"strategy": "Retain"}], "resources.transformations[0]"),
])
def test_a_transformation_the_manager_refuses_is_refused(transformations, field):
    found = check_kueue_manager_config(kube("c", _carrier(_config(resources={"transformations": transformations}),
                                                          "data")))
    assert _fields(found) == [f"data['{CONFIG_KEY}'].{field}"]


def test_an_unknown_framework_stops_the_manager():
    found = check_kueue_manager_config(kube("c", _carrier(_config(integrations={"frameworks": ["kserve"]}), "data")))
    assert _fields(found) == [f"data['{CONFIG_KEY}'].integrations.frameworks"]


def _manager(args: list, image: Any = "registry.k8s.io/kueue/kueue:v0.19.2", name: Any = "controller") -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image, "args": args}]}}}}


def test_an_unknown_argument_of_kueues_manager_fails_closed():
    found = check_kueue_manager_config(kube("d", _manager(["--config=/x", UNKNOWN])))
    assert len(found) == 1 and "unknown at preview" in found[0].message


@pytest.mark.parametrize("manifest", [_manager([UNKNOWN], image=UNKNOWN), _manager([UNKNOWN], image="nginx",
                                                                                   name=UNKNOWN)])
def test_an_unknown_name_or_image_of_another_deployment_is_no_finding(manifest):
    assert check_kueue_manager_config(kube("web", manifest)) == []


def test_unknown_chart_feature_gates_fail_closed():
    manifest = _carrier(_config(), "chart")
    manifest["values"]["controllerManager"] = {"featureGates": UNKNOWN}
    found = check_kueue_manager_config(kube("kueue", manifest))
    assert len(found) == 1 and "unknown at preview" in found[0].message


PREFIX = "data['controller_manager_config.yaml'].waitForPodsReady"


def _judge(wait: dict) -> list:
    config = yaml.safe_load(SAFE_MANAGER_CONFIG)
    config["waitForPodsReady"] = {"timeout": "10m", **wait}
    return check_kueue_manager_config(kube("kueue-config", kueue_config_map(yaml.safe_dump(config))))


@pytest.mark.parametrize("value", ["-1m", "-1ns", "-2h30m", "-.5s", "-0.001s"])
def test_a_negative_recovery_timeout_is_refused(value):
    [v] = _judge({"recoveryTimeout": value})
    assert (v.field, v.value) == (f"{PREFIX}.recoveryTimeout", value)
    assert v.rule == (f"waitForPodsReady.recoveryTimeout: {value!r} is negative, and Kueue's manager refuses to start "
                      "with it")
    assert v.fix == ("set a positive Go duration such as 10m, 0s to switch the recovery timeout off, or leave it out "
                     "(it then equals timeout)")


@pytest.mark.parametrize(("value", "why"), [("1d", "is not a Go duration (time: unknown unit"),
                                            ("5", "is not a Go duration (time: missing unit"),
                                            (300, "is not a Go duration string")])
def test_a_recovery_timeout_that_is_no_go_duration_is_refused(value, why):
    [v] = _judge({"recoveryTimeout": value})
    assert v.field == f"{PREFIX}.recoveryTimeout" and why in v.rule


@pytest.mark.parametrize("wait", [{"recoveryTimeout": "0s"}, {"recoveryTimeout": "-0s"}, {"recoveryTimeout": "3m"},
                                  {}, {"requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 0,
                                                             "backoffBaseSeconds": 0, "backoffMaxSeconds": 0}}])
def test_what_kueue_accepts_passes(wait):
    assert _judge(wait) == []


@pytest.mark.parametrize(("field", "value", "fix"), [
    ("timestamp", "Now", "set Eviction (the default) or Creation"),
    ("timestamp", "eviction", "set Eviction (the default) or Creation"),
    ("backoffLimitCount", -1, "set a whole number from 0 to 2147483647"),
    ("backoffLimitCount", 1.5, "set a whole number from 0 to 2147483647"),
    ("backoffBaseSeconds", -60, "set a whole number from 0 to 2147483647"),
    ("backoffMaxSeconds", 2**31, "set a whole number from 0 to 2147483647"),
    ("backoffMaxSeconds", "1h", "set a whole number from 0 to 2147483647"),
])
def test_a_requeuing_strategy_the_manager_refuses_is_refused(field, value, fix):
    [v] = _judge({"requeuingStrategy": {field: value}})
    assert (v.field, v.value, v.fix) == (f"{PREFIX}.requeuingStrategy.{field}", value, fix)
    assert "Kueue's manager refuses to start with it" in v.rule
