"""Kueue installed by the stack (KueueInstallation, chart from the pinned Go module) and inference services, on a
sandbox of its own.

The module starts a dedicated sandbox (same entry point as ``python -m kueue_cohorts.sandbox up``) and deletes Kueue's
CRDs from
it, so that its apiserver serves no ``kueue.x-k8s.io`` group while the sandbox's out-of-cluster Kueue manager keeps
running. Then, in order:

1. a stack with ``kueue.install: false`` fails before creating anything, with the preflight's version message;
2. a dev-like stack with ``kueue.install: true`` takes the chart's CRDs, RBAC and webhooks (pointed at the
   sandbox's manager, the chart's Deployment scaled to 0), the whole c12 cohort and an InferenceService in ONE
   ``pulumi up``; the ClusterQueues become Active and a Job goes through the chart's webhooks to admission;
3. the InferenceService our component rendered was stored by the KServe CRD's schema without pruning a field;
4. KServe's controller (run by the sandbox) makes that InferenceService into its predictor Deployment, whose pod
   Kueue admits in the inference ClusterQueue (reclaim through it: test_12_kserve_inference_service.py).

The sandbox of the session (conftest.py) is not touched; this module's sandbox is stopped when the module ends.
"""

from __future__ import annotations

import base64

import pytest
import yaml
from e2e_support import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    REPO,
    SLICE,
    Cluster,
    admitted_in,
    is_true,
    sandbox_in,
    start_sandbox,
    wait_for,
)
from kubernetes import client as k8s
from kubernetes import config as kconfig
from pulumi import automation as auto

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.services import inference_service_manifest
from kueue_cohorts.deploy.scratch import Project
from kueue_cohorts.sandbox.endpoints import kueue_webhook_endpoint

KUEUE_GROUP = "kueue.x-k8s.io"
STACK = "kueue-install"
#: A small model served from the inference LocalQueue; one replica takes the dev node's whole GPU slice.
#: deploymentMode Standard: the sandbox runs KServe v0.16.0's webhooks, whose validator refuses the legacy
#: RawDeployment annotation together with a deploymentStrategy (test_12_kserve_inference_service.py).
SERVICE = {"name": "tiny-llm", "modelFormat": "huggingface", "storageUri": "hf://Qwen/Qwen2.5-0.5B-Instruct",
           "requests": dict(SLICE), "limits": dict(SLICE), "minReplicas": 1, "maxReplicas": 1,
           "deploymentMode": "Standard"}


def _stack_config(install: bool) -> dict:
    """The dev stack's config with ``kueue`` set (chart from the Go module when installed) and one service."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    config = doc["config"]
    config["kueue-cohorts:kueue"] = {"install": install, "chartSource": "GoModule"}
    config["kueue-cohorts:inferenceTraining"]["inference"]["services"] = [dict(SERVICE)]
    return doc


def _serves_kueue(api: k8s.ApiClient) -> bool:
    """Return True when the apiserver's discovery (/apis) lists the kueue.x-k8s.io group."""
    return any(g.name == KUEUE_GROUP for g in k8s.ApisApi(api).get_api_versions().groups)


@pytest.fixture(scope="module")
def bare_sandbox(tmp_path_factory):
    """A sandbox of this module whose apiserver serves no Kueue API (its Kueue CRDs deleted); yields
    (Sandbox, Cluster). Fails when it cannot start; stopped at the end of the module, the environment restored."""
    with sandbox_in(tmp_path_factory.mktemp("sandbox-kueue-install")) as box:
        start_sandbox(box)
        cluster = Cluster(kconfig.new_client_from_config(config_file=str(box.paths.kubeconfig)))
        ext = k8s.ApiextensionsV1Api(cluster.api)
        for crd in ext.list_custom_resource_definition().items:
            if crd.spec.group == KUEUE_GROUP:
                ext.delete_custom_resource_definition(crd.metadata.name)
        # Measured: about 250 s on 2 loaded cores (probably: the apiserver finishes deleting a CRD only after its
        # in-flight requests, the running Kueue manager's watches, drain; not verified). 600 s keeps it inside the
        # per-test timeout.
        wait_for(lambda: not _serves_kueue(cluster.api), 600, "the apiserver to stop serving kueue.x-k8s.io")
        yield box, cluster


@pytest.fixture(scope="module")
def install_project(tmp_path_factory) -> Project:
    """A temporary project copy for this module's stacks."""
    return Project(tmp_path_factory.mktemp("project-kueue-install"))


def test_without_installation_a_cluster_without_kueue_fails_with_the_version_message(bare_sandbox, install_project):
    _, cluster = bare_sandbox
    install_project.add_stack("no-install", _stack_config(install=False))
    with pytest.raises(auto.CommandError) as failed:
        install_project.run("no-install", "preview")
    text = str(failed.value)
    assert "The cluster does not serve kueue.x-k8s.io/v1beta2 (it has no Kueue API)" in text, text
    assert "Install Kueue 0.16 or newer" in text and "this project pins 0.19.2" in text, text
    assert "kueue-cohorts:kueue.install: true" in text, text
    assert not _serves_kueue(cluster.api)
    assert not cluster.core.list_namespace(field_selector="metadata.name=c12-inference").items, \
        "nothing may be created when the preflight fails"


@pytest.fixture(scope="module")
def installed(bare_sandbox, install_project):
    """The dev-like stack with kueue.install true applied by ONE ``pulumi up`` on the Kueue-less sandbox:
    (Sandbox, Cluster, up result)."""
    box, cluster = bare_sandbox
    install_project.add_stack(STACK, _stack_config(install=True))
    result = install_project.run(STACK, "up")
    return box, cluster, result


def test_one_up_installs_the_chart_crds_and_the_whole_cohort(installed):
    box, cluster, result = installed
    assert result.summary.result == "succeeded", result.stdout
    assert result.summary.resource_changes.get("create", 0) > 0
    assert set(result.summary.resource_changes) <= {"create"}, result.summary.resource_changes
    assert _serves_kueue(cluster.api)

    # The chart's CRDs (Helm labels), their conversion webhook and the chart's webhook configurations point at the
    # sandbox's out-of-cluster manager; the chart's own manager Deployment runs no Pod.
    url, ca = kueue_webhook_endpoint()
    ext = k8s.ApiextensionsV1Api(cluster.api)
    crd = ext.read_custom_resource_definition("clusterqueues.kueue.x-k8s.io")
    assert crd.metadata.labels.get("helm.sh/chart") == "kueue-0.19.2", crd.metadata.labels
    conversion = ext.read_custom_resource_definition("workloads.kueue.x-k8s.io").spec.conversion
    assert conversion.webhook.client_config.url == f"{url}/convert"
    assert base64.b64decode(conversion.webhook.client_config.ca_bundle) == ca
    admission = k8s.AdmissionregistrationV1Api(cluster.api)
    mutating = admission.read_mutating_webhook_configuration("kueue-mutating-webhook-configuration")
    assert mutating.metadata.labels.get("helm.sh/chart") == "kueue-0.19.2", "the chart took the sandbox's over"
    assert {h.client_config.url.split("/", 3)[2] for h in mutating.webhooks} == {url.split("/", 3)[2]}
    assert all(h.client_config.service is None for h in mutating.webhooks)
    names = [c.metadata.name for c in admission.list_mutating_webhook_configuration().items]
    assert [n for n in names if n.startswith("kueue")] == ["kueue-mutating-webhook-configuration"], \
        f"one set of Kueue webhooks, not the sandbox's plus the chart's: {names}"
    manager = k8s.AppsV1Api(cluster.api).read_namespaced_deployment("kueue-controller-manager", "kueue-system")
    assert manager.spec.replicas == 0

    # The chart's manager Configuration is the one our settings make (same object as the render test checks).
    cm = cluster.core.read_namespaced_config_map("kueue-manager-config", "kueue-system")
    rendered = yaml.safe_load(cm.data["controller_manager_config.yaml"])
    assert rendered["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 5
    assert rendered["manageJobsWithoutQueueName"] is False

    for name in ("c12-inference-cq", "c12-training-cq"):
        cq = wait_for(lambda n=name: (q := cluster.cluster_queue(n)) and is_true(q, "Active") and q, 90,
                      f"ClusterQueue {name} to be Active")
        assert cq["spec"]["cohortName"] == "c12-shared"

    # Jobs still go through Kueue's webhooks (now the chart's configurations) and are admitted by the manager.
    # No GPU: KServe's controller runs the stack's InferenceService, whose predictor holds the whole GPU slice.
    job = cluster.submit_job("c12-training", "webhook-probe", "c12-training-lq", {"cpu": "1", "memory": "1Gi"},
                             priority_class="c12-training-prio")
    try:
        assert job.spec.suspend is True, "Kueue's mutating webhook (the chart's configuration) suspends the Job"
        wait_for(lambda: admitted_in(cluster.workload_of(job)) == "c12-training-cq", 90,
                 "the Job's Workload to be admitted in c12-training-cq")
    finally:
        cluster.delete_job(job)
        wait_for(lambda: not cluster.kueue_objects("workloads", "c12-training"), 60, "the probe's Workload to go")


def test_the_inference_service_is_stored_by_the_kserve_schema_as_rendered(installed):
    _, cluster, _ = installed
    settings = load_settings({k.split(":", 1)[1]: v for k, v in _stack_config(True)["config"].items()})
    inference = settings.inference_training.inference
    expected = inference_service_manifest(inference.services[0], "c12-inference", "c12-inference-lq",
                                          "c12-inference-prio", inference.nominal_quota)
    # one replica holds the whole quota: the update strategy that fits it (stored, not pruned, by the schema)
    assert expected["spec"]["predictor"]["deploymentStrategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    stored = cluster.custom.get_namespaced_custom_object("serving.kserve.io", "v1beta1", "c12-inference",
                                                         "inferenceservices", "tiny-llm")
    for key, value in expected["metadata"]["labels"].items():
        assert stored["metadata"]["labels"][key] == value
    assert stored["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "Standard"
    # A structural schema prunes unknown fields silently: every field we rendered must still be there (KServe's
    # defaulter adds only the empty container name of `model`).
    assert {**stored["spec"]["predictor"], "model": {k: v for k, v in stored["spec"]["predictor"]["model"].items()
                                                     if k != "name"}} == expected["spec"]["predictor"], \
        {"stored": stored["spec"], "rendered": expected["spec"]}
    assert set(stored["spec"]) == {"predictor"} and stored["spec"]["predictor"]["model"].get("name", "") == ""
    assert stored["spec"]["predictor"]["labels"] == {QUEUE_LABEL: "c12-inference-lq",
                                                     PRIORITY_LABEL: "c12-inference-prio"}

    # And a wrongly typed field is refused (server-side dry-run).
    bad = {**expected, "spec": {"predictor": {**expected["spec"]["predictor"], "minReplicas": "one"}}}
    with pytest.raises(k8s.ApiException) as refused:
        cluster.custom.create_namespaced_custom_object("serving.kserve.io", "v1beta1", "c12-inference",
                                                       "inferenceservices", {**bad, "metadata": {
                                                           **bad["metadata"], "name": "tiny-llm-bad"}},
                                                       dry_run="All")
    # KServe's mutating webhook sees the object before the schema's validation and cannot decode it: 400
    assert refused.value.status == 400 and "minReplicas" in refused.value.body, refused.value.body


def test_the_controller_runs_the_inference_service_as_a_deployment_kueue_admits(installed):
    """KServe's controller (sandbox.kserve) made the up's InferenceService into its predictor Deployment; Kueue
    admitted the predictor's pod in the inference ClusterQueue with the inference priority. (Reclaim from borrowing
    training through that Deployment: tests/e2e/test_12_kserve_inference_service.py, on the session sandbox.)"""
    _, cluster, _ = installed
    apps = k8s.AppsV1Api(cluster.api)
    deployment = wait_for(lambda: _predictor(apps), 120, "KServe's controller to create the predictor Deployment")
    assert [(o.kind, o.name) for o in deployment.metadata.owner_references] == [("InferenceService", "tiny-llm")]
    assert deployment.spec.template.metadata.labels[QUEUE_LABEL] == "c12-inference-lq"

    def admitted_predictor_pods() -> list[dict]:
        return [w for w in cluster.kueue_objects("workloads", "c12-inference")
                if admitted_in(w) == "c12-inference-cq"
                and any(o["kind"] == "Pod" and o["name"].startswith("tiny-llm-predictor-")
                        for o in w["metadata"].get("ownerReferences") or [])]

    admitted = wait_for(admitted_predictor_pods, 120, "the predictor Pod's Workload to be admitted")
    assert admitted[0]["spec"]["priority"] == 1000
    assert admitted[0]["spec"]["priorityClassRef"]["name"] == "c12-inference-prio"


def _predictor(apps: k8s.AppsV1Api) -> k8s.V1Deployment | None:
    try:
        return apps.read_namespaced_deployment("tiny-llm-predictor", "c12-inference")
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise
