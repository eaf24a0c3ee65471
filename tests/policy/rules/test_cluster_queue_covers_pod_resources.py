"""cluster-queue-covers-pod-resources (promise 2, Kueue counts every
inference and training pod, kueue_cohorts/policy/rules/cluster_queue_covers_pod_resources.py): what a Kueue manager
Configuration breaks for this stack, judged from the model of what Kueue 0.19.2 counts
(rules/vocabulary/kueue_counts.py) wherever the Configuration is: a ConfigMap's data or binaryData, the kueue chart's
values, the manager's --feature-gates flag. The Configuration alone is judged by kueue-manager-config
(test_kueue_manager_config.py); the tests that need both rules are here."""
from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.cluster_queue_covers_pod_resources import (
    CLUSTER_QUEUE_COVERS_POD_RESOURCES,
    check_cluster_queue_covers_pod_resources,
)
from kueue_cohorts.policy.rules.kueue_manager_config import KUEUE_MANAGER_CONFIG
from tests.policy.fixtures import UNKNOWN, compliant, stack
from tests.policy.harness import evaluate
from tests.policy.harness import pack_config as harness_config

GPU = "nvidia.com/gpualloc"


QUOTED = ["cpu", "memory", "nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem"]


CONFIG_KEY = "controller_manager_config.yaml"


FRAMEWORKS = ["batch/job", "pod", "deployment", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"]


def _config(**extra: Any) -> dict:
    """A safe v1beta2 Configuration for the compliant stack, with `extra` fields merged in."""
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": "kueue-system",
              "integrations": {"frameworks": list(FRAMEWORKS)}, "waitForPodsReady": {"timeout": "10m"}}
    config.update(extra)
    return config


def _carrier(config: dict, form: str) -> dict:
    """The manifest that carries `config` in one of the forms Kueue reads it from."""
    text = yaml.safe_dump(config)
    meta = {"name": "kueue-manager-config", "namespace": "kueue-system"}
    if form == "data":
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {CONFIG_KEY: text}}
    if form == "binaryData":
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                "binaryData": {CONFIG_KEY: base64.b64encode(text.encode()).decode()}}
    return {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": "kueue"},
            "chart": "oci://registry.k8s.io/kueue/charts/kueue",
            "values": {"managerConfig": {"controllerManagerConfigYaml": text}}}


FORMS = ["data", "binaryData", "chart"]


WHERE = {"data": f"data['{CONFIG_KEY}']", "binaryData": f"binaryData['{CONFIG_KEY}']",
         "chart": "values.managerConfig.controllerManagerConfigYaml"}


def _stack(config: dict, form: str = "data") -> list:
    manifests = compliant()
    manifests["kueue-config"] = _carrier(config, form)
    return stack(manifests)


def _counts(config: dict, form: str = "data") -> list:
    objects = _stack(config, form)
    return check_cluster_queue_covers_pod_resources(objects, (), {"c12-inference-cq"})


def _fields(violations: list) -> list[str]:
    return [v.field for v in violations]


@settings(max_examples=60, deadline=None)
@given(resource=st.sampled_from(QUOTED), cut=st.integers(min_value=1, max_value=30), form=st.sampled_from(FORMS))
def test_an_exclusion_prefix_of_a_quoted_resource_takes_its_quota_out_of_play(resource, cut, form):
    prefix = resource[:cut]
    found = _counts(_config(resources={"excludeResourcePrefixes": ["example.com/", prefix]}), form)
    assert f"{WHERE[form]}.resources.excludeResourcePrefixes" in _fields(found)
    dropped = {v.value for v in found}
    assert dropped == {r for r in QUOTED if r.startswith(prefix)}
    assert all("out of play" in v.message and f"entry {prefix!r} drops" in v.message for v in found)


@settings(max_examples=40, deadline=None)
@given(prefix=st.sampled_from(["example.com/", "nvidia.com/mig", "amd.com/", "cpus", "memory-", "hugepages-",
                               "ephemeral-storage", "nvidia.com/gpualloc-"]))
def test_an_exclusion_that_matches_no_quoted_resource_is_fine(prefix):
    assert _counts(_config(resources={"excludeResourcePrefixes": [prefix]})) == []


@pytest.mark.parametrize("transformation, counted", [
    ({"input": GPU, "strategy": "Replace", "outputs": {"example.com/credits": "1"}}, False),  # replaced by another
    ({"input": GPU, "strategy": "Replace"}, False),                                          # empty outputs: ignored
    ({"input": GPU, "strategy": "Replace", "outputs": {GPU: "500m"}}, False),                # undercounted
    ({"input": GPU, "strategy": "Replace", "outputs": {GPU: "0"}}, False),
    ({"input": GPU, "strategy": "Replace", "outputs": {GPU: "1"}, "multiplyBy": "cpu"}, False),
    ({"input": GPU, "strategy": "Replace", "outputs": {GPU: "1"}}, True),
    ({"input": GPU, "strategy": "Replace", "outputs": {GPU: "2", "example.com/credits": "1"}}, True),
    ({"input": GPU, "strategy": "Retain", "outputs": {"example.com/credits": "1"}}, True),
    ({"input": GPU, "outputs": {}}, True),                                                   # default Retain
    ({"input": "nvidia.com/mig-1g.10gb", "strategy": "Replace", "outputs": {GPU: "1"}}, True),
])
def test_a_transformation_of_a_quoted_gpu(transformation, counted):
    found = _counts(_config(resources={"transformations": [transformation]}))
    if counted:
        assert found == []
    else:
        assert _fields(found) == [f"data['{CONFIG_KEY}'].resources.transformations"]
        assert found[0].value == GPU


def test_a_negative_output_can_lower_a_replaced_gpu_but_not_a_retained_one():
    lower = {"input": "example.com/discount", "outputs": {GPU: "-1"}}
    replaced = {"input": GPU, "strategy": "Replace", "outputs": {GPU: "1"}}
    assert [v.value for v in _counts(_config(resources={"transformations": [replaced, lower]}))] == [GPU]
    assert _counts(_config(resources={"transformations": [lower]})) == []  # floored at 0, added to the request


def _lq_namespaces() -> list[str]:
    return ["c12-inference", "c12-training"]


SELECTS_NONE = [
    {"matchLabels": {"kueue-managed": "true"}},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["other"]}]},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                           "values": ["kube-system", "kueue-system", "c12-inference", "c12-training"]}]},
    {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]},
]


SELECTS_ALL = [
    None,  # Kueue's default: NotIn [kube-system, <namespace>]
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                           "values": ["kube-system", "kueue-system"]}]},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                           "values": ["c12-inference", "c12-training", "x"]}]},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "Exists"},
                          {"key": "team", "operator": "DoesNotExist"}]},
]


@pytest.mark.parametrize("selector", SELECTS_NONE)
@pytest.mark.parametrize("form", FORMS)
def test_a_selector_that_leaves_out_a_tenant_namespace_is_refused(selector, form):
    found = _counts(_config(managedJobsNamespaceSelector=selector), form)
    assert _fields(found) == [f"{WHERE[form]}.managedJobsNamespaceSelector"] * 2
    assert ["'c12-inference'" in found[0].message, "'c12-training'" in found[1].message] == [True, True]
    assert "queue-name label or not" in found[0].message


@pytest.mark.parametrize("selector", SELECTS_ALL)
def test_a_selector_that_selects_every_tenant_namespace_passes(selector):
    extra = {} if selector is None else {"managedJobsNamespaceSelector": selector}
    assert _counts(_config(**extra)) == []


@settings(max_examples=40, deadline=None)
@given(names=st.sets(st.sampled_from(["c12-inference", "c12-training", "a", "b"]), max_size=4),
       operator=st.sampled_from(["In", "NotIn"]))
def test_the_namespace_model_is_label_selector_semantics(names, operator):
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": operator,
                                      "values": sorted(names) or ["z"]}]}
    found = {v.message.split("tenant namespace '")[1].split("'")[0]
             for v in _counts(_config(managedJobsNamespaceSelector=selector))}
    selected = {ns for ns in _lq_namespaces() if (ns in names) == (operator == "In")}
    assert found == set(_lq_namespaces()) - selected


def test_a_namespace_is_judged_on_the_labels_the_stack_gives_it():
    manifests = compliant()
    manifests["kueue-config"] = _carrier(_config(managedJobsNamespaceSelector={"matchLabels": {"team": "ml"}}), "data")
    for ns in _lq_namespaces():
        manifests[f"ns-{ns}"] = {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": ns, "labels": {"team": "ml"}}}
    assert check_cluster_queue_covers_pod_resources(stack(manifests), (), {"c12-inference-cq"}) == []
    manifests["ns-c12-training"]["metadata"]["labels"] = {"team": "other"}
    found = check_cluster_queue_covers_pod_resources(stack(manifests), (), {"c12-inference-cq"})
    assert len(found) == 1 and "'c12-training'" in found[0].message


@pytest.mark.parametrize("frameworks, missing", [
    (None, ["deployment", "trainer.kubeflow.org/trainjob"]),                        # Kueue's default: batch/job only
    ([], ["deployment", "trainer.kubeflow.org/trainjob"]),
    (["batch/job", "pod"], ["deployment", "trainer.kubeflow.org/trainjob"]),
    (["batch/job", "deployment"], ["trainer.kubeflow.org/trainjob"]),                 # deployment enables pod
    (["batch/job", "deployment", "jobset.x-k8s.io/jobset"], ["trainer.kubeflow.org/trainjob"]),
    (["deployment", "trainer.kubeflow.org/trainjob"], ["batch/job"]),               # the compliant stack's Job
    (["batch/job", "statefulset", "trainer.kubeflow.org/trainjob"], ["deployment"]),
])
def test_the_frameworks_must_hold_every_kind_the_stack_runs(frameworks, missing):
    config = _config()
    if frameworks is None:
        del config["integrations"]
    else:
        config["integrations"] = {"frameworks": frameworks}
    found = _counts(config)
    assert all(f == f"data['{CONFIG_KEY}'].integrations.frameworks" for f in _fields(found))
    assert sorted(v.fix.split("'")[1] for v in found) == sorted(missing)


@pytest.mark.parametrize("kind, framework", [
    ({"apiVersion": "apps/v1", "kind": "StatefulSet"}, "statefulset"),
    ({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"},
     "leaderworkerset.x-k8s.io/leaderworkerset"),
    ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}, "jobset.x-k8s.io/jobset"),
    ({"apiVersion": "v1", "kind": "Pod"}, "pod"),
])
def test_a_serving_or_training_kind_in_a_tenant_namespace_needs_its_framework(kind, framework):
    manifests = compliant()
    manifests["kueue-config"] = _carrier(_config(integrations={"frameworks": ["batch/job", "deployment",
                                                                              "trainer.kubeflow.org/trainjob"]}),
                                         "data")
    manifests["extra"] = {**kind, "metadata": {"name": "x", "namespace": "c12-inference"}, "spec": {}}
    found = check_cluster_queue_covers_pod_resources(stack(manifests), (), {"c12-inference-cq"})
    expected = [] if framework == "pod" else [framework]  # deployment enables pod
    assert [v.fix.split("'")[1] for v in found] == expected


def test_an_unknown_excluded_prefix_fails_closed_in_both_rules():
    manifests = compliant()
    manifests["kueue-config"] = {"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                                 "data": {CONFIG_KEY: UNKNOWN}}
    found = run(stack(manifests), {})
    names = {rule.name for rule, v in found if "unknown at preview" in v.message}
    assert {KUEUE_MANAGER_CONFIG.name, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name} <= names


def test_the_pack_refuses_an_excluded_gpu_in_chart_values():
    manifests = compliant()
    manifests["kueue-config"] = _carrier(_config(resources={"excludeResourcePrefixes": ["nvidia.com/"]}), "chart")
    resources = [(f"kubernetes:{'core/v1' if m['apiVersion'] == 'v1' else m['apiVersion']}:{m['kind']}",
                  f"urn:{name}", name, copy.deepcopy(m)) for name, m in manifests.items()]
    found = evaluate(resources, harness_config())
    assert sum("takes quota out of play" in m for m in found[CLUSTER_QUEUE_COVERS_POD_RESOURCES.name]) == 3


@pytest.mark.parametrize("form, extra, policy, words", [
    ("data", {"resources": {"transformations": [{"input": GPU, "strategy": "Replace"}]}},
     CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, "takes quota out of play"),
    ("binaryData", {"managedJobsNamespaceSelector": {"matchLabels": {"team": "ml"}}},
     CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, "queue-name label or not"),
    ("chart", {"integrations": {"frameworks": ["batch/job"]}}, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name,
     "neither gates nor counts"),
    ("binaryData", {"featureGates": {"DisableWaitForPodsReady": True}}, KUEUE_MANAGER_CONFIG.name,
     "switches off a protection"),
    ("chart", {"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}, KUEUE_MANAGER_CONFIG.name,
     "admitted uncounted"),
])
def test_the_pack_judges_every_class_in_every_carrier(form, extra, policy, words):
    manifests = compliant()
    manifests["kueue-config"] = _carrier(_config(**extra), form)
    resources = [(f"kubernetes:{'core/v1' if m['apiVersion'] == 'v1' else m['apiVersion']}:{m['kind']}",
                  f"urn:{name}", name, copy.deepcopy(m)) for name, m in manifests.items()]
    found = evaluate(resources, harness_config())
    assert any(words in m for m in found.get(policy, [])), found.get(policy)


@pytest.mark.parametrize("target", ["lq-namespace", "job-labels", "job-namespace", "cq-covered", "ns-labels"])
def test_an_unknown_field_of_the_stack_never_raises(target):
    manifests = compliant()
    manifests["ns"] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c12-training", "labels": {}}}
    if target == "lq-namespace":
        manifests["training-lq"]["metadata"]["namespace"] = UNKNOWN
    elif target == "job-labels":
        manifests["job"]["metadata"]["labels"] = UNKNOWN
    elif target == "job-namespace":
        manifests["job"]["metadata"]["namespace"] = UNKNOWN
    elif target == "cq-covered":
        manifests["training-cq"]["spec"]["resourceGroups"][0]["coveredResources"] = UNKNOWN
    else:
        manifests["ns"]["metadata"]["labels"] = UNKNOWN
    found = check_cluster_queue_covers_pod_resources(stack(manifests), (), {"c12-inference-cq"})
    unknown = [v for v in found if "unknown at preview" in v.message]
    assert bool(unknown) == (target == "cq-covered")


@pytest.mark.parametrize("resources, dropped", [
    ({"excludeResourcePrefixes": ["example.com/"]}, True),
    ({"excludeResourcePrefixes": ["example.com/gp"]}, True),
    ({"transformations": [{"input": "example.com/gpu", "strategy": "Replace"}]}, True),
    ({"transformations": [{"input": "example.com/gpu", "strategy": "Replace",
                           "outputs": {"nvidia.com/gpualloc": "1"}}]}, False),  # counted as a quoted GPU
    ({"excludeResourcePrefixes": ["example.com/other"]}, False),
])
def test_a_gpu_the_workloads_request_but_no_queue_quotas_must_stay_counted(resources, dropped):
    """Kueue refuses a request no queue covers (BlockUndeclared); dropped or replaced away, it is used uncounted."""
    manifests = compliant()
    manifests["kueue-config"] = _carrier(_config(resources=resources), "data")
    container = manifests["job"]["spec"]["template"]["spec"]["containers"][0]
    container.setdefault("resources", {}).setdefault("limits", {})["example.com/gpu"] = "1"
    found = check_cluster_queue_covers_pod_resources(stack(manifests), (), {"c12-inference-cq"})
    assert [v.value for v in found] == (["example.com/gpu"] if dropped else [])
    if dropped:
        assert "Job 'c12-training/" in found[0].message and "used uncounted" in found[0].message
