"""The guide's round trip with a real TrainJob: Kueue 0.19.2, Kubeflow Trainer v2.2.1 and JobSet v0.12.0 controllers.

A TrainJob of the dev stack's PreemptibleTrainingRuntime (as ``pulumi up`` applied it, so the Trainer's validating
webhook accepted it) is queued to the training LocalQueue. Kueue admits its Workload by borrowing the inference
quota; the Trainer creates the JobSet, the JobSet controller its Job, kube-controller-manager the Pod, the scheduler
binds it to the kwok GPU node. An inference Deployment (Kueue's deployment integration, labels on the pod template
only) needs the GPU: Kueue preempts the training Workload with reason InCohortReclamation, the TrainJob and its
JobSet are suspended and the training Pod is deleted; the inference Pod runs. Inference scaled to 0 gives the quota
back and the TrainJob is admitted again under the same name.

What the real controllers do that our guide said otherwise: nothing is re-created on re-admission but the Pods.
The Trainer keeps the JobSet it made (same name, same UID) and only flips its ``spec.suspend``; the JobSet
controller in turn suspends and resumes the same Job (same UID), whose Pods the Job controller deletes and creates
anew. The checkpoint directory is keyed by the JobSet's name (= the TrainJob's), so the run resumes from its own
checkpoints.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
from e2e_support import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    REPO,
    SLICE,
    TRAINER,
    admitted_in,
    borrowed,
    condition,
    delete_trainjob_and_deployment,
    is_true,
    wait_for,
)
from kubernetes import client as k8s

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.runtime import render_runtime, render_trainjob
from tests.docs_commands import section_commands

JOBSET = ("jobset.x-k8s.io", "v1alpha2")
TRAINING_NS, INFERENCE_NS = "c12-training", "c12-inference"
JOB_NAME = "finetune-tj"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _dev_runtime():
    settings = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
    return settings.training_runtime, settings.inference_training.training.checkpoint.claim_name


def _workload(cluster, namespace: str, uid: str) -> dict | None:
    items = cluster.custom.list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", namespace, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={uid}")["items"]
    return items[0] if items else None


def _trainjob(cluster) -> dict:
    return cluster.custom.get_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", JOB_NAME)


def _jobset(cluster) -> dict | None:
    try:
        return cluster.custom.get_namespaced_custom_object(*JOBSET, TRAINING_NS, "jobsets", JOB_NAME)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _training_pods(cluster) -> list:
    pods = cluster.core.list_namespaced_pod(TRAINING_NS, label_selector=f"{JOBSET_NAME_LABEL}={JOB_NAME}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _running(pods: list) -> list:
    return [p for p in pods if p.status.phase == "Running"]


def _jobs_of_jobset(cluster) -> list:
    return cluster.batch.list_namespaced_job(TRAINING_NS, label_selector=f"{JOBSET_NAME_LABEL}={JOB_NAME}").items


def _inference_deployment(replicas: int) -> k8s.V1Deployment:
    labels = {"app": "serve-tj", QUEUE_LABEL: "c12-inference-lq", PRIORITY_LABEL: "c12-inference-prio"}
    container = k8s.V1Container(
        name="predictor", image="registry.invalid/serve:never-pulled",
        resources=k8s.V1ResourceRequirements(requests=dict(SLICE), limits=dict(SLICE)))
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="serve-tj", namespace=INFERENCE_NS, labels={"app": "serve-tj"}),
        spec=k8s.V1DeploymentSpec(
            replicas=replicas, selector=k8s.V1LabelSelector(match_labels={"app": "serve-tj"}),
            # no surge: the stack's inference-rollout-fits-nominal guardrail refuses the default 25%
            strategy=k8s.V1DeploymentStrategy(type="RollingUpdate", rolling_update=k8s.V1RollingUpdateDeployment(
                max_surge=0, max_unavailable=1)),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[container], termination_grace_period_seconds=0))))


@pytest.fixture
def clean_trainjob(cluster, dev_stack):
    """Delete the test's TrainJob and Deployment afterwards; wait until their Workloads and Pods are gone."""
    yield
    delete_trainjob_and_deployment(cluster, JOB_NAME, TRAINING_NS, "serve-tj", INFERENCE_NS, 120)
    wait_for(lambda: not _training_pods(cluster) and _jobset(cluster) is None, 120,
             "the TrainJob's JobSet and Pods to be garbage-collected")


def test_a_trainjob_borrows_is_reclaimed_by_an_inference_deployment_and_comes_back(cluster, clean_trainjob):
    runtime, _ = _dev_runtime()
    manifest = render_trainjob(JOB_NAME, TRAINING_NS, runtime.name, "c12-training-lq", "c12-training-prio")
    created = cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", manifest)
    assert created["spec"]["suspend"] is True, "Kueue's TrainJob webhook suspends a queued TrainJob at creation"
    uid = created["metadata"]["uid"]

    wl = wait_for(lambda: (w := _workload(cluster, TRAINING_NS, uid)) and admitted_in(w) == "c12-training-cq" and w,
                  90, "the TrainJob's Workload to be admitted in c12-training-cq")
    assert wl["spec"]["priority"] == 10 and wl["spec"]["priorityClassRef"]["name"] == "c12-training-prio"
    assert [ps["name"] for ps in wl["spec"]["podSets"]] == ["node"], "one PodSet per replicated job of the runtime"
    wait_for(lambda: borrowed(cluster.cluster_queue("c12-training-cq"), "nvidia.com/gpualloc") == 1, 30,
             "c12-training-cq to report the borrowed GPU (training nominalQuota is 0)")

    # The Trainer builds the JobSet only once Kueue has unsuspended the TrainJob, with Kueue's admission injected
    # as a runtimePatches entry of manager kueue.x-k8s.io/manager.
    tj = wait_for(lambda: (t := _trainjob(cluster))["spec"].get("suspend") is False and t, 30,
                  "Kueue to unsuspend the admitted TrainJob")
    assert "kueue.x-k8s.io/manager" in [p.get("manager") for p in tj["spec"].get("runtimePatches", [])]
    jobset = wait_for(lambda: _jobset(cluster), 60, "the Trainer to create the JobSet")
    owner = next(o for o in jobset["metadata"]["ownerReferences"] if o.get("controller"))
    assert (owner["kind"], owner["uid"]) == ("TrainJob", uid)
    pods = wait_for(lambda: _running(_training_pods(cluster)), 90, "the training Pod to run on the kwok GPU node")
    assert [p.spec.node_name for p in pods] == ["gpu-0"]
    assert pods[0].metadata.labels["kueue.x-k8s.io/podset"] == "node"
    first_jobs = {j.metadata.uid for j in _jobs_of_jobset(cluster)}
    assert len(first_jobs) == 1
    first_pod = pods[0].metadata.uid

    apps = k8s.AppsV1Api(cluster.api)
    deployment = apps.create_namespaced_deployment(INFERENCE_NS, _inference_deployment(1))
    assert QUEUE_LABEL not in (deployment.metadata.labels or {}), "the queue-name is on the pod template only"

    preempted = wait_for(lambda: (w := _workload(cluster, TRAINING_NS, uid)) and is_true(w, "Preempted") and w,
                         90, "the training Workload to be preempted")
    assert condition(preempted, "Preempted")["reason"] == "InCohortReclamation"
    assert condition(preempted, "Evicted")["reason"] == "Preempted"
    wait_for(lambda: _trainjob(cluster)["spec"].get("suspend") is True, 60, "Kueue to suspend the TrainJob")
    wait_for(lambda: (_jobset(cluster) or {}).get("spec", {}).get("suspend") is True, 60,
             "the Trainer to suspend the JobSet")
    # kwok keeps the trainer's pods for their grace period (the dev runtime's 60 s), as a kubelet would
    wait_for(lambda: not _training_pods(cluster), runtime.grace_period_seconds + 60, "the training Pods to be gone")
    assert [(j.metadata.uid, j.spec.suspend) for j in _jobs_of_jobset(cluster)] == [(u, True) for u in first_jobs]

    def inference_running() -> list:
        pods = cluster.core.list_namespaced_pod(INFERENCE_NS, label_selector="app=serve-tj").items
        return [p for p in pods if p.status.phase == "Running" and not p.spec.scheduling_gates]

    running = wait_for(inference_running, runtime.grace_period_seconds + 90,
                       "the inference Pod to pass Kueue's scheduling gate and run")
    assert running[0].spec.node_name == "gpu-0"
    inference_wls = cluster.kueue_objects("workloads", INFERENCE_NS)
    assert [admitted_in(w) for w in inference_wls] == ["c12-inference-cq"]
    wait_for(lambda: borrowed(cluster.cluster_queue("c12-training-cq"), "nvidia.com/gpualloc") == 0, 30,
             "c12-training-cq to borrow nothing once inference runs")

    apps.patch_namespaced_deployment_scale("serve-tj", INFERENCE_NS, {"spec": {"replicas": 0}})
    back = wait_for(lambda: (w := _workload(cluster, TRAINING_NS, uid)) and admitted_in(w) == "c12-training-cq" and w,
                    120, "the TrainJob's Workload to be admitted again")
    assert back["metadata"]["uid"] == preempted["metadata"]["uid"], "same Workload, same TrainJob"
    tj = wait_for(lambda: (t := _trainjob(cluster))["spec"].get("suspend") is False and t, 60,
                  "Kueue to unsuspend the TrainJob again")
    assert tj["metadata"]["uid"] == uid
    pods = wait_for(lambda: _running(_training_pods(cluster)), 90, "the training Pod to run again")
    resumed = _jobset(cluster)
    assert resumed["metadata"]["uid"] == jobset["metadata"]["uid"], "the Trainer resumes its JobSet, makes no new one"
    assert resumed["spec"].get("suspend") is False
    assert {j.metadata.uid for j in _jobs_of_jobset(cluster)} == first_jobs, "the JobSet resumes the same Job"
    assert pods[0].metadata.uid != first_pod, "the Job controller made a new Pod"
    assert pods[0].metadata.labels[JOBSET_NAME_LABEL] == JOB_NAME, "the run name (checkpoint directory) is unchanged"


def _rejection(call) -> str:
    with pytest.raises(k8s.ApiException) as info:
        call()
    return info.value.body or ""


def test_the_trainers_webhooks_accept_our_runtime_and_trainjob_and_reject_what_they_should(cluster, dev_stack):
    runtime_settings, claim = _dev_runtime()
    runtime = render_runtime(runtime_settings, TRAINING_NS, claim)
    runtime["metadata"]["name"] = "webhook-probe"

    def create_runtime(body):
        return cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainingruntimes", body,
                                                              dry_run="All")

    assert create_runtime(runtime)["metadata"]["name"] == "webhook-probe"
    renamed = copy.deepcopy(runtime)
    renamed["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]["name"] = "trainer"
    body = _rejection(lambda: create_runtime(renamed))
    assert "validator.trainingruntime.trainer.kubeflow.org" in body, body
    assert "must contain the required container for the ancestor: trainer" in body, body

    def create_trainjob(body):
        return cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", body,
                                                              dry_run="All")

    ours = render_trainjob("webhook-probe", TRAINING_NS, runtime_settings.name, "c12-training-lq", "c12-training-prio")
    accepted = create_trainjob(ours)
    assert accepted["spec"]["suspend"] is True
    # A queued TrainJob of a missing runtime is refused by Kueue's TrainJob webhook and by the Trainer's validator:
    # validating webhooks run in parallel and the apiserver reports either.
    missing = render_trainjob("webhook-probe", TRAINING_NS, "no-such-runtime", "c12-training-lq", "c12-training-prio")
    body = _rejection(lambda: create_trainjob(missing))
    assert "vtrainjob.kb.io" in body or "validator.trainjob.trainer.kubeflow.org" in body, body
    assert "no-such-runtime" in body, body
    # torchrun's reserved variables (PET_NNODES, ... set by the Trainer's torch plugin) are refused twice over: by the
    # stack's trainjob-reserved-env guardrail (issue 38: it also reads runtimePatches, which the Trainer v2.2.1
    # webhook does not) and by the Trainer's validator; the apiserver reports whichever denies first.
    reserved = copy.deepcopy(ours)
    reserved["spec"]["trainer"] = {"env": [{"name": "PET_NNODES", "value": "2"}]}
    message = json.loads(_rejection(lambda: create_trainjob(reserved)))["message"]
    by_trainer = message.startswith('admission webhook "validator.trainjob.trainer.kubeflow.org" denied') and \
        "must not have reserved envs, invalid envs configured: [PET_NNODES]" in message
    by_guardrail = "ValidatingAdmissionPolicy 'kueue-cohorts.c12-shared.trainjob-reserved-env'" in message and \
        "at spec.trainer.env" in message and "PET_*" in message
    assert by_trainer or by_guardrail, message


def test_what_the_guides_assets_get_from_the_real_api(cluster, dev_stack):
    """Two details of the guide's published assets, checked against the real API (Trainer v2.2.1 schema, Kueue's
    TrainJob webhook): ``mlPolicy.torch.numProcPerNode: auto`` is no longer a field (v2.2 moved it to the TrainJob's
    ``spec.trainer.numProcPerNode``), and its TrainJob's explicit ``suspend: false`` is overridden by Kueue."""
    runtime_settings, claim = _dev_runtime()
    runtime = render_runtime(runtime_settings, TRAINING_NS, claim)
    runtime["metadata"]["name"] = "guide-probe"
    runtime["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": "auto"}
    with pytest.raises(k8s.ApiException) as info:
        cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainingruntimes", runtime,
                                                       dry_run="All", field_validation="Strict")
    message = json.loads(info.value.body)["message"]
    assert 'strict decoding error: unknown field "spec.mlPolicy.torch.numProcPerNode"' in message, message

    guide_job = render_trainjob("guide-probe", TRAINING_NS, runtime_settings.name, "c12-training-lq",
                                "c12-training-prio", num_nodes=1)
    guide_job["spec"]["suspend"] = False
    stored = cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", guide_job,
                                                            dry_run="All")
    assert stored["spec"]["suspend"] is True, "Kueue suspends a queued TrainJob whatever the manifest says"


ROUND_TRIP_FILES = ("examples/round-trip/inference.yaml", "examples/round-trip/trainjob.yaml")


@pytest.fixture
def docs_shell(cluster, dev_stack, tmp_path):
    """The environment a reader of the docs has after `make up`: `kueue-cohorts` (the project's console script) and
    `kubectl` (the toolchain's) on the PATH, the session's sandbox in $KUEUE_COHORTS_SANDBOX_DIR. Afterwards the
    round trip's objects are deleted and their Workloads waited out, whatever the test did."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    kubectl = toolchain.binary("kubectl")
    (bin_ / "kubectl").symlink_to(kubectl)
    env = dict(os.environ, PATH=os.pathsep.join((str(bin_), str(os.path.dirname(sys.executable)), os.environ["PATH"])))
    yield env
    subprocess.run([str(kubectl), "--kubeconfig", os.path.join(env["KUEUE_COHORTS_SANDBOX_DIR"], "kubeconfig"),
                    "delete", "--ignore-not-found", "--wait=false", *[f"-f={f}" for f in ROUND_TRIP_FILES]],
                   cwd=REPO, capture_output=True, timeout=120)
    for ns in (TRAINING_NS, INFERENCE_NS):
        wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), 120, f"Workloads in {ns} to be gone")


def test_the_round_trip_of_the_docs_runs_as_written(docs_shell):
    """Issue 39 item 3: docs/operations.md "Round trip", every line after `make up` (the session's sandbox and its
    `pulumi up` of the dev stack are that step) run in one shell, as written, in the checkout: the TrainJob borrows,
    the inference Deployment takes its GPU back (the `kubectl wait` lines are the assertions), training resumes."""
    steps = section_commands(REPO / "docs" / "operations.md", "## Round trip")
    assert steps[0].text == "make up" and len(steps) >= 10
    script = "set -euo pipefail\n" + "\n".join(step.text for step in steps[1:]) + "\n"
    proc = subprocess.run(["bash", "-c", script], cwd=REPO, env=docs_shell, capture_output=True, text=True,
                          timeout=800)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert "InCohortReclamation" in proc.stdout and "trainjob.trainer.kubeflow.org/finetune condition met" in \
        proc.stdout, proc.stdout[-4000:]
