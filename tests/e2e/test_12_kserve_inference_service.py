"""Issue 26 promise 3: the stack's InferenceService is run by KServe's real controller, end to end.

On the session sandbox (KServe's manager from the pinned module in RawDeployment mode, its webhooks and
ClusterServingRuntimes; :mod:`sandbox.kserve`) and the dev stack, the InferenceService our component renders for a
declared service (``inferenceTraining.inference.services``: one replica holding the dev stack's whole inference GPU
quota) is created while a training Job borrows that quota. First, the pinned KServe's validating webhook refuses
that InferenceService as the settings' default ``deploymentMode: RawDeployment`` renders it (the legacy name is
judged as Knative, where a deploymentStrategy is refused); with ``deploymentMode: Standard`` (KServe >= 0.16's name
for the same mode) it is accepted. Then, with nothing built by hand:

1. KServe's controller makes the predictor Deployment (owned by the InferenceService), carrying the Kueue queue and
   priority labels and the deploymentStrategy the component chose (maxSurge 0: one replica holds the quota);
2. Kueue admits its pod in the inference ClusterQueue and evicts the borrowing training Job (InCohortReclamation);
   the kwok node runs the pod, the Deployment becomes available and KServe reports the predictor ready;
3. an update of the InferenceService (a new model URI) is rolled out by the controller into the Deployment and
   finishes on the same quota;
4. deleting the InferenceService removes the Deployment and gives the training Job its quota back.
Every wait is bounded and polls objects written by the real KServe, Kueue and kube-controller-manager.
"""
from __future__ import annotations

import copy

import pytest
from e2e_support import PRIORITY_LABEL, QUEUE_LABEL, SLICE, admitted_in, condition, is_true, wait_for
from kubernetes import client as k8s

from kueue_cohorts.components.model.services import inference_service_manifest
from kueue_cohorts.components.settings import InferenceServiceSettings
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import SAFE_STRATEGY

NAMESPACE = "c12-inference"
NAME = "tiny-llm"
PREDICTOR = f"{NAME}-predictor"
ISVC = ("serving.kserve.io", "v1beta1", NAMESPACE, "inferenceservices")
#: KServe puts the model URI on the predictor's pod template (kserve v0.16.0 pkg/constants/constants.go:
#: StorageInitializerSourceUriInternalAnnotationKey).
SOURCE_URI = "internal.serving.kserve.io/storage-initializer-sourceuri"
#: The dev stack's inference nominalQuota (stacks/Pulumi.dev.yaml).
DEV_NOMINAL = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
               "nvidia.com/gpumem": "2048"}


def _manifest(deployment_mode: str) -> dict:
    """The InferenceService the stack's component registers for a service declared on the dev stack with
    ``deploymentMode`` ``deployment_mode``."""
    service = InferenceServiceSettings.model_validate({
        "name": NAME, "modelFormat": "huggingface", "storageUri": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "requests": dict(SLICE), "limits": dict(SLICE), "minReplicas": 1, "maxReplicas": 1,
        "deploymentMode": deployment_mode})
    return inference_service_manifest(service, NAMESPACE, "c12-inference-lq", "c12-inference-prio", DEV_NOMINAL)


@pytest.fixture
def apps(cluster) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(cluster.api)


def _isvc(cluster) -> dict | None:
    try:
        return cluster.custom.get_namespaced_custom_object(*ISVC[:3], ISVC[3], NAME)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _deployment(apps) -> k8s.V1Deployment | None:
    try:
        return apps.read_namespaced_deployment(PREDICTOR, NAMESPACE)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _pods(cluster) -> list[k8s.V1Pod]:
    return [p for p in cluster.core.list_namespaced_pod(
        NAMESPACE, label_selector=f"serving.kserve.io/inferenceservice={NAME}").items
        if p.metadata.deletion_timestamp is None]


@pytest.fixture
def inference_service(cluster, apps, clean_dev_jobs):
    """Deletes the InferenceService after the test and waits until KServe's finalizer, its Deployment and pods
    are gone."""
    yield
    try:
        cluster.custom.delete_namespaced_custom_object(*ISVC[:3], ISVC[3], NAME)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise
    wait_for(lambda: _isvc(cluster) is None and _deployment(apps) is None and not _pods(cluster), 120,
             "the InferenceService, its Deployment and pods to be gone")


def _ready(pod: k8s.V1Pod) -> bool:
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True"
                                                 for c in pod.status.conditions or [])


def _pod_workload(cluster, pod: k8s.V1Pod) -> dict | None:
    for wl in cluster.kueue_objects("workloads", NAMESPACE):
        if any(o.get("uid") == pod.metadata.uid for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def _rolled_out(apps, cluster, uri: str) -> k8s.V1Deployment | None:
    """The predictor Deployment's rollout to model ``uri`` is complete: observed, its one replica updated and
    available, only pods of that template left, each Running and Ready. Returns the Deployment or None."""
    d = _deployment(apps)
    if d is None or (d.status.observed_generation or 0) < d.metadata.generation:
        return None
    s = d.status
    if (s.updated_replicas, s.replicas, s.available_replicas, s.unavailable_replicas or 0) != (1, 1, 1, 0):
        return None
    if (d.spec.template.metadata.annotations or {}).get(SOURCE_URI) != uri:
        return None
    pods = _pods(cluster)
    uris = [(p.metadata.annotations or {}).get(SOURCE_URI) for p in pods]
    return d if uris == [uri] and all(_ready(p) for p in pods) else None


def test_the_stacks_inference_service_becomes_the_deployment_kueue_admits_reclaims_for_and_rolls_out(
        cluster, apps, inference_service):
    # KServe v0.16.0's validating webhook knows the legacy mode name only in its controller
    # (controller/v1beta1/inferenceservice/utils GetDeploymentMode maps RawDeployment to Standard), not in
    # apis/serving/v1beta1/inference_service_validation.go validateAutoScalingCompExtension, which judges an
    # InferenceService annotated RawDeployment as a Knative one: its deploymentStrategy is refused.
    legacy = _manifest("RawDeployment")
    assert legacy["spec"]["predictor"]["deploymentStrategy"] == SAFE_STRATEGY, \
        "one replica holds the whole quota: the component asks for maxSurge 0"
    with pytest.raises(k8s.ApiException) as refused:
        cluster.custom.create_namespaced_custom_object(*ISVC[:3], ISVC[3], legacy, dry_run="All")
    assert refused.value.status == 403
    assert "customizing deploymentStrategy is only supported for raw deployment mode" in refused.value.body

    manifest = _manifest("Standard")
    assert manifest["metadata"]["annotations"] == {"serving.kserve.io/deploymentMode": "Standard"}
    assert manifest["spec"]["predictor"]["deploymentStrategy"] == SAFE_STRATEGY

    # Training borrows the idle inference quota first.
    training = cluster.submit_job("c12-training", "finetune", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(training)) == "c12-training-cq", 90,
             "the training Workload to be admitted (borrowing the inference quota)")

    # 1. Only the InferenceService is created; KServe's controller makes the predictor Deployment.
    cluster.custom.create_namespaced_custom_object(*ISVC[:3], ISVC[3], manifest)
    stored = _isvc(cluster)
    # KServe's defaulter (failurePolicy Fail) adds only the empty container name (corev1.Container.Name has no
    # omitempty); nothing else, no resource defaults: `model` is not defaulted (predictor_model.go Default).
    expected = copy.deepcopy(manifest["spec"])
    expected["predictor"]["model"]["name"] = ""
    assert stored["spec"] == expected, f"KServe's defaulter changed the spec: {stored['spec']}"
    deployment = wait_for(lambda: _deployment(apps), 90, "KServe's controller to create the predictor Deployment")
    [owner] = deployment.metadata.owner_references
    assert (owner.kind, owner.name, owner.controller) == ("InferenceService", NAME, True)
    for labels in (deployment.metadata.labels, deployment.spec.template.metadata.labels):
        assert labels[QUEUE_LABEL] == "c12-inference-lq" and labels[PRIORITY_LABEL] == "c12-inference-prio"
    rolling = deployment.spec.strategy.rolling_update
    assert (rolling.max_surge, rolling.max_unavailable) == (0, 1), "the InferenceService's deploymentStrategy"
    [container] = deployment.spec.template.spec.containers
    assert container.name == "kserve-container"
    assert {k: str(v) for k, v in container.resources.requests.items()} == SLICE

    # 2. Kueue admits the predictor pod in the inference ClusterQueue and reclaims the borrowed quota.
    preempted = wait_for(lambda: (w := cluster.workload_of(training)) and is_true(w, "Preempted") and w, 90,
                         "the borrowing training Workload to be preempted by the predictor pod")
    assert condition(preempted, "Preempted")["reason"] == "InCohortReclamation"
    first_uri = manifest["spec"]["predictor"]["model"]["storageUri"]
    wait_for(lambda: _rolled_out(apps, cluster, first_uri), 120, "the predictor replica to run")
    [pod] = _pods(cluster)
    workload = _pod_workload(cluster, pod)
    assert admitted_in(workload) == "c12-inference-cq"
    assert workload["spec"]["priorityClassRef"]["name"] == "c12-inference-prio"
    assert not admitted_in(cluster.workload_of(training)), "the predictor holds the whole quota"
    ready = wait_for(lambda: (i := _isvc(cluster)) and is_true(i, "PredictorReady") and i, 90,
                     "KServe to report the predictor ready")
    assert ready["status"]["deploymentMode"] == "Standard"
    assert ready["status"]["clusterServingRuntimeName"] == "kserve-huggingfaceserver", "picked by model format"

    # 3. An update of the InferenceService is rolled out by the controller, on the same quota.
    new_uri = "hf://Qwen/Qwen2.5-1.5B-Instruct"
    cluster.custom.patch_namespaced_custom_object(*ISVC[:3], ISVC[3], NAME, {
        "spec": {"predictor": {"model": {"storageUri": new_uri}}}})
    wait_for(lambda: _rolled_out(apps, cluster, new_uri), 180, "the controller's rollout of the new model to finish")
    [pod] = _pods(cluster)
    assert admitted_in(_pod_workload(cluster, pod)) == "c12-inference-cq"
    assert not admitted_in(cluster.workload_of(training)), "after the rollout inference holds its quota again"

    # 4. The InferenceService deleted: its Deployment goes, training gets the quota back (same Workload).
    cluster.custom.delete_namespaced_custom_object(*ISVC[:3], ISVC[3], NAME)
    wait_for(lambda: _isvc(cluster) is None and _deployment(apps) is None, 90,
             "KServe's finalizer and the garbage collector to remove the InferenceService and its Deployment")
    back = wait_for(lambda: (w := cluster.workload_of(training)) and admitted_in(w) == "c12-training-cq" and w, 120,
                    "the training Workload to be admitted again")
    assert back["metadata"]["uid"] == preempted["metadata"]["uid"]
