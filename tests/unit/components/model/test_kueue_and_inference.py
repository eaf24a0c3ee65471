"""KueueInstallation's manager Configuration and the InferenceService component, under Pulumi mocks."""
from __future__ import annotations

import json

import pytest
import yaml

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.manager_config import chart_values, manager_configuration
from kueue_cohorts.components.model.plans import plan_inference_training
from kueue_cohorts.components.resources.inference import quota_fit
from kueue_cohorts.components.settings import KueueSettings
from kueue_cohorts.components.settings.errors import SettingsError
from tests.helpers import run_main, stack_raw


def test_manager_configuration_defaults_are_the_guides_safe_settings():
    config = manager_configuration(KueueSettings())
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert config["manageJobsWithoutQueueName"] is False
    assert "managedJobsNamespaceSelector" not in config
    assert config["waitForPodsReady"] == {
        "timeout": "10m", "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 5, "backoffBaseSeconds": 60,
                              "backoffMaxSeconds": 3600}}
    assert config["integrations"] == {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset",
                                                     "trainer.kubeflow.org/trainjob", "pod", "deployment"]}
    assert config["namespace"] == "kueue-system"


def test_chart_values_carry_exactly_the_configuration():
    settings = KueueSettings.model_validate({
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchLabels": {"kueue-managed": "true"}},
        "waitForPodsReady": {"timeout": "5m", "requeuingStrategy": {"backoffLimitCount": 2}},
    })
    values = chart_values(settings)
    assert list(values) == ["managerConfig"]
    loaded = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert loaded == manager_configuration(settings)
    assert loaded["managedJobsNamespaceSelector"] == {"matchLabels": {"kueue-managed": "true"}}
    assert loaded["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 2


def _staging_render() -> dict[str, str]:
    raw = stack_raw("staging")
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    return {f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()}


def test_inference_service_manifest_carries_queue_and_priority_labels():
    mocks = run_main(_staging_render())
    isvcs = [r.inputs for r in mocks.registered if r.typ == "kubernetes:serving.kserve.io/v1beta1:InferenceService"]
    assert len(isvcs) == 1
    isvc = isvcs[0]
    labels = {"kueue.x-k8s.io/queue-name": "inference", "kueue.x-k8s.io/priority-class": "serving-inference"}
    assert isvc["metadata"]["namespace"] == "serving"
    assert labels.items() <= isvc["metadata"]["labels"].items()
    assert isvc["metadata"]["annotations"] == {"serving.kserve.io/deploymentMode": "Standard"}
    predictor = isvc["spec"]["predictor"]
    assert predictor["labels"] == labels
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (1, 4)
    assert predictor["model"] == {
        "modelFormat": {"name": "huggingface"}, "storageUri": "s3://models/llama-3.1-8b-instruct",
        "resources": {"requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                      "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}}}


def test_quota_fit_refuses_one_replica_too_big_and_warns_on_max_replicas():
    settings = load_settings(stack_raw("staging"))
    plan = plan_inference_training(settings.inference_training, "a10g")
    isvc = settings.inference_training.inference.services[0]
    errors, warnings = quota_fit(isvc, plan.cluster_queues[0])
    assert (errors, warnings) == ([], [])  # 4 x (8 cpu, 32Gi, 1 GPU) fits 40 / 160Gi / 4
    errors, warnings = quota_fit(isvc.model_copy(update={"max_replicas": 5}), plan.cluster_queues[0])
    assert errors == []
    assert warnings == ["maxReplicas 5 x 1 of 'nvidia.com/gpu' exceeds the nominalQuota 4: replicas "
                        "beyond it stay pending"]  # 5 x 32Gi = 160Gi still fits
    too_big = isvc.model_copy(update={"requests": {"nvidia.com/gpu": "5"}})
    errors, _ = quota_fit(too_big, plan.cluster_queues[0])
    assert errors == ["one replica requests 5 of 'nvidia.com/gpu', above the nominalQuota 4 of ClusterQueue "
                      "'serving-inference-cq'"]


def test_kueue_installation_is_created_first_with_its_namespace():
    raw = stack_raw("dev")
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    raw["kueue"] = {"install": True, "chartSource": "Published"}
    mocks = run_main({f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()})
    charts = [r for r in mocks.registered if r.typ == "kubernetes:helm.sh/v4:Chart"]
    assert len(charts) == 1
    chart = charts[0].inputs
    assert chart["chart"] == "oci://registry.k8s.io/kueue/charts/kueue" and chart["version"] == "0.19.2"
    assert chart["namespace"] == "kueue-system"
    config = yaml.safe_load(chart["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config == manager_configuration(KueueSettings(install=True))
    names = [r.name for r in mocks.registered]
    assert names.index("kueue-chart") < names.index("resource-flavor")


def test_out_of_cluster_transform_points_webhooks_and_conversion_at_the_manager():
    import base64

    import pulumi

    from kueue_cohorts.components.resources.kueue_install import OutOfClusterManager, point_webhooks_at

    transform = point_webhooks_at(OutOfClusterManager("https://127.0.0.1:9443", b"PEM"))
    hook = {
        "name": "vclusterqueue.kb.io",
        "clientConfig": {
            "service": {
                "name": "kueue-webhook-service",
                "namespace": "kueue-system",
                "path": "/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
            }
        },
    }
    args = pulumi.ResourceTransformArgs(
        custom=True, type_="kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
        name="x", props={"webhooks": [hook]}, opts=pulumi.ResourceOptions())
    result = transform(args)
    assert result.props["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
        "caBundle": base64.b64encode(b"PEM").decode()}
    crd = pulumi.ResourceTransformArgs(
        custom=True, type_="kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", name="c",
        props={"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {
            "name": "kueue-webhook-service", "namespace": "kueue-system", "path": "/convert"}},
            "conversionReviewVersions": ["v1"]}}}}, opts=pulumi.ResourceOptions())
    converted = transform(crd).props["spec"]["conversion"]
    assert converted["webhook"]["clientConfig"]["url"] == "https://127.0.0.1:9443/convert"
    assert converted["webhook"]["conversionReviewVersions"] == ["v1"]
    deployment = pulumi.ResourceTransformArgs(
        custom=True,
        type_="kubernetes:apps/v1:Deployment",
        name="d",
        props={"metadata": {"name": "kueue-controller-manager"}, "spec": {"replicas": 0}},
        opts=pulumi.ResourceOptions(),
    )
    changed = transform(deployment).props
    assert changed["metadata"] == {"name": "kueue-controller-manager", "annotations": {"pulumi.com/patchForce": "true"}}
    assert changed["spec"] == {"replicas": 0}


@pytest.mark.parametrize(("service", "refused"), [
    ({"rollout": {"maxSurge": 0, "maxUnavailable": 1}}, True),                    # a declared rollout
    ({"maxReplicas": 8}, True),                                                   # maxSurge 0: the surge does not fit
    ({}, False),                                                                  # KServe's default: no strategy
    ({"rollout": {"maxSurge": 0, "maxUnavailable": 1}, "deploymentMode": "Standard"}, False),
])
def test_the_legacy_raw_deployment_name_is_refused_where_a_deployment_strategy_is_rendered(service, refused):
    """KServe v0.16.0's validator reads RawDeployment as Knative mode and refuses a deploymentStrategy
    (inference_service_validation.go validateAutoScalingCompExtension); Standard is the same mode, accepted."""
    raw = stack_raw("staging")
    svc = raw["inferenceTraining"]["inference"]["services"][0]
    svc.update({"deploymentMode": "RawDeployment", "minReplicas": 1, "maxReplicas": 1})
    svc.pop("rollout", None)
    svc.update(service)
    key = "kueue-cohorts:inferenceTraining.inference.services[0].deploymentMode"
    if not refused:
        assert key not in [p.key for p in _problems(raw)]
        return
    (problem,) = [p for p in _problems(raw) if p.key == key]
    assert problem.fix == ("write deploymentMode: Standard (the same mode under KServe >= 0.16's name), "
                           "or remove the key")


def _problems(raw: dict) -> list:
    try:
        load_settings(raw)
    except SettingsError as err:
        return list(err.problems)
    return []
